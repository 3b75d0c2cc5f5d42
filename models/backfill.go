package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// Backfill job statuses (SPEC §18). Running and paused jobs are unfinished;
// the other three are final.
const (
	BackfillRunning   = "running"
	BackfillPaused    = "paused"
	BackfillCompleted = "completed"
	BackfillCancelled = "cancelled"
	BackfillFailed    = "failed"
)

// UnfinishedBackfillStatuses are the statuses of a job that will still
// start occurrences.
var UnfinishedBackfillStatuses = []string{BackfillRunning, BackfillPaused}

// Backfill is a row of backfills: one durable backfill job.
type Backfill struct {
	bun.BaseModel `bun:"table:backfills,alias:b"`

	ID                string     `bun:"id,pk"`
	Namespace         string     `bun:"namespace,notnull"`
	ScheduleULID      string     `bun:"schedule_ulid,notnull"`
	ScheduleID        string     `bun:"schedule_id,notnull"`
	From              time.Time  `bun:"range_from,notnull"`
	To                time.Time  `bun:"range_to,notnull"`
	OverlapPolicy     string     `bun:"overlap_policy,notnull"`
	OnlyTimes         []int64    `bun:"only_times,type:jsonb"`
	MaxPerMinute      *int       `bun:"max_per_minute"`
	MaxConcurrentRuns *int       `bun:"max_concurrent_runs"`
	Status            string     `bun:"status,notnull"`
	Total             int64      `bun:"total,notnull"`
	Started           int64      `bun:"started,notnull"`
	Skipped           int64      `bun:"skipped,notnull"`
	Buffered          int64      `bun:"buffered,notnull"`
	Failed            int64      `bun:"failed,notnull"`
	CursorAt          *time.Time `bun:"cursor_at"`
	Error             *string    `bun:"error"`
	PaceTokens        float64    `bun:"pace_tokens,notnull"`
	PaceAt            *time.Time `bun:"pace_at"`
	PaceRecent        string     `bun:"pace_recent,notnull"`
	NextWorkAt        time.Time  `bun:"next_work_at,notnull"`
	LastWorkedAt      *time.Time `bun:"last_worked_at"`
	CreatedBy         string     `bun:"created_by,notnull"`
	Source            string     `bun:"source,notnull"`
	Reason            string     `bun:"reason,notnull"`
	RequestID         string     `bun:"request_id,notnull"`
	CreatedAt         time.Time  `bun:"created_at,notnull"`
	UpdatedAt         time.Time  `bun:"updated_at,notnull"`
	FinishedAt        *time.Time `bun:"finished_at"`
}

// Handled is how many occurrences the job has dealt with.
func (b *Backfill) Handled() int64 { return b.Started + b.Skipped + b.Buffered + b.Failed }

// Remaining is how many occurrences the job has still to deal with.
func (b *Backfill) Remaining() int64 { return max(b.Total-b.Handled(), 0) }

// Unfinished reports whether the job will still start occurrences.
func (b *Backfill) Unfinished() bool {
	return b.Status == BackfillRunning || b.Status == BackfillPaused
}

// InsertBackfill stores a new job.
func InsertBackfill(ctx context.Context, db bun.IDB, b *Backfill) error {
	if _, err := db.NewInsert().Model(b).Exec(ctx); err != nil {
		return fmt.Errorf("insert backfill: %w", err)
	}
	return nil
}

// UpdateBackfill saves a job.
func UpdateBackfill(ctx context.Context, db bun.IDB, b *Backfill) error {
	if _, err := db.NewUpdate().Model(b).WherePK().Exec(ctx); err != nil {
		return fmt.Errorf("update backfill: %w", err)
	}
	return nil
}

// GetBackfill reads one job of a namespace (sql.ErrNoRows when absent).
func GetBackfill(ctx context.Context, db bun.IDB, namespace, id string) (*Backfill, error) {
	b := new(Backfill)
	if err := db.NewSelect().Model(b).Where("b.namespace = ? AND b.id = ?", namespace, id).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read backfill: %w", err)
	}
	return b, nil
}

// LockBackfill locks one job of a namespace for a change (pause, resume,
// cancel), waiting for a slice that works it.
func LockBackfill(ctx context.Context, tx bun.IDB, namespace, id string) (*Backfill, error) {
	b := new(Backfill)
	q := tx.NewSelect().Model(b).Where("b.namespace = ? AND b.id = ?", namespace, id)
	if err := database.Lock(q, "UPDATE").Scan(ctx); err != nil {
		return nil, fmt.Errorf("lock backfill: %w", err)
	}
	return b, nil
}

// ClaimBackfill locks a running job for one slice unless another replica
// holds it (SKIP LOCKED): ok is false when it is locked, finished or not
// due. The row read is the newest committed one, so the cursor is current.
func ClaimBackfill(ctx context.Context, tx bun.IDB, id string, now time.Time) (*Backfill, bool, error) {
	var out []Backfill
	q := tx.NewSelect().Model(&out).Where("b.id = ? AND b.status = ? AND b.next_work_at <= ?", id, BackfillRunning, now)
	if err := database.Lock(q, "UPDATE SKIP LOCKED").Scan(ctx); err != nil {
		return nil, false, fmt.Errorf("claim backfill: %w", err)
	}
	if len(out) == 0 {
		return nil, false, nil
	}
	return &out[0], true, nil
}

