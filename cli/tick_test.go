package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// makeDue moves a schedule's next fire to a fixed past instant, as if the
// process had been down then: the next tick fires that occurrence.
func makeDue(t *testing.T, d dialectEnv, namespace, scheduleID string, at time.Time) {
	t.Helper()
	d.exec(t, "UPDATE workflow_schedules SET next_fire_at = ?, next_nominal_at = ? WHERE namespace = ? AND schedule_id = ?",
		at, at, namespace, scheduleID)
}

func TestTick(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		require.Equal(t, "No schedules due.\n", d.run(t, "tick"))

		d.run(t, "schedule", "add", "daily-sync", "--workflow-type", "w", "--cron", "0 0 * * *")
		d.run(t, "schedule", "add", "report", "--workflow-type", "w", "--cron", "0 1 * * *", "--namespace", "ops")
		d.run(t, "schedule", "add", "cleanup", "--workflow-type", "w", "--cron", "0 2 * * *")
		d.run(t, "schedule", "add", "idle", "--workflow-type", "w", "--cron", "0 3 * * *")
		require.Equal(t, "No schedules due.\n", d.run(t, "tick"), "nothing is due yet")

		apr14 := time.Date(2026, 4, 14, 0, 0, 0, 0, time.UTC) // 1776124800
		makeDue(t, d, "default", "daily-sync", apr14)
		makeDue(t, d, "ops", "report", apr14.Add(time.Hour))
		makeDue(t, d, "default", "cleanup", apr14.Add(2*time.Hour))
		require.Equal(t, "[daily-sync] triggered → schedule:daily-sync:1776124800\n"+
			"[ops/report] triggered → schedule:report:1776128400\n"+
			"[cleanup] triggered → schedule:cleanup:1776132000\n"+
			"3 schedules: 3 triggered\n", d.run(t, "tick"))
		require.Equal(t, "No schedules due.\n", d.run(t, "tick"), "every fired schedule moved on")

		// daily-sync's run is still pending (no worker), so skip applies;
		// cleanup's stored spec no longer compiles, so its fire fails.
		makeDue(t, d, "default", "daily-sync", apr14.Add(24*time.Hour))
		makeDue(t, d, "default", "cleanup", apr14.Add(26*time.Hour))
		d.exec(t, "UPDATE workflow_schedules SET spec = ? WHERE schedule_id = ?", `{"cron_expressions":["not a cron"],"intervals":[],"timezone":"UTC"}`, "cleanup")
		out, _, err := runCLI(t, d.environ, "tick", "--limit", "10")
		require.ErrorIs(t, err, ErrSilentFailure)
		requireExit(t, 1, err)
		require.Equal(t, "[daily-sync] skipped (overlap_policy_skip)\n"+
			"[cleanup] failed (fire_failed)\n"+
			"2 schedules: 1 skipped, 1 failed\n", out)

		makeDue(t, d, "default", "daily-sync", apr14.Add(48*time.Hour))
		out = d.run(t, "tick", "--json")
		var rows []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &rows))
		require.Len(t, rows, 1)
		require.NotNil(t, rows[0]["next_fire_at"])
		delete(rows[0], "next_fire_at") // from the real clock
		require.Equal(t, map[string]any{
			"schedule_id": "daily-sync", "namespace": "default", "outcome": "skipped",
			"instance_id": nil, "run_id": nil, "reason": "overlap_policy_skip",
			"occurrence_time": "2026-04-16T00:00:00.000000Z", "last_fired_at": rows[0]["last_fired_at"],
		}, rows[0])
		require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, rows[0]["last_fired_at"])

		require.Equal(t, "[]\n", d.run(t, "tick", "--json"), "an empty pass is an empty array")

		makeDue(t, d, "default", "idle", apr14)
		out = d.run(t, "tick", "--limit", "1")
		require.Equal(t, "[idle] triggered → schedule:idle:1776124800\n1 schedule: 1 triggered\n", out)
	})
}
