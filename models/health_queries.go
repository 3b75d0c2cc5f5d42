package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// UnsuccessfulRunStatuses are the final statuses that count as failures for
// schedule health (CONTRACT §10); cancelled and terminated runs are not.
var UnsuccessfulRunStatuses = []string{RunFailed, RunTimedOut}

// HealthPending is a row of workflow_schedule_health_pending: a run's end
// not folded into its schedule's health row yet (migration 0010 says why).
type HealthPending struct {
	bun.BaseModel `bun:"table:workflow_schedule_health_pending,alias:hp"`

	ScheduleULID string    `bun:"schedule_ulid,pk"`
	FinishedAt   time.Time `bun:"finished_at,pk"`
	RunID        string    `bun:"run_id,pk"`
	Status       string    `bun:"status,notnull"`
	OccurrenceMs *int64    `bun:"occurrence_ms"`
	DurationMs   *int64    `bun:"duration_ms"`
	ErrorMessage *string   `bun:"error_message"`
}

func pendingOf(scheduleULID string, r *Run) *HealthPending {
	p := &HealthPending{ScheduleULID: scheduleULID, FinishedAt: *r.FinishedAt, RunID: r.ID, Status: r.Status, ErrorMessage: r.FailureMessage}
	if r.OccurrenceTime != nil {
		ms := r.OccurrenceTime.UnixMilli()
		p.OccurrenceMs = &ms
	}
	if r.StartedAt != nil {
		ms := r.FinishedAt.Sub(*r.StartedAt).Milliseconds()
		p.DurationMs = &ms
	}
	return p
}

func (p *HealthPending) recentRun() RecentRun {
	ms := p.FinishedAt.UnixMilli()
	return RecentRun{RunID: p.RunID, Status: p.Status, OccurrenceMs: p.OccurrenceMs, DurationMs: p.DurationMs, FinishedMs: &ms}
}

// merge applies pending run ends, newest first, to the health's last run
// and strip: the strip becomes the newest RecentRunsKept of both, the last
// run the newest end.
func (h *ScheduleHealth) merge(pending []HealthPending) {
	if len(pending) == 0 {
		return
	}
	newest := &pending[0]
	if h.LastRunFinishedAt == nil || newest.FinishedAt.After(*h.LastRunFinishedAt) ||
		(newest.FinishedAt.Equal(*h.LastRunFinishedAt) && h.LastRunID != nil && newest.RunID > *h.LastRunID) {
		at := newest.FinishedAt
		h.LastRunID, h.LastRunStatus, h.LastRunFinishedAt, h.LastRunError = &newest.RunID, &newest.Status, &at, newest.ErrorMessage
	}
	strip := make([]RecentRun, 0, len(pending)+len(h.RecentRuns))
	for i := range pending {
		strip = append(strip, pending[i].recentRun())
	}
	strip = append(strip, h.RecentRuns...)
	finished := func(r RecentRun) int64 {
		if r.FinishedMs == nil {
			return -1 << 62
		}
		return *r.FinishedMs
	}
	slices.SortStableFunc(strip, func(a, b RecentRun) int {
		if c := cmp.Compare(finished(b), finished(a)); c != 0 {
			return c
		}
		return strings.Compare(b.RunID, a.RunID)
	})
	h.RecentRuns = strip[:min(len(strip), RecentRunsKept)]
}

// HealthDelta is what one transaction's finished runs do to one schedule's
// health: Reset when a run completed (consecutive failures start again from
// ConsecutiveAdd, the failures after it), Failures to add to the total, and
// the runs finished, in order.
type HealthDelta struct {
	ScheduleULID   string
	Reset          bool
	ConsecutiveAdd int64
	Failures       int64
	Finished       []*Run
}

