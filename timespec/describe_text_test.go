package timespec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// The description comes in parts with the zone apart: the API's sentence
// names the zone after each cron part, a view can name it once.
func TestSpecTextPartsAndZone(t *testing.T) {
	t.Parallel()
	c, err := timespec.Compile(models.Spec{CronExpressions: []string{"30 2 * * *"}, Intervals: []models.Interval{{Every: "PT15M"}}, Timezone: "America/New_York"})
	require.NoError(t, err)
	text := c.Text()
	require.Equal(t, "America/New_York", text.Zone)
	require.Len(t, text.Parts, 2)
	require.True(t, text.Parts[0].Zoned)
	require.False(t, text.Parts[1].Zoned, "an interval is not in a zone")
	require.Equal(t, c.Description(), text.String())
	require.Equal(t, text.Parts[0].Text+" (America/New_York); "+text.Parts[1].Text, text.String())
	require.Equal(t, text.Parts[0].Text+"; "+text.Parts[1].Text, text.Sentence())

	utc, err := timespec.Compile(models.Spec{CronExpressions: []string{"@daily"}})
	require.NoError(t, err)
	require.Equal(t, "UTC", utc.Text().Zone, "no zone is UTC")
}
