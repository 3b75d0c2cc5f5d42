package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// UnsuccessfulRunStatuses are the final statuses that count as failures for
// schedule health (SPEC §10); cancelled and terminated runs are not.
var UnsuccessfulRunStatuses = []string{RunFailed, RunTimedOut}

// HealthDelta is what one transaction's finished runs do to one schedule's
// health: Reset when a run completed (consecutive failures start again from
// ConsecutiveAdd, the failures after it), Failures to add to the total, and
// the runs finished, in order (the last one is the schedule's last run).
type HealthDelta struct {
	ScheduleULID   string
	Reset          bool
	ConsecutiveAdd int64
	Failures       int64
	Finished       []*Run
}

// recentRuns is the newest-first strip entries of runs given oldest first.
func recentRuns(runs []*Run) []RecentRun {
	out := make([]RecentRun, 0, min(len(runs), RecentRunsKept))
	for i := len(runs) - 1; i >= 0 && len(out) < RecentRunsKept; i-- {
		r := runs[i]
		rr := RecentRun{RunID: r.ID, Status: r.Status}
		if r.OccurrenceTime != nil {
			ms := r.OccurrenceTime.UnixMilli()
			rr.OccurrenceMs = &ms
		}
		if r.StartedAt != nil && r.FinishedAt != nil {
			ms := r.FinishedAt.Sub(*r.StartedAt).Milliseconds()
			rr.DurationMs = &ms
		}
		out = append(out, rr)
	}
	return out
}

// mergeRecent is the dialect's expression for the first RecentRunsKept
// entries of the new runs (excluded.recent_runs) followed by the stored ones.
func mergeRecent(db bun.IDB) string {
	if database.IsPostgres(db) {
		return fmt.Sprintf("jsonb_path_query_array(excluded.recent_runs || workflow_schedule_health.recent_runs, '$[0 to %d]')", RecentRunsKept-1)
	}
	return fmt.Sprintf(`(SELECT json_group_array(json(value)) FROM (
		SELECT value FROM (SELECT key AS k, value FROM json_each(excluded.recent_runs)
			UNION ALL SELECT 1000000 + key, value FROM json_each(workflow_schedule_health.recent_runs))
		ORDER BY k LIMIT %d))`, RecentRunsKept)
}

// AddHealth adds the deltas to workflow_schedule_health, one upsert per
// schedule, in schedule order. Callers apply them as the last writes of
// their transaction: then no transaction holds a health row while it waits
// for another lock, and rows taken in one order cannot form a cycle — so
// workers (who lock a run first) and the tick (which locks schedules, then
// runs) never deadlock over health.
func AddHealth(b *Batch, db bun.IDB, deltas []HealthDelta, now time.Time) error {
	slices.SortFunc(deltas, func(a, b HealthDelta) int { return strings.Compare(a.ScheduleULID, b.ScheduleULID) })
	for _, d := range deltas {
		r := d.Finished[len(d.Finished)-1]
		recent, err := json.Marshal(recentRuns(d.Finished))
		if err != nil {
			return fmt.Errorf("encode recent runs: %w", err)
		}
		err = b.Add(db.NewRaw(`
			INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, failures_count, paused_at_failures,
				last_run_id, last_run_status, last_run_finished_at, last_run_error, recent_runs, updated_at)
			VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (schedule_ulid) DO UPDATE SET
				recent_runs = `+mergeRecent(db)+`,
				consecutive_failures = CASE WHEN ? THEN excluded.consecutive_failures
					ELSE workflow_schedule_health.consecutive_failures + excluded.consecutive_failures END,
				failures_count = workflow_schedule_health.failures_count + excluded.failures_count,
				paused_at_failures = CASE WHEN ? THEN 0 ELSE workflow_schedule_health.paused_at_failures END,
				last_run_id = excluded.last_run_id, last_run_status = excluded.last_run_status,
				last_run_finished_at = excluded.last_run_finished_at, last_run_error = excluded.last_run_error,
				updated_at = excluded.updated_at`,
			d.ScheduleULID, d.ConsecutiveAdd, d.Failures, r.ID, r.Status, r.FinishedAt, r.FailureMessage, string(recent), now,
			d.Reset, d.Reset))
		if err != nil {
			return fmt.Errorf("update schedule health: %w", err)
		}
	}
	return nil
}

// GetHealth reads the health of the given schedules; a schedule without a
// row has not finished a run yet and is absent from the map.
func GetHealth(ctx context.Context, db bun.IDB, scheduleULIDs []string) (map[string]ScheduleHealth, error) {
	out := map[string]ScheduleHealth{}
	if len(scheduleULIDs) == 0 {
		return out, nil
	}
	var rows []ScheduleHealth
	if err := db.NewSelect().Model(&rows).Where("h.schedule_ulid IN (?)", bun.In(scheduleULIDs)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("get schedule health: %w", err)
	}
	for _, h := range rows {
		out[h.ScheduleULID] = h
	}
	return out, nil
}

// ClaimFailing locks up to limit active schedules whose consecutive
// failures reached their pause_after_failures since the scheduler last
// paused them for it. It starts from the failing-health index (failing
// schedules are few). The health is re-read after the lock by the caller.
func ClaimFailing(ctx context.Context, tx bun.IDB, limit int) ([]Schedule, error) {
	var out []Schedule
	q := tx.NewSelect().Model(&out).
		Join("JOIN workflow_schedule_health AS h ON h.schedule_ulid = s.id").
		Where("h.consecutive_failures > 0").
		Where("s.status = ? AND s.pause_after_failures IS NOT NULL", StatusActive).
		Where("h.consecutive_failures >= s.pause_after_failures AND h.consecutive_failures > h.paused_at_failures").
		OrderExpr("s.id ASC").Limit(int64(limit))
	q = database.Lock(q, "UPDATE OF s SKIP LOCKED")
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("claim failing schedules: %w", err)
	}
	return out, nil
}

// MarkPausedForFailures records that the scheduler paused the schedule at
// this many consecutive failures.
func MarkPausedForFailures(ctx context.Context, db bun.IDB, scheduleULID string, failures int64) error {
	_, err := db.NewUpdate().Model((*ScheduleHealth)(nil)).Set("paused_at_failures = ?", failures).
		Where("schedule_ulid = ?", scheduleULID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark paused for failures: %w", err)
	}
	return nil
}
