package web_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// Issue 36, finding 10: from=0001-01-01T00:00:00Z (Go's zero time) was
// read as "no from" and answered the last seven days.
func TestLedgerFromTheFirstInstantIsHonoured(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"hourly","spec":{"cron_expressions":["0 * * * *"]},"action":{"workflow_type":"sync"}}`)
		f.clock.Set(f.clock.Now().Add(10 * 24 * time.Hour)) // older than the default window (7 days)
		first := func(query string) map[string]any {
			page := f.must(200, "GET", v2+"/schedules/hourly/occurrences?limit=2&"+query, "")
			occ := page["occurrences"].([]any)
			require.Len(t, occ, 2, query)
			return page
		}
		page := first("from=0001-01-01T00:00:00Z")
		require.Equal(t, "0001-01-01T00:00:00.000000Z", page["from"])
		require.Equal(t, "2026-07-16T13:00:00.000000Z", page["occurrences"].([]any)[0].(map[string]any)["occurrence_time"], "from the first occurrence the schedule had")
		page = first("")
		require.Equal(t, "2026-07-19T12:00:00.000000Z", page["from"], "absent: the last seven days")
		page = f.must(200, "GET", v2+"/schedules/hourly/occurrences?limit=1&from=0001-01-01T00:00:00Z&to=0001-01-01T02:00:00Z", "")
		require.Equal(t, "0001-01-01T02:00:00.000000Z", page["to"])
	})
}
