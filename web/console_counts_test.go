package web_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// The registry's all, paused and active chips come from the counts the
// triggers keep (migration 0025): after API creates, console bulk pauses
// and resumes, and a delete, they show what a scan of the schedules says.
func TestConsoleRegistryChipsFollowBulkActions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		check := func(step string, all, paused, active int) {
			t.Helper()
			want, err := schedtest.ScanCounts(context.Background(), db, "default")
			require.NoError(t, err)
			require.Equal(t, [3]int64{int64(all), int64(paused), int64(active)}, [3]int64{want.All, want.Paused, want.Active}, "%s: the scan", step)
			counts, _ := chipCounts(t, c.page200("/waterline/schedules"))
			require.Equal(t, [3]string{strconv.Itoa(all), strconv.Itoa(paused), strconv.Itoa(active)},
				[3]string{counts["all"], counts["paused"], counts["active"]}, "%s: the chips", step)
		}
		for _, id := range []string{"a", "b", "c", "d"} {
			c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"`+id+`","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		}
		check("created", 4, 0, 4)
		seeOther(t, c.post("/waterline/schedules/bulk", url.Values{"ids": {"a", "b", "c"}, "action": {"pause"}}))
		check("bulk pause", 4, 3, 1)
		seeOther(t, c.post("/waterline/schedules/bulk", url.Values{"ids": {"a", "b", "d"}, "action": {"resume"}}))
		check("bulk resume (d was active)", 4, 1, 3)
		c.api.must(200, "DELETE", v2+"/schedules/c", "")
		c.api.must(200, "DELETE", v2+"/schedules/a", "")
		check("deleted a paused and an active one", 2, 0, 2)
	})
}
