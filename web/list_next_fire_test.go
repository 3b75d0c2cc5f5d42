package web_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// sort=next_fire: soonest first, ties by ID, schedules that never fire
// (paused) last; the keyset cursor walks it one row a page without a
// repeat or a gap, on both databases.
func TestAPISortByNextFire(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		const v2 = "/waterline/api/v2"
		for _, s := range []struct{ id, cron, extra string }{
			{"yearly", "0 0 1 1 *", ""}, {"hourly-b", "0 * * * *", ""}, {"hourly-a", "0 * * * *", ""},
			{"paused", "0 * * * *", `,"paused":true`}, {"daily", "0 0 * * *", ""}, {"also-paused", "0 0 1 1 *", `,"paused":true`},
		} {
			f.must(201, "POST", v2+"/schedules", `{"schedule_id":"`+s.id+`","cron":"`+s.cron+`","action":{"workflow_type":"w"}`+s.extra+`}`)
		}
		var ids []string
		cursor := ""
		for range 10 {
			page := f.must(200, "GET", v2+"/schedules?sort=next_fire&limit=1&cursor="+cursor, "")
			for _, s := range page["schedules"].([]any) {
				ids = append(ids, s.(map[string]any)["schedule_id"].(string))
			}
			if page["next_cursor"] == nil {
				break
			}
			cursor = page["next_cursor"].(string)
		}
		require.Equal(t, []string{"hourly-a", "hourly-b", "daily", "yearly", "also-paused", "paused"}, ids)

		whole := f.must(200, "GET", v2+"/schedules?sort=next_fire", "")
		require.Len(t, whole["schedules"], 6)
		require.Nil(t, whole["next_cursor"])
		for _, q := range []string{"sort=next_fire&cursor=YQ", "sort=soon"} {
			res := f.do("GET", v2+"/schedules?"+q, "")
			require.Equal(t, 422, res.Status, "%s: %s", q, res.Raw)
		}
	})
}
