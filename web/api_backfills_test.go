package web_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// The job routes through the real router: a large window answers 202 at
// once with the job part-done, its progress and ETA; list, show, pause,
// resume and cancel, each namespace seeing only its own jobs.
func TestAPIBackfillJobs(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"m","cron":"* * * * *","action":{"workflow_type":"w"},"overlap_policy":"allow_all"}`, "X-Namespace", "team-a")

		// A year of minutes, paced: accepted at once.
		job := f.must(202, "POST", v2+"/schedules/m/backfill",
			`{"from":"2025-07-16T12:00:00Z","to":"2026-07-16T12:00:00Z","max_per_minute":6000,"max_concurrent_runs":5000,"reason":"replay"}`, "X-Namespace", "team-a")["backfill"].(map[string]any)
		require.Equal(t, "running", job["status"])
		require.EqualValues(t, 525_600, job["total"])
		require.EqualValues(t, 500, job["started"], "at most 500 at once (a tenth of the rate would be 600)")
		require.EqualValues(t, 525_100, job["remaining"])
		require.Equal(t, "2026-07-16T12:00:00.000000Z", job["created_at"])
		require.Equal(t, "2026-07-16T13:27:31.000000Z", job["eta"], "525,100 at 100 a second: 87.5 minutes")
		require.Equal(t, "replay", job["reason"])
		id := job["id"].(string)

		// Another namespace sees nothing.
		require.Empty(t, f.must(200, "GET", v2+"/backfills", "", "X-Namespace", "team-b")["backfills"])
		f.must(404, "GET", v2+"/backfills/"+id, "", "X-Namespace", "team-b")
		f.must(404, "POST", v2+"/backfills/"+id+"/cancel", "", "X-Namespace", "team-b")

		list := f.must(200, "GET", v2+"/backfills?schedule_id=m&status=running", "", "X-Namespace", "team-a")
		require.Len(t, list["backfills"], 1)
		require.Equal(t, false, list["has_more"])
		require.Nil(t, list["next_cursor"])

		paused := f.must(200, "POST", v2+"/backfills/"+id+"/pause", `{"reason":"workers busy"}`, "X-Namespace", "team-a")["backfill"].(map[string]any)
		require.Equal(t, "paused", paused["status"])
		require.Nil(t, paused["eta"])
		code, _ := errorOf(t, f.must(409, "POST", v2+"/backfills/"+id+"/pause", "", "X-Namespace", "team-a"))
		require.Equal(t, "backfill_not_running", code)
		require.Equal(t, "running", f.must(200, "POST", v2+"/backfills/"+id+"/resume", "", "X-Namespace", "team-a")["backfill"].(map[string]any)["status"])
		code, _ = errorOf(t, f.must(409, "POST", v2+"/schedules/m/backfill", `{"from":"2026-01-01T00:00:00Z","to":"2026-01-02T00:00:00Z"}`, "X-Namespace", "team-a"))
		require.Equal(t, "backfill_overlaps", code)

		cancelled := f.must(200, "POST", v2+"/backfills/"+id+"/cancel", "", "X-Namespace", "team-a")["backfill"].(map[string]any)
		require.Equal(t, "cancelled", cancelled["status"])
		require.NotNil(t, cancelled["finished_at"])
		code, _ = errorOf(t, f.must(409, "POST", v2+"/backfills/"+id+"/resume", "", "X-Namespace", "team-a"))
		require.Equal(t, "backfill_not_paused", code)
		code, _ = errorOf(t, f.must(409, "POST", v2+"/backfills/"+id+"/cancel", "", "X-Namespace", "team-a"))
		require.Equal(t, "backfill_finished", code)
		require.Equal(t, "cancelled", f.must(200, "GET", v2+"/backfills/"+id, "", "X-Namespace", "team-a")["backfill"].(map[string]any)["status"])

		// The dry run answers as it always did.
		dry := f.must(200, "POST", v2+"/schedules/m/backfill", `{"from":"2025-07-16T12:00:00Z","to":"2025-07-16T12:03:00Z","dry_run":true}`, "X-Namespace", "team-a")
		require.Equal(t, "dry_run", dry["outcome"])
		require.Equal(t, "already_started", dry["results"].([]any)[0].(map[string]any)["reason"])
	})
}
