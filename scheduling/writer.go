package scheduling

import (
	"context"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// errBatchConflict means a batch met a row it did not expect (another
// replica started the same instance between the check and the insert); the
// batch is rolled back and redone one schedule at a time.
var errBatchConflict = errors.New("batch conflict")

// writer applies the rows that fires create. Single operations write each
// row at once. A tick batch defers them and writes each table with one
// multi-row statement at the end: a few statements per batch instead of
// several per fire is what lets one replica fire thousands per second.
type writer struct {
	tx       bun.IDB
	deferred bool
	// taken holds the instance IDs this batch creates, so a second fire of
	// the same ID in one batch is already_started without a round trip.
	taken     map[instanceKey]bool
	instances []*models.Instance
	runs      []*models.Run
	runEvents []*models.RunEvent
	events    []*models.ScheduleEvent
	schedules []*models.Schedule
}

type instanceKey struct{ namespace, instanceID string }

func immediateWriter(tx bun.IDB) *writer { return &writer{tx: tx} }

// deferredWriter starts a batch. It does not look up which instance IDs
// exist already: a scheduled fire's ID names its schedule and occurrence,
// which only an anomaly (a clock stepped back, a schedule re-created under
// an old ID) repeats. The multi-row insert notices such a row instead and
// the batch is redone carefully, where the fire is skipped already_started.
// A lookup per batch cost a query, and one that read a whole namespace of
// instances whenever the planner's statistics lagged behind a growing table.
func deferredWriter(tx bun.IDB) *writer {
	return &writer{tx: tx, deferred: true, taken: map[instanceKey]bool{}}
}

func (w *writer) insertInstance(ctx context.Context, i *models.Instance) (bool, error) {
	if !w.deferred {
		return models.InsertInstance(ctx, w.tx, i)
	}
	key := instanceKey{i.Namespace, i.InstanceID}
	if w.taken[key] {
		return false, nil
	}
	w.taken[key] = true
	w.instances = append(w.instances, i)
	return true, nil
}

func (w *writer) insertRun(ctx context.Context, r *models.Run, first *models.RunEvent) error {
	if !w.deferred {
		if err := models.InsertRun(ctx, w.tx, r); err != nil {
			return err
		}
		return models.InsertRunEvent(ctx, w.tx, first)
	}
	w.runs = append(w.runs, r)
	w.runEvents = append(w.runEvents, first)
	return nil
}

func (w *writer) insertScheduleEvent(ctx context.Context, e *models.ScheduleEvent) error {
	if !w.deferred {
		return models.InsertScheduleEvent(ctx, w.tx, e)
	}
	w.events = append(w.events, e)
	return nil
}

func (w *writer) saveSchedule(ctx context.Context, s *models.Schedule) error {
	if !w.deferred {
		return models.UpdateSchedule(ctx, w.tx, s)
	}
	w.schedules = append(w.schedules, s)
	return nil
}

// flush writes a deferred batch in foreign-key order.
func (w *writer) flush(ctx context.Context) error {
	if !w.deferred {
		return nil
	}
	if len(w.instances) > 0 {
		inserted, err := models.InsertInstances(ctx, w.tx, w.instances)
		if err != nil {
			return err
		}
		if inserted != len(w.instances) {
			return fmt.Errorf("insert instances: %d of %d were new: %w", inserted, len(w.instances), errBatchConflict)
		}
	}
	if err := models.InsertRuns(ctx, w.tx, w.runs); err != nil {
		return err
	}
	if err := models.InsertRunEvents(ctx, w.tx, w.runEvents); err != nil {
		return err
	}
	if err := models.InsertScheduleEvents(ctx, w.tx, w.events); err != nil {
		return err
	}
	return models.UpdateSchedules(ctx, w.tx, w.schedules)
}