// BackfillCandidate is a running job due for a slice.
type BackfillCandidate struct {
	ID        string `bun:"id"`
	Namespace string `bun:"namespace"`
}

// BackfillCandidates lists up to limit running jobs due for a slice at now,
// the one served longest ago (or never) first. It takes no lock: the worker
// claims each one with ClaimBackfill.
func BackfillCandidates(ctx context.Context, db bun.IDB, now time.Time, limit int) ([]BackfillCandidate, error) {
	var out []BackfillCandidate
	err := runningBackfills(db).ColumnExpr("b.id, b.namespace").Where("b.next_work_at <= ?", now).
		OrderExpr("b.last_worked_at ASC NULLS FIRST, b.id ASC").Limit(int64(limit)).
		Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list backfill candidates: %w", err)
	}
	return out, nil
}

// runningBackfills selects the running backfill jobs (the partial work
// index's rows).
func runningBackfills(db bun.IDB) *bun.SelectQuery {
	return db.NewSelect().TableExpr("backfills AS b").Where("b.status = ?", BackfillRunning)
}

// BackfillFilter selects a page of GET /backfills: newest first, strictly
// before the ID Before when set.
type BackfillFilter struct {
	Namespace    string
	ScheduleULID string
	Statuses     []string
	Before       string
	Limit        int
}

// ListBackfills lists a namespace's jobs, newest first (keyset by ID: a
// ULID, so by creation).
func ListBackfills(ctx context.Context, db bun.IDB, f BackfillFilter) ([]Backfill, error) {
	var out []Backfill
	q := db.NewSelect().Model(&out).Where("b.namespace = ?", f.Namespace)
	if f.ScheduleULID != "" {
		q = q.Where("b.schedule_ulid = ?", f.ScheduleULID)
	}
	if len(f.Statuses) > 0 {
		q = q.Where("b.status IN (?)", bun.In(f.Statuses))
	}
	if f.Before != "" {
		q = q.Where("b.id < ?", f.Before)
	}
	if err := q.OrderExpr("b.id DESC").Limit(int64(f.Limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list backfills: %w", err)
	}
	return out, nil
}

// CountUnfinishedBackfills counts a namespace's running and paused jobs.
func CountUnfinishedBackfills(ctx context.Context, db bun.IDB, namespace string) (int, error) {
	n, err := db.NewSelect().TableExpr("backfills AS b").
		Where("b.namespace = ? AND b.status IN (?)", namespace, bun.In(UnfinishedBackfillStatuses)).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count unfinished backfills: %w", err)
	}
	return int(n), nil
}

// UnfinishedBackfillsOf lists a schedule's running and paused jobs, oldest
// first; the per-namespace bound keeps it short.
func UnfinishedBackfillsOf(ctx context.Context, db bun.IDB, scheduleULID string) ([]Backfill, error) {
	var out []Backfill
	err := db.NewSelect().Model(&out).
		Where("b.schedule_ulid = ? AND b.status IN (?)", scheduleULID, bun.In(UnfinishedBackfillStatuses)).
		OrderExpr("b.id ASC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list unfinished backfills: %w", err)
	}
	return out, nil
}

// CountActiveBackfilledRuns counts the pending or running backfilled runs
// whose instance IDs fall in [r.From, r.To], at most limit (the count stops
// there: a job only needs to know whether it is under its bound). It reads
// the partial index of active backfilled runs (migration 0019).
func CountActiveBackfilledRuns(ctx context.Context, db bun.IDB, namespace string, r IDRange, limit int) (int, error) {
	sub := db.NewSelect().TableExpr("workflow_runs AS r").ColumnExpr("1").
		Where("r.namespace = ? AND r.trigger = 'backfilled' AND r.status IN ('pending', 'running')", namespace)
	sub = r.where(sub, "r.instance_id").Limit(int64(limit))
	var n int
	if err := db.NewSelect().TableExpr("(?) AS a", sub).ColumnExpr("count(*)").Scan(ctx, &n); err != nil {
		return 0, fmt.Errorf("count active backfilled runs: %w", err)
	}
	return n, nil
}

// FireDueIn reports whether some active schedule is due in (after, until]:
// the backfill worker yields to the fire loop then (docs/BACKFILLS.md).
func FireDueIn(ctx context.Context, db bun.IDB, after, until time.Time) (bool, error) {
	ok, err := db.NewSelect().TableExpr("workflow_schedule_due AS d").ColumnExpr("1").
		Where("d.next_fire_at > ? AND d.next_fire_at <= ?", after, until).Limit(1).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("look for due fires: %w", err)
	}
	return ok, nil
}

// CountInstances counts the runs whose instance IDs fall in r: for a
// backfill window, the occurrences a backfill already started.
func CountInstances(ctx context.Context, db bun.IDB, namespace string, r IDRange) (int, error) {
	q := db.NewSelect().TableExpr("workflow_runs AS r").Where("r.namespace = ?", namespace)
	n, err := r.where(q, "r.instance_id").Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("count started instances: %w", err)
	}
	return int(n), nil
}
