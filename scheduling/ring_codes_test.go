package scheduling

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

// Every outcome and skip reason the fire path records has a stored code,
// so a fire's ring row is compact.
func TestEveryRecordedOutcomeHasACode(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{
		{kindScheduled, ""}, {kindManual, ""}, {kindDrained, ""}, {kindBackfill, ""}, {OutcomeBuffered, ""},
		{OutcomeSkipped, SkipOverlap}, {OutcomeSkipped, SkipBufferFull},
		{OutcomeSkipped, SkipNotTriggeable}, {OutcomeSkipped, SkipExhausted},
		{OutcomeSkipped, SkipAlreadyStart},
	} {
		_, ok := models.RecentActionCode(pair[0], pair[1])
		require.True(t, ok, "%s %s", pair[0], pair[1])
	}
}
