package models

import (
	"context"
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
// health counters: Reset when a run completed (consecutive failures start
// again from ConsecutiveAdd, the failures after it), and Failures to add to
// the total.
type HealthDelta struct {
	ScheduleULID   string
	Reset          bool
	ConsecutiveAdd int64
	Failures       int64
}

// AddHealth adds the deltas to workflow_schedule_health, in schedule order.
// Callers apply them as the last writes of their transaction: then no
// transaction holds a health row while it waits for another lock, and rows
// taken in one order cannot form a cycle — so workers (who lock a run
// first) and the tick (which locks schedules, then runs) never deadlock
// over health.
//
// A row is written only when a counter changes. A completion of a schedule
// with nothing to reset, the common case, writes nothing: the UPDATE's
// condition is false in its snapshot, so it takes no lock. Workers
// finishing runs of one schedule therefore commit side by side instead of
// one at a time behind the row's lock (docs/PERFORMANCE.md, "Claim +
// complete"). A failure still takes the row's lock; a completion that
// overlaps a failure without seeing it commute as if it came first: its
// reset had nothing to reset, and the failure counts from there.
func AddHealth(b *Batch, db bun.IDB, deltas []HealthDelta, now time.Time) error {
	slices.SortFunc(deltas, func(a, b HealthDelta) int { return strings.Compare(a.ScheduleULID, b.ScheduleULID) })
	for _, d := range deltas {
		var err error
		switch {
		case d.Failures == 0 && d.Reset:
			err = b.Add(db.NewUpdate().Model((*ScheduleHealth)(nil)).
				Set("consecutive_failures = 0").Set("paused_at_failures = 0").Set("updated_at = ?", now).
				Where("schedule_ulid = ?", d.ScheduleULID).
				Where("(consecutive_failures <> 0 OR paused_at_failures <> 0)"))
		case d.Failures == 0:
			// Only cancelled or terminated runs: no counter changes.
			continue
		default:
			err = b.Add(db.NewRaw(`
				INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, failures_count, paused_at_failures, updated_at)
				VALUES (?, ?, ?, 0, ?)
				ON CONFLICT (schedule_ulid) DO UPDATE SET
					consecutive_failures = CASE WHEN ? THEN excluded.consecutive_failures
						ELSE workflow_schedule_health.consecutive_failures + excluded.consecutive_failures END,
					failures_count = workflow_schedule_health.failures_count + excluded.failures_count,
					paused_at_failures = CASE WHEN ? THEN 0 ELSE workflow_schedule_health.paused_at_failures END,
					updated_at = excluded.updated_at`,
				d.ScheduleULID, d.ConsecutiveAdd, d.Failures, now, d.Reset, d.Reset))
		}
		if err != nil {
			return fmt.Errorf("update schedule health: %w", err)
		}
	}
	return nil
}

// healthColumns are a schedule's health as read beside its row: the
// counters of its health row h (NULL without one) and, from the index of
// its finished runs (migration 0010), the last run and the recent-runs
// strip as JSON. Each is a range of at most RecentRunsKept index entries,
// whatever the schedule's history; the database computes the strip's
// milliseconds, as decoding text times was most of a page's cost.
type healthColumns struct {
	ConsecutiveFailures *int64      `bun:"h_consecutive_failures,scanonly"`
	FailuresCount       *int64      `bun:"h_failures_count,scanonly"`
	PausedAtFailures    *int64      `bun:"h_paused_at_failures,scanonly"`
	LastRun             *lastRun    `bun:"h_last_run,type:jsonb,scanonly"`
	RecentRuns          []RecentRun `bun:"h_recent_runs,type:jsonb,scanonly"`
}

type lastRun struct {
	RunID        string    `json:"run_id"`
	Status       string    `json:"status"`
	FinishedAt   time.Time `json:"finished_at"`
	ErrorMessage *string   `json:"error_message"`
}

// selectHealth adds the health columns to q, which reads schedules as s
// joined (LEFT or inner) to workflow_schedule_health as h.
func selectHealth(db bun.IDB, q *bun.SelectQuery) *bun.SelectQuery {
	last := func(n int) string {
		return fmt.Sprintf(`(SELECT r.id, r.status, r.occurrence_time, r.started_at, r.finished_at, r.failure_message
			FROM workflow_runs AS r WHERE r.workflow_schedule_id = s.id AND r.finished_at IS NOT NULL
			ORDER BY r.finished_at DESC, r.id DESC LIMIT %d) AS lr`, n)
	}
	var lastRun, recent string
	if database.IsPostgres(db) {
		lastRun = `(SELECT json_build_object('run_id', lr.id, 'status', lr.status, 'finished_at', lr.finished_at,
			'error_message', lr.failure_message) FROM ` + last(1) + `)`
		recent = `(SELECT json_agg(json_build_object('run_id', lr.id, 'status', lr.status,
			'occurrence_ms', (EXTRACT(EPOCH FROM lr.occurrence_time) * 1000)::bigint,
			'duration_ms', (EXTRACT(EPOCH FROM lr.finished_at - lr.started_at) * 1000)::bigint)
			ORDER BY lr.finished_at DESC, lr.id DESC) FROM ` + last(RecentRunsKept) + `)`
	} else {
		// SQLite stores times as text "2006-01-02 15:04:05.999999+00:00";
		// with a T it is RFC 3339.
		lastRun = `(SELECT json_object('run_id', lr.id, 'status', lr.status, 'finished_at', replace(lr.finished_at, ' ', 'T'),
			'error_message', lr.failure_message) FROM ` + last(1) + `)`
		recent = `(SELECT json_group_array(json_object('run_id', lr.id, 'status', lr.status,
			'occurrence_ms', CAST(strftime('%s', lr.occurrence_time) AS INTEGER) * 1000 + CAST(substr(strftime('%f', lr.occurrence_time), 4, 3) AS INTEGER),
			'duration_ms', CAST(ROUND((julianday(lr.finished_at) - julianday(lr.started_at)) * 86400000) AS INTEGER))) FROM ` + last(RecentRunsKept) + `)`
	}
	return q.ColumnExpr("h.consecutive_failures AS h_consecutive_failures, h.failures_count AS h_failures_count, h.paused_at_failures AS h_paused_at_failures").
		ColumnExpr(lastRun + " AS h_last_run").
		ColumnExpr(recent + " AS h_recent_runs")
}

// health is the schedule's health from its columns.
func (c *healthColumns) health(scheduleULID string) ScheduleHealth {
	deref := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	h := ScheduleHealth{ScheduleULID: scheduleULID, ConsecutiveFailures: deref(c.ConsecutiveFailures),
		FailuresCount: deref(c.FailuresCount), PausedAtFailures: deref(c.PausedAtFailures), RecentRuns: c.RecentRuns}
	if l := c.LastRun; l != nil {
		at := l.FinishedAt.UTC()
		h.LastRunID, h.LastRunStatus, h.LastRunFinishedAt, h.LastRunError = &l.RunID, &l.Status, &at, l.ErrorMessage
	}
	if h.RecentRuns == nil {
		h.RecentRuns = []RecentRun{}
	}
	return h
}

// GetHealth reads the health of the given schedules, in one statement.
func GetHealth(ctx context.Context, db bun.IDB, scheduleULIDs []string) (map[string]ScheduleHealth, error) {
	out := map[string]ScheduleHealth{}
	if len(scheduleULIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		ID string `bun:"id"`
		healthColumns
	}
	q := db.NewSelect().TableExpr("workflow_schedules AS s").ColumnExpr("s.id").
		Join("LEFT JOIN workflow_schedule_health AS h ON h.schedule_ulid = s.id").
		Where("s.id IN (?)", bun.In(scheduleULIDs))
	if err := selectHealth(db, q).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("get schedule health: %w", err)
	}
	for i := range rows {
		out[rows[i].ID] = rows[i].health(rows[i].ID)
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
