package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// The API's runs lists take the console's filters: workflow type and a
// creation-time range (from inclusive, to exclusive), on both /runs and a
// schedule's runs, with field-level 422s for bad values.
func TestAPIRunsFilterByTypeAndTime(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"export","cron":"0 0 1 1 *","overlap_policy":"allow_all","action":{"workflow_type":"billing.Export"}}`)
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"train","cron":"0 0 1 1 *","overlap_policy":"allow_all","action":{"workflow_type":"ml.Train"}}`)
		start := f.clock.Now().Truncate(time.Minute).Add(time.Minute)
		var ids []string
		for i, id := range []string{"export", "train", "export", "train"} {
			f.clock.Set(start.Add(time.Duration(i) * time.Minute))
			ids = append(ids, f.must(200, "POST", v2+"/schedules/"+id+"/trigger", "")["run_id"].(string))
		}
		at := func(i int) string { return start.Add(time.Duration(i) * time.Minute).Format(time.RFC3339) }
		listed := func(path string) []string {
			t.Helper()
			var got []string
			for _, r := range f.must(200, "GET", path, "")["runs"].([]any) {
				got = append(got, r.(map[string]any)["run_id"].(string))
			}
			return got
		}

		require.Equal(t, []string{ids[2], ids[0]}, listed(v2+"/runs?workflow_type=billing.Export"))
		require.Equal(t, []string{ids[2], ids[1]}, listed(v2+"/runs?created_from="+at(1)+"&created_to="+at(3)))
		require.Equal(t, []string{ids[3]}, listed(v2+"/runs?created_from="+start.Add(150*time.Second).Format("2006-01-02T15:04:05")), "the datetime-local form, read as UTC")
		require.Equal(t, []string{ids[3]}, listed(v2+"/schedules/train/runs?created_from="+at(2)))
		require.Empty(t, listed(v2+"/schedules/train/runs?workflow_type=billing.Export"), "a schedule's runs narrowed by another type")
		require.Equal(t, []string{ids[2]}, listed(v2+"/runs?workflow_type=billing.Export&created_from="+at(1)))

		page := f.must(200, "GET", v2+"/runs?workflow_type=ml.Train&limit=1", "")
		require.Len(t, page["runs"], 1)
		require.NotEmpty(t, page["next_cursor"])
		require.Equal(t, []string{ids[1]}, listed(v2+"/runs?workflow_type=ml.Train&limit=1&cursor="+page["next_cursor"].(string)))

		for q, field := range map[string]string{
			"created_from=yesterday":                         "created_from",
			"created_to=2026-13-01T00:00":                    "created_to",
			"created_from=" + at(3) + "&created_to=" + at(1): "created_to",
			"created_to=0001-01-01T00:00":                    "created_to",
			"workflow_type=" + strings.Repeat("x", 256):      "workflow_type",
		} {
			res := f.do("GET", v2+"/runs?"+q, "")
			require.Equal(t, http.StatusUnprocessableEntity, res.Status, "%s: %s", q, res.Raw)
			code, fields := errorOf(t, res.Body)
			require.Equal(t, "validation_failed", code, q)
			require.Contains(t, fields, field, q)
		}
	})
}