// AddHealth adds the deltas to the schedules' health, in schedule order.
// Callers apply them as the last writes of their transaction: then no
// transaction holds a health row while it waits for another lock, and rows
// taken in one order cannot form a cycle — so workers (who lock a run
// first) and the tick (which locks schedules, then runs) never deadlock
// over health.
//
// Each finished run becomes a pending row of its own (FoldHealth moves it
// into the health row later; readers merge it meanwhile). The health row
// is written only when a counter changes: a failure's upsert takes its
// lock; a completion resets the counters with an UPDATE whose condition is
// false in its snapshot when there is nothing to reset, so that it takes
// no lock. Workers finishing runs of one healthy schedule therefore commit
// side by side instead of one at a time behind the row. A completion that
// overlaps a failure it cannot see yet is ordered before it: its reset had
// nothing to reset, and the failure counts from there.
func AddHealth(b *Batch, db bun.IDB, deltas []HealthDelta, now time.Time) error {
	slices.SortFunc(deltas, func(a, b HealthDelta) int { return strings.Compare(a.ScheduleULID, b.ScheduleULID) })
	var pending []*HealthPending
	for _, d := range deltas {
		for _, r := range d.Finished {
			pending = append(pending, pendingOf(d.ScheduleULID, r))
		}
	}
	if len(pending) > 0 {
		if err := b.Add(db.NewInsert().Model(&pending)); err != nil {
			return fmt.Errorf("record run ends for health: %w", err)
		}
	}
	for _, d := range deltas {
		var err error
		switch {
		case d.Failures > 0:
			err = b.Add(db.NewRaw(`
				INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, failures_count, paused_at_failures, recent_runs, updated_at)
				VALUES (?, ?, ?, 0, '[]', ?)
				ON CONFLICT (schedule_ulid) DO UPDATE SET
					consecutive_failures = CASE WHEN ? THEN excluded.consecutive_failures
						ELSE workflow_schedule_health.consecutive_failures + excluded.consecutive_failures END,
					failures_count = workflow_schedule_health.failures_count + excluded.failures_count,
					paused_at_failures = CASE WHEN ? THEN 0 ELSE workflow_schedule_health.paused_at_failures END,
					updated_at = excluded.updated_at`,
				d.ScheduleULID, d.ConsecutiveAdd, d.Failures, now, d.Reset, d.Reset))
		case d.Reset:
			err = b.Add(db.NewUpdate().Model((*ScheduleHealth)(nil)).
				Set("consecutive_failures = 0").Set("paused_at_failures = 0").Set("updated_at = ?", now).
				Where("schedule_ulid = ?", d.ScheduleULID).
				Where("(consecutive_failures <> 0 OR paused_at_failures <> 0)"))
		}
		if err != nil {
			return fmt.Errorf("update schedule health: %w", err)
		}
	}
	return nil
}

// FoldHealth moves the pending run ends of up to limit schedules into their
// health rows, in schedule order, and returns how many schedules it folded.
// It deletes exactly the rows it read: a run end committed meanwhile stays
// pending for the next fold.
func FoldHealth(ctx context.Context, tx bun.IDB, now time.Time, limit int) (int, error) {
	var ids []string
	err := tx.NewSelect().Model((*HealthPending)(nil)).ColumnExpr("DISTINCT hp.schedule_ulid").
		OrderExpr("hp.schedule_ulid").Limit(int64(limit)).Scan(ctx, &ids)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	// A schedule's first fold creates its health row. The row's foreign
	// key takes a key-share lock on the schedule, which waits only for a
	// hard delete (every other lock on a schedule is FOR NO KEY UPDATE,
	// see scheduleLock): such schedules are left for the next pass.
	var missing, free []string
	err = tx.NewSelect().Model((*Schedule)(nil)).Column("s.id").Where("s.id IN (?)", bun.In(ids)).
		Where("NOT EXISTS (SELECT 1 FROM workflow_schedule_health AS h WHERE h.schedule_ulid = s.id)").Scan(ctx, &missing)
	if err != nil {
		return 0, fmt.Errorf("fold health: %w", err)
	}
	if len(missing) > 0 {
		q := database.Lock(tx.NewSelect().Model((*Schedule)(nil)).Column("s.id").Where("s.id IN (?)", bun.In(missing)).OrderExpr("s.id"),
			"KEY SHARE SKIP LOCKED")
		if err := q.Scan(ctx, &free); err != nil {
			return 0, fmt.Errorf("fold health: %w", err)
		}
		ids = slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(missing, id) && !slices.Contains(free, id) })
		rows := make([]ScheduleHealth, len(free))
		for i, id := range free {
			rows[i] = ScheduleHealth{ScheduleULID: id, RecentRuns: []RecentRun{}, UpdatedAt: now}
		}
		if len(rows) > 0 {
			if _, err := tx.NewInsert().Model(&rows).On("CONFLICT (schedule_ulid) DO NOTHING").Exec(ctx); err != nil {
				return 0, fmt.Errorf("fold health: %w", err)
			}
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	// Rows a run end holds are skipped and folded on a later pass. Waiting
	// for one could deadlock: a transaction ending the runs of several
	// schedules writes their rows in schedule order, and may next insert
	// the row of a higher schedule that this fold just created.
	var health []ScheduleHealth
	q := tx.NewSelect().Model(&health).Where("h.schedule_ulid IN (?)", bun.In(ids)).OrderExpr("h.schedule_ulid")
	if err := database.Lock(q, "UPDATE SKIP LOCKED").Scan(ctx); err != nil {
		return 0, fmt.Errorf("fold health: %w", err)
	}
	ids = ids[:0]
	for _, h := range health {
		ids = append(ids, h.ScheduleULID)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	var pending []HealthPending
	err = tx.NewSelect().Model(&pending).Where("hp.schedule_ulid IN (?)", bun.In(ids)).
		OrderExpr("hp.schedule_ulid, hp.finished_at DESC, hp.run_id DESC").Scan(ctx)
	if err != nil {
		return 0, fmt.Errorf("fold health: read pending: %w", err)
	}
	bySchedule := map[string][]HealthPending{}
	var runIDs []string
	for _, p := range pending {
		bySchedule[p.ScheduleULID] = append(bySchedule[p.ScheduleULID], p)
		runIDs = append(runIDs, p.RunID)
	}
	for i := range health {
		h := &health[i]
		h.merge(bySchedule[h.ScheduleULID])
		h.UpdatedAt = now
	}
	_, err = tx.NewUpdate().Model(&health).Column("last_run_id", "last_run_status", "last_run_finished_at", "last_run_error", "recent_runs", "updated_at").
		Bulk().Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("fold health: %w", err)
	}
	if len(runIDs) > 0 {
		_, err = tx.NewDelete().Model((*HealthPending)(nil)).Where("schedule_ulid IN (?) AND run_id IN (?)", bun.In(ids), bun.In(runIDs)).Exec(ctx)
		if err != nil {
			return 0, fmt.Errorf("fold health: delete pending: %w", err)
		}
	}
	return len(ids), nil
}

