package models

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
)

// LoopWork is what the served loop's fire pass and housekeeping tasks
// would find, read in one statement without a transaction or a lock
// (ReadLoopWork). Work that comes with time is read as the earliest time it
// comes, so whoever reads LoopWork later compares it with its own now:
// a row that was there when it was read is seen at exactly its time.
type LoopWork struct {
	// Earliest is the due queue's first next fire; Buffered, whether an
	// active schedule holds buffered fires (a tick drains them).
	Earliest *time.Time `bun:"earliest"`
	Buffered bool       `bun:"buffered"`
	// PauseEnds is the earliest end of a timed pause (ClaimPauseEnded).
	PauseEnds *time.Time `bun:"pause_ends"`
	// HealthPending: run ends wait to be folded (FoldHealth). Failing: a
	// schedule reached its pause_after_failures (ClaimFailing).
	HealthPending bool `bun:"health_pending"`
	Failing       bool `bun:"failing"`
	// StartDeadline is the earliest unreported start deadline of a
	// pending run (ClaimStartDeadlines).
	StartDeadline *time.Time `bun:"start_deadline"`
	// The earliest time of each way an active run expires
	// (ExpiredRunIDs): a running run's lease, an execution or run deadline,
	// a cancellation request (which expires a grace period after it).
	LeaseExpires      *time.Time `bun:"lease_expires"`
	ExecutionDeadline *time.Time `bun:"execution_deadline"`
	RunDeadline       *time.Time `bun:"run_deadline"`
	CancelRequested   *time.Time `bun:"cancel_requested"`
	// DeliveryNext is the earliest next attempt of a notification
	// delivery still to be sent (DueDeliveryLanes); BackfillNext, the
	// earliest next slice of a running backfill job (BackfillCandidates).
	DeliveryNext *time.Time `bun:"delivery_next"`
	BackfillNext *time.Time `bun:"backfill_next"`
}

// FireDue says whether a fire pass at now has something to fire or drain.
func (w LoopWork) FireDue(now time.Time) bool { return w.Buffered || reached(w.Earliest, now) }

// PauseEnded says whether a timed pause has ended by now.
func (w LoopWork) PauseEnded(now time.Time) bool { return reached(w.PauseEnds, now) }

// StartDeadlinePassed says whether a pending run's start deadline has
// passed by now.
func (w LoopWork) StartDeadlinePassed(now time.Time) bool { return reached(w.StartDeadline, now) }

// RunsExpired says whether ExpiredRunIDs(now, cancelBefore) would find a
// run.
func (w LoopWork) RunsExpired(now, cancelBefore time.Time) bool {
	return reached(w.LeaseExpires, now) || reached(w.ExecutionDeadline, now) || reached(w.RunDeadline, now) ||
		reached(w.CancelRequested, cancelBefore)
}

// DeliveryDue says whether a notification delivery is due by now.
func (w LoopWork) DeliveryDue(now time.Time) bool { return reached(w.DeliveryNext, now) }

// BackfillDue says whether a running backfill job has a slice due by now.
func (w LoopWork) BackfillDue(now time.Time) bool { return reached(w.BackfillNext, now) }

func reached(at *time.Time, now time.Time) bool { return at != nil && !at.After(now) }

// ReadLoopWork reads LoopWork in one statement of index probes: the first
// entry of the due queue and of each partial index that holds a kind of
// work, and whether the buffered, pending-health and failing sets have a
// row. The served loop reads it once a period and its tasks, the
// notification dispatcher and the backfill worker open a transaction only
// for what it shows; before, each asked on its own, seven statements an
// idle second (docs/PERFORMANCE.md, "One reading a period"). On
// PostgreSQL it calls tideline_loop_work() (migration 0030), which runs
// LoopWorkQuery with a plan kept for the connection; SQLite runs the
// statement itself.
func ReadLoopWork(ctx context.Context, db bun.IDB) (LoopWork, error) {
	q := "SELECT * FROM tideline_loop_work()"
	if database.Of(db).Name() != database.PostgreSQL {
		q = LoopWorkQuery(db)
	}
	var w LoopWork
	if err := db.NewRaw(q).Scan(ctx, &w); err != nil {
		return LoopWork{}, fmt.Errorf("read the loop's work: %w", err)
	}
	return w, nil
}

// loopWorkQueries holds LoopWorkQuery's statement by dialect name.
var loopWorkQueries sync.Map

// LoopWorkQuery is the statement that reads LoopWork, in db's dialect:
// it takes no argument, so its text is built once. Migration 0030 keeps
// PostgreSQL's copy in tideline_loop_work(); a change here needs a
// migration that replaces the function.
func LoopWorkQuery(db bun.IDB) string {
	dialect := db.Dialect().Name().String()
	if q, ok := loopWorkQueries.Load(dialect); ok {
		return q.(string)
	}
	q := buildLoopWorkQuery(db)
	loopWorkQueries.Store(dialect, q)
	return q
}

func buildLoopWorkQuery(db bun.IDB) string {
	first := func(q *bun.SelectQuery, column string) *bun.SelectQuery {
		return q.Column(column).Where(column + " IS NOT NULL").OrderExpr(column + " ASC").Limit(1)
	}
	runs := func(statuses ...string) *bun.SelectQuery {
		return db.NewSelect().Model((*Run)(nil)).Where("r.status IN (?)", bun.In(statuses))
	}
	return db.NewSelect().
		ColumnExpr("(?) AS earliest", db.NewSelect().TableExpr("workflow_schedule_due AS d").Column("d.next_fire_at").
			OrderExpr("d.next_fire_at ASC").Limit(1)).
		ColumnExpr("EXISTS (?) AS buffered", db.NewSelect().Model((*Schedule)(nil)).ColumnExpr("1").
			Where("s.status = ? AND s.buffer_depth > 0", StatusActive)).
		ColumnExpr("(?) AS pause_ends", first(timedPauses(db), "s.paused_until")).
		ColumnExpr("EXISTS (?) AS health_pending", db.NewSelect().Model((*HealthPending)(nil)).ColumnExpr("1")).
		ColumnExpr("EXISTS (?) AS failing", failing(db).ColumnExpr("1")).
		ColumnExpr("(?) AS start_deadline", first(startDeadlines(db), "r.start_deadline_at")).
		ColumnExpr("(?) AS lease_expires", first(runs(RunRunning), "r.lease_expires_at")).
		ColumnExpr("(?) AS execution_deadline", first(runs(ActiveRunStatuses...), "r.execution_deadline_at")).
		ColumnExpr("(?) AS run_deadline", first(runs(ActiveRunStatuses...), "r.run_deadline_at")).
		ColumnExpr("(?) AS cancel_requested", first(runs(ActiveRunStatuses...), "r.cancel_requested_at")).
		ColumnExpr("(?) AS delivery_next", first(deliveriesToSend(db), "d.next_attempt_at")).
		ColumnExpr("(?) AS backfill_next", first(runningBackfills(db), "b.next_work_at")).
		String()
}
