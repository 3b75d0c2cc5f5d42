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

// writer applies the rows that fires create: per started fire a run
// (which is also its instance, and carries its ScheduleTriggered
// provenance), per fire an audit event, and the schedule row. Single
// operations write each row at once. A tick batch defers them and writes
// each table with one statement at the end: a few statements per batch
// instead of several per fire is what lets one replica fire thousands per
// second.
type writer struct {
	tx       bun.IDB
	deferred bool
	// taken holds the instance IDs this batch creates, so a second fire of
	// the same ID in one batch is already_started without a round trip.
	taken     map[instanceKey]bool
	runs      []*models.StartedRun
	events    []*models.ScheduleEvent
	schedules []*models.Schedule
	recent    []*models.RecentActionRow
}

type instanceKey struct{ namespace, instanceID string }

func immediateWriter(tx bun.IDB) *writer { return &writer{tx: tx} }

// deferredWriter starts a batch. It does not look up which instance IDs
// exist already: a scheduled fire's ID names its schedule and occurrence,
// which only an anomaly (a clock stepped back, a schedule re-created under
// an old ID) repeats. The batch's insert notices such a run instead and
// the batch is redone carefully, where the fire is skipped already_started.
// A lookup per batch cost a query, and one that read a whole namespace of
// instances whenever the planner's statistics lagged behind a growing table.
func deferredWriter(tx bun.IDB) *writer {
	return &writer{tx: tx, deferred: true, taken: map[instanceKey]bool{}}
}

// insertRun starts the run unless its instance ID is taken (inserted is
// false then, and nothing was written).
func (w *writer) insertRun(ctx context.Context, r *models.StartedRun) (bool, error) {
	if !w.deferred {
		inserted, err := models.InsertRun(ctx, w.tx, r)
		if inserted && err == nil {
			noteStarted(ctx, &r.Run)
		}
		return inserted, err
	}
	key := instanceKey{r.Namespace, r.InstanceID}
	if w.taken[key] {
		return false, nil
	}
	w.taken[key] = true
	w.runs = append(w.runs, r)
	noteStarted(ctx, &r.Run) // a batch that fails to flush is rolled back and wakes nobody
	return true, nil
}

func (w *writer) insertScheduleEvent(ctx context.Context, e *models.ScheduleEvent) error {
	if !w.deferred {
		return models.InsertScheduleEvent(ctx, w.tx, e)
	}
	w.events = append(w.events, e)
	return nil
}

// saveSchedule writes the FireColumns of a schedule a tick processed, at
// once or with the batch: the claims read the schedule without the
// columns firing does not use (models.forFiring), so nothing else may be
// written back.
func (w *writer) saveSchedule(ctx context.Context, s *models.Schedule) error {
	if !w.deferred {
		return models.UpdateSchedules(ctx, w.tx, []*models.Schedule{s})
	}
	w.schedules = append(w.schedules, s)
	return nil
}

func (w *writer) saveRecent(ctx context.Context, r *models.RecentActionRow) error {
	if !w.deferred {
		return models.SaveRecentActions(ctx, w.tx, []*models.RecentActionRow{r})
	}
	w.recent = append(w.recent, r)
	return nil
}

// flush writes a deferred batch in foreign-key order.
func (w *writer) flush(ctx context.Context) error {
	if !w.deferred {
		return nil
	}
	inserted, err := models.InsertRuns(ctx, w.tx, w.runs)
	if err != nil {
		return err
	}
	if inserted != len(w.runs) {
		return fmt.Errorf("insert runs: %d of %d were new: %w", inserted, len(w.runs), errBatchConflict)
	}
	if err := models.InsertScheduleEvents(ctx, w.tx, w.events); err != nil {
		return err
	}
	if err := models.UpdateSchedules(ctx, w.tx, w.schedules); err != nil {
		return err
	}
	return models.SaveRecentActions(ctx, w.tx, w.recent)
}
