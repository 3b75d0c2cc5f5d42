package scheduling

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// outcomes collects the runs a transaction finished, in order, so that
// their schedules' health is written as the transaction's last statements
// (models.ApplyHealth explains why last). Every path that ends a run —
// workers, the deadline sweep, operators, overlap policies — goes through
// finish, which adds the run here.
type outcomes struct{ runs []models.Run }

func (o *outcomes) add(run *models.Run) {
	if run.WorkflowScheduleID != nil {
		o.runs = append(o.runs, *run)
	}
}

// mark and rollback forget the runs of a savepoint that was rolled back.
func (o *outcomes) mark() int         { return len(o.runs) }
func (o *outcomes) rollback(mark int) { o.runs = o.runs[:mark] }

// flush applies the collected outcomes and forgets them.
func (o *outcomes) flush(ctx context.Context, tx bun.IDB, now time.Time) error {
	if len(o.runs) == 0 {
		return nil
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
	return models.ApplyHealth(ctx, tx, deltas, now)
}

func unsuccessful(status string) bool {
	return status == models.RunFailed || status == models.RunTimedOut
}
