package scheduling

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// outcomes collects the runs a transaction finished, in order, so that
// their schedules' health is written as the transaction's last statements
// (models.AddHealth explains why last). Every path that ends a run —
// workers, the deadline sweep, operators, overlap policies — goes through
// finish, which adds the run here. It also collects the transaction's
// other notification facts (late fires, pauses, backfills): flush turns
// them and the unsuccessful run ends into outbox rows in the same
// transaction (CONTRACT §11).
type outcomes struct {
	runs    []models.Run
	notices []notice
	// batch, when set, collects the transaction's run writes too, so that
	// flush sends them with the health in one round trip. Only for a
	// transaction without savepoints (a rolled-back savepoint could not
	// take back what the batch holds).
	batch *models.Batch
}

// note adds a notification fact.
func (o *outcomes) note(n notice) { o.notices = append(o.notices, n) }

func (o *outcomes) add(run *models.Run) {
	if run.WorkflowScheduleID != nil {
		o.runs = append(o.runs, *run)
	}
}

type outcomesMark struct{ runs, notices int }

// mark and rollback forget the runs and facts of a savepoint that was
// rolled back.
func (o *outcomes) mark() outcomesMark { return outcomesMark{len(o.runs), len(o.notices)} }
func (o *outcomes) rollback(m outcomesMark) {
	o.runs, o.notices = o.runs[:m.runs], o.notices[:m.notices]
}

// flush writes the collected notifications and applies the outcomes to
// health (last, see models.AddHealth), then forgets them.
func (o *outcomes) flush(ctx context.Context, tx bun.IDB, now time.Time) error {
	notices := o.notices
	for i := range o.runs {
		if n, ok := runNotice(&o.runs[i]); ok {
			notices = append(notices, n)
		}
	}
	o.notices = nil
	if err := enqueueNotices(ctx, tx, now, notices); err != nil {
		return err
	}
	b := o.batch
	if b == nil {
		b = models.NewBatch(tx)
	}
	if len(o.runs) == 0 {
		return b.Exec(ctx, tx)
	}
	index := map[string]int{}
	var deltas []models.HealthDelta
	for i := range o.runs {
		run := &o.runs[i]
		id := *run.WorkflowScheduleID
		at, ok := index[id]
		if !ok {
			at = len(deltas)
			index[id] = at
			deltas = append(deltas, models.HealthDelta{ScheduleULID: id})
		}
		d := &deltas[at]
		switch {
		case run.Status == models.RunCompleted:
			d.Reset, d.ConsecutiveAdd = true, 0
		case unsuccessful(run.Status):
			d.Failures++
			d.ConsecutiveAdd++
		}
		d.Finished = append(d.Finished, run)
	}
	o.runs = nil
	if err := models.AddHealth(b, tx, deltas, now); err != nil {
		return err
	}
	return b.Exec(ctx, tx)
}

func unsuccessful(status string) bool {
	return status == models.RunFailed || status == models.RunTimedOut
}
