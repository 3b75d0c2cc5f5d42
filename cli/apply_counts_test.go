package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// An apply creates, a pause pauses and a prune deletes schedules; the
// status counts the triggers keep (migration 0025) follow each, in both
// modes on both databases, as a scan of the schedules says.
func TestApplyKeepsTheStatusCounts(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		db := d.db(t)
		check := func(step string, active, paused int64) {
			t.Helper()
			want, err := schedtest.ScanCounts(context.Background(), db, "default")
			require.NoError(t, err)
			require.Equal(t, [2]int64{active, paused}, [2]int64{want.Active, want.Paused}, "%s: the scan", step)
			got, err := models.CountSchedules(context.Background(), db, "default")
			require.NoError(t, err)
			require.Equal(t, want, got, "%s: maintained counts (got) against the scan (want)", step)
		}
		d.run(t, "schedule", "apply", "-f", writeFile(t, "schedules.yaml", applyFile))
		check("applied two", 2, 0)
		d.run(t, "schedule", "pause", "hourly")
		check("paused hourly", 1, 1)
		onlyNightly := applyFile[:strings.Index(applyFile, "- schedule_id: hourly")]
		d.run(t, "schedule", "apply", "-f", writeFile(t, "nightly.yaml", onlyNightly), "--prune")
		check("pruned hourly", 1, 0)
	})
}
