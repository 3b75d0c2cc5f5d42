package web_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
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

// The namespaces that hold live schedules, read from their status counts,
// are bounded by the limit on both databases; a namespace whose schedules
// were all deleted drops out; and NamespacesHolding finds an ID only in
// the namespaces it is given, deleted schedules included.
func TestNamespacesListedFromTheirCounts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		for _, ns := range []string{"ns-c", "ns-a", "ns-b", "ns-e", "ns-d"} {
			for _, id := range []string{"x", "y-" + ns} {
				f.must(201, "POST", "/waterline/api/v2/schedules", `{"schedule_id":"`+id+`","cron":"0 * * * *","action":{"workflow_type":"w"}}`, "X-Namespace", ns)
			}
		}
		f.must(200, "POST", "/waterline/api/v2/schedules/x/pause", `{}`, "X-Namespace", "ns-b")
		all, err := models.ListNamespaces(context.Background(), db, 100)
		require.NoError(t, err)
		require.Equal(t, []string{"ns-a", "ns-b", "ns-c", "ns-d", "ns-e"}, all)
		first, err := models.ListNamespaces(context.Background(), db, 3)
		require.NoError(t, err)
		require.Equal(t, []string{"ns-a", "ns-b", "ns-c"}, first)

		f.must(200, "DELETE", "/waterline/api/v2/schedules/x", "", "X-Namespace", "ns-c")
		f.must(200, "DELETE", "/waterline/api/v2/schedules/y-ns-c", "", "X-Namespace", "ns-c")
		f.must(200, "DELETE", "/waterline/api/v2/schedules/x", "", "X-Namespace", "ns-d")
		all, err = models.ListNamespaces(context.Background(), db, 100)
		require.NoError(t, err)
		require.Equal(t, []string{"ns-a", "ns-b", "ns-d", "ns-e"}, all)
		first, err = models.ListNamespaces(context.Background(), db, 3)
		require.NoError(t, err)
		require.Equal(t, []string{"ns-a", "ns-b", "ns-d"}, first)

		holding, err := models.NamespacesHolding(context.Background(), db, "x", []string{"ns-e", "ns-b", "elsewhere"})
		require.NoError(t, err)
		require.Equal(t, []string{"ns-b", "ns-e"}, holding)
		holding, err = models.NamespacesHolding(context.Background(), db, "x", []string{"ns-c", "ns-d"})
		require.NoError(t, err)
		require.Equal(t, []string{"ns-c", "ns-d"}, holding, "deleted schedules are found")
		holding, err = models.NamespacesHolding(context.Background(), db, "y-ns-a", []string{"ns-b"})
		require.NoError(t, err)
		require.Empty(t, holding)
	})
}
