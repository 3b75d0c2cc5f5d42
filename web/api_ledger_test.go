package web_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

func TestAPICatchupWindowAndOccurrences(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		created := f.must(201, "POST", v2+"/schedules", `{"schedule_id":"hourly","spec":{"cron_expressions":["0 * * * *"]},
			"action":{"workflow_type":"sync"},"overlap_policy":"allow_all","catchup_window_seconds":7200}`)
		require.EqualValues(t, 7200, created["catchup_window_seconds"])
		code, fields := errorOf(t, f.must(422, "PATCH", v2+"/schedules/hourly", `{"catchup_window_seconds":0}`))
		require.Equal(t, "validation_failed", code)
		require.Contains(t, fields, "catchup_window_seconds")
		patched := f.must(200, "PATCH", v2+"/schedules/hourly", `{"catchup_window_seconds":10800}`)
		require.EqualValues(t, 10800, patched["catchup_window_seconds"])

		// Down for five hours: 13:00 and 14:00 are missed, 15–17:00 fire.
		start := f.clock.Now()
		f.clock.Set(start.Add(5*time.Hour + 10*time.Minute))
		f.must(200, "POST", v2+"/tick", "")
		page := f.must(200, "GET", v2+"/schedules/hourly/occurrences?from="+start.Format(time.RFC3339)+"&to="+start.Add(6*time.Hour).Format(time.RFC3339), "")
		var got []string
		for _, o := range page["occurrences"].([]any) {
			got = append(got, o.(map[string]any)["fate"].(string))
		}
		require.Equal(t, []string{"before_created", "missed", "missed", "started", "started", "started"}, got)
		require.Equal(t, false, page["has_more"])
		require.Nil(t, page["next_cursor"])

		paged := f.must(200, "GET", v2+"/schedules/hourly/occurrences?limit=2&from="+start.Format(time.RFC3339), "")
		require.Len(t, paged["occurrences"], 2)
		require.Equal(t, true, paged["has_more"])
		next := f.must(200, "GET", v2+"/schedules/hourly/occurrences?limit=2&from="+start.Format(time.RFC3339)+"&cursor="+paged["next_cursor"].(string), "")
		require.Equal(t, start.Add(2*time.Hour).UTC().Format("2006-01-02T15:04:05.000000Z"), next["occurrences"].([]any)[0].(map[string]any)["occurrence_time"])

		for _, q := range []string{"limit=0", "limit=x", "cursor=abc", "from=yesterday", "from=2026-07-16T12:00:00Z&to=2026-07-16T11:00:00Z"} {
			f.must(422, "GET", v2+"/schedules/hourly/occurrences?"+q, "")
		}
		f.must(404, "GET", v2+"/schedules/nope/occurrences", "")
	})
}
