package scheduling

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

func TestPreviewSpecCapsCount(t *testing.T) {
	t.Parallel()
	spec := models.Spec{CronExpressions: []string{"* * * * *"}}
	p, err := PreviewSpec(spec, time.Unix(0, 0), MaxPreviewCount)
	require.NoError(t, err)
	require.Len(t, p.FireTimes, 100)
	for _, n := range []int{0, -1, 101, 1 << 30} {
		_, err := PreviewSpec(spec, time.Unix(0, 0), n)
		var verr *ValidationError
		require.ErrorAs(t, err, &verr, "count %d", n)
		require.Equal(t, "must be between 1 and 100", verr.Fields["count"])
	}
}
