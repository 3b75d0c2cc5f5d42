package models

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
// its finished runs (migration 0010), its last RecentRunsKept finished runs
// as one JSON array and the last one's error. Each is one index range of
// at most RecentRunsKept entries per schedule, whatever its history.
type healthColumns struct {
	ConsecutiveFailures *int64        `bun:"h_consecutive_failures,scanonly"`
	FailuresCount       *int64        `bun:"h_failures_count,scanonly"`
	PausedAtFailures    *int64        `bun:"h_paused_at_failures,scanonly"`
	Finished            []finishedRun `bun:"h_finished,type:jsonb,scanonly"`
	LastError           *string       `bun:"h_last_error,scanonly"`
}

// finishedRun is a strip entry as the database sends it: its times as the
// dialect writes them. Go computes the milliseconds; SQLite's date
// functions cost more than the rest of the page together.
type finishedRun struct {
	RunID      string  `json:"run_id"`
	Status     string  `json:"status"`
	Occurrence runTime `json:"occurrence_time"`
	Started    runTime `json:"started_at"`
	Finished   runTime `json:"finished_at"`
}

// runTime is a time in a JSON document built by the database: RFC 3339
// from PostgreSQL, "2006-01-02 15:04:05.999999+00:00" text from SQLite.
type runTime struct{ t *time.Time }

func (r *runTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		r.t = nil
		return nil
	}
	if len(b) < 12 || b[0] != '"' {
		return fmt.Errorf("run time %s is not a string", b)
	}
	v := []byte(string(b[1 : len(b)-1]))
	v[10] = 'T'
	t, err := time.Parse(time.RFC3339Nano, string(v))
	if err != nil {
		return fmt.Errorf("run time: %w", err)
	}
	t = t.UTC()
	r.t = &t
	return nil
}

// selectHealth adds the health columns to q, which reads schedules as s
// joined (LEFT or inner) to workflow_schedule_health as h.
//
// The array is aggregated from a subquery already in index order (and
// sorted again in Go, which costs nothing for ten sorted entries): an
// ORDER BY inside PostgreSQL's aggregate sorted each schedule's ten rows
// again and tripled the statement's cost.
func selectHealth(db bun.IDB, q *bun.SelectQuery) *bun.SelectQuery {
	lastFinished := func(columns string, n int) string {
		return `SELECT ` + columns + ` FROM workflow_runs AS r WHERE r.workflow_schedule_id = s.id AND r.finished_at IS NOT NULL
			ORDER BY r.finished_at DESC, r.id DESC LIMIT ` + strconv.Itoa(n)
	}
	object, array := "json_build_object", "json_agg"
	if !database.IsPostgres(db) {
		object, array = "json_object", "json_group_array"
	}
	finished := `(SELECT ` + array + `(` + object + `('run_id', lr.id, 'status', lr.status, 'occurrence_time', lr.occurrence_time,
		'started_at', lr.started_at, 'finished_at', lr.finished_at))
		FROM (` + lastFinished("r.id, r.status, r.occurrence_time, r.started_at, r.finished_at", RecentRunsKept) + `) AS lr)`
	return q.ColumnExpr("h.consecutive_failures AS h_consecutive_failures, h.failures_count AS h_failures_count, h.paused_at_failures AS h_paused_at_failures").
		ColumnExpr(finished + " AS h_finished").
		ColumnExpr("(" + lastFinished("r.failure_message", 1) + ") AS h_last_error")
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
		FailuresCount: deref(c.FailuresCount), PausedAtFailures: deref(c.PausedAtFailures), RecentRuns: make([]RecentRun, len(c.Finished))}
	runs := c.Finished
	slices.SortStableFunc(runs, func(a, b finishedRun) int {
		if c := b.Finished.t.Compare(*a.Finished.t); c != 0 {
			return c
		}
		return strings.Compare(b.RunID, a.RunID)
	})
	for i := range runs {
		r := &runs[i]
		rr := RecentRun{RunID: r.RunID, Status: r.Status}
		if r.Occurrence.t != nil {
			ms := r.Occurrence.t.UnixMilli()
			rr.OccurrenceMs = &ms
		}
		if r.Started.t != nil {
			ms := r.Finished.t.Sub(*r.Started.t).Milliseconds()
			rr.DurationMs = &ms
		}
		h.RecentRuns[i] = rr
	}
	if len(runs) > 0 {
		h.LastRunID, h.LastRunStatus, h.LastRunFinishedAt, h.LastRunError = &runs[0].RunID, &runs[0].Status, runs[0].Finished.t, c.LastError
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