// GetHealth reads the health of the given schedules, pending run ends
// merged in; a schedule without a row and without pending ends has not
// finished a run yet and is absent from the map.
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
	pending, err := newestPending(ctx, db, scheduleULIDs)
	if err != nil {
		return nil, err
	}
	for id, p := range pending {
		h, ok := out[id]
		if !ok {
			h = ScheduleHealth{ScheduleULID: id, RecentRuns: []RecentRun{}}
		}
		h.merge(p)
		out[id] = h
	}
	return out, nil
}

// newestPending reads up to RecentRunsKept pending run ends per schedule,
// newest first.
func newestPending(ctx context.Context, db bun.IDB, scheduleULIDs []string) (map[string][]HealthPending, error) {
	var rows []HealthPending
	err := db.NewSelect().Model(&rows).Where("hp.schedule_ulid IN (?)", bun.In(scheduleULIDs)).
		OrderExpr("hp.schedule_ulid, hp.finished_at DESC, hp.run_id DESC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("get pending run ends: %w", err)
	}
	out := map[string][]HealthPending{}
	for _, p := range rows {
		if len(out[p.ScheduleULID]) < RecentRunsKept {
			out[p.ScheduleULID] = append(out[p.ScheduleULID], p)
		}
	}
	return out, nil
}

// ClaimFailing locks up to limit active schedules whose consecutive
// failures reached their pause_after_failures since the scheduler last
// paused them for it. It starts from the failing-health index (failing
// schedules are few). The health is re-read after the lock by the caller.
func ClaimFailing(ctx context.Context, tx bun.IDB, limit int) ([]Schedule, error) {
	var out []Schedule
	q := failing(tx).Model(&out).OrderExpr("s.id ASC").Limit(int64(limit))
	q = database.Lock(q, scheduleLock+" OF s SKIP LOCKED")
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("claim failing schedules: %w", err)
	}
	return out, nil
}

// failing selects the active schedules whose consecutive failures reached
// their pause_after_failures and were not paused for them yet.
func failing(db bun.IDB) *bun.SelectQuery {
	return db.NewSelect().Model((*Schedule)(nil)).
		Join("JOIN workflow_schedule_health AS h ON h.schedule_ulid = s.id").
		Where("h.consecutive_failures > 0").
		Where("s.status = ? AND s.pause_after_failures IS NOT NULL", StatusActive).
		Where("h.consecutive_failures >= s.pause_after_failures AND h.consecutive_failures > h.paused_at_failures")
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
