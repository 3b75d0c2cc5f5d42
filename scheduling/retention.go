package scheduling

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// Retention keeps the tables flat under steady firing (CONTRACT §13): finished
// runs (with their history and instances) and settled notification
// deliveries older than KeepRuns are deleted,
// and deleted schedules with their whole stream PurgeDeletedAfter their
// deletion. A schedule's latest run is never deleted; the audit stream of a
// live schedule is never touched. An instance deleted with its run no
// longer blocks its occurrence: a backfill older than KeepRuns may start
// it again.
type Retention struct {
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

// Retain runs one bounded retention pass and says what it deleted.
func (s *Service) Retain(ctx context.Context, r Retention) (models.DeletedRows, error) {
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
	started := s.clock.Now()
	inBudget := func() bool { return ctx.Err() == nil && s.clock.Now().Sub(started) < r.Budget }
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
