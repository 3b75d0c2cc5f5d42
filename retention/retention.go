// Package retention keeps the tables flat for years (CONTRACT §13, SPEC
// §19): the loop's retention and audit compaction tasks, each one bounded
// pass at a time, and the vacuum of the tables they delete from. It needs
// the database and the time only; the loop (scheduling.Loop) runs its
// passes as maintenance tasks beside the fires.
package retention

import (
	"context"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/models"
)

// Sweeper runs retention and compaction passes. One serves a process: the
// compaction cursor and the vacuum schedule are its own.
type Sweeper struct {
	db         bun.IDB
	clock      func() time.Time
	swept      sweptTables
	compaction compactCursor
}

// New is a sweeper of db reading the time from now.
func New(db bun.IDB, now func() time.Time) *Sweeper { return &Sweeper{db: db, clock: now} }

// now is the time in UTC microseconds, as the rows store it.
func (s *Sweeper) now() time.Time { return s.clock().UTC().Truncate(time.Microsecond) }

// Policy is what retention keeps (CONTRACT §13): finished runs (with their
// history and instances) and settled notification deliveries older than
// KeepRuns are deleted, and deleted schedules with their whole stream
// PurgeDeletedAfter their deletion. A schedule's latest run is never
// deleted; the audit stream of a live schedule only loses its fire and
// skip events older than KeepRuns (Compact). An instance deleted with its
// run no longer blocks its occurrence: a backfill older than KeepRuns may
// start it again.
type Policy struct {
	KeepRuns          time.Duration // 0 keeps runs forever
	PurgeDeletedAfter time.Duration // 0 never purges deleted schedules
	// Batch is how many runs (or rows of a purged schedule) one statement
	// deletes at most; default 200, which keeps every statement at or
	// under 1,000 rows (a run has a handful of history events).
	Batch int
	// Budget bounds one pass; default 200 ms. What is left waits for the
	// next pass, so a backlog (after turning retention on) drains a little
	// every pass instead of stalling the loop.
	Budget time.Duration
}

// Retain runs one bounded retention pass and says what it deleted. The
// tables it deleted from are vacuumed every five minutes at most
// (sweptTables), so their space is reused for new rows.
func (s *Sweeper) Retain(ctx context.Context, r Policy) (models.DeletedRows, error) {
	d, err := s.retain(ctx, r)
	if verr := s.swept.vacuum(ctx, s.db, s.now(), d); err == nil {
		err = verr
	}
	return d, err
}

func (s *Sweeper) retain(ctx context.Context, r Policy) (models.DeletedRows, error) {
	var total models.DeletedRows
	if r.KeepRuns <= 0 && r.PurgeDeletedAfter <= 0 {
		return total, nil
	}
	if r.Batch <= 0 {
		r.Batch = 200
	}
	if r.Budget <= 0 {
		r.Budget = 200 * time.Millisecond
	}
	started := s.now()
	inBudget := func() bool { return ctx.Err() == nil && s.now().Sub(started) < r.Budget }
	if r.KeepRuns > 0 {
		before := s.now().Add(-r.KeepRuns)
		for inBudget() {
			var d models.DeletedRows
			err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				runs, err := models.ExpiredRuns(ctx, tx, before, r.Batch)
				if err != nil {
					return err
				}
				d, err = models.DeleteRuns(ctx, tx, runs)
				return err
			})
			if err != nil {
				return total, err
			}
			total.Add(d)
			if d.Runs < r.Batch {
				break
			}
		}
		for inBudget() {
			n, err := models.DeleteSettledDeliveries(ctx, s.db, before, r.Batch)
			if err != nil {
				return total, err
			}
			total.Deliveries += n
			if n < r.Batch {
				break
			}
		}
	}
	if r.PurgeDeletedAfter > 0 {
		before := s.now().Add(-r.PurgeDeletedAfter)
		for inBudget() {
			ids, err := models.PurgeableSchedules(ctx, s.db, before, 1)
			if err != nil || len(ids) == 0 {
				return total, err
			}
			// One bounded part per transaction; until the schedule is
			// gone, the next round lists it again and goes on.
			var d models.DeletedRows
			err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				var err error
				d, _, err = models.PurgeSchedulePart(ctx, tx, ids[0], r.Batch)
				return err
			})
			if err != nil {
				return total, err
			}
			total.Add(d)
		}
	}
	return total, nil
}

// sweptVacuumEvery is how often the tables retention deleted rows from are
// vacuumed at most. Each vacuum reads the runs table's indexes whole, so
// fewer, larger ones cost less: every minute, a sweep running beside the
// fires of another replica slowed them by 12.6 % (BenchmarkRetentionSteady
// "during"); the space of five minutes of deleted runs waits for reuse.
const sweptVacuumEvery = 5 * time.Minute

// sweptTables vacuums the tables retention deleted rows from (Dialect.
// Vacuum). A deleted row's space is reused only once a vacuum has seen
// it; autovacuum waits until a fifth of a table is dead — hours of
// retention on a table holding 30 days — or does not run at all where it
// is turned off, and meanwhile every new run takes new pages. Vacuuming
// the runs table each minute stays cheap: it reads only the pages changed
// since the last one (the visibility map), and PostgreSQL skips the
// index pass while few pages hold dead rows.
type sweptTables struct {
	mu       sync.Mutex
	pending  models.DeletedRows
	vacuumed time.Time
}

func (t *sweptTables) vacuum(ctx context.Context, db bun.IDB, now time.Time, d models.DeletedRows) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending.Add(d)
	if t.pending == (models.DeletedRows{}) || now.Sub(t.vacuumed) < sweptVacuumEvery || ctx.Err() != nil {
		return nil
	}
	t.vacuumed = now
	p := t.pending
	t.pending = models.DeletedRows{}
	for _, table := range p.Tables() {
		if err := database.Of(db).Vacuum(ctx, db, table); err != nil {
			return err
		}
	}
	return nil
}
