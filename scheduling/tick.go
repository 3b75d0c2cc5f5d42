package scheduling

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// Tick outcomes besides the fire outcomes.
const (
	OutcomeDrained = "drained"
	OutcomeFailed  = "failed"
)

// TickRow reports what one tick did to one schedule.
type TickRow struct {
	ScheduleID     string     `json:"schedule_id"`
	Namespace      string     `json:"namespace"`
	Outcome        string     `json:"outcome"` // triggered | buffered | skipped | drained | failed
	InstanceID     string     `json:"instance_id,omitempty"`
	RunID          string     `json:"run_id,omitempty"`
	Reason         string     `json:"reason,omitempty"`
	OccurrenceTime *time.Time `json:"occurrence_time,omitempty"`
	LastFiredAt    *time.Time `json:"last_fired_at,omitempty"`
	NextFireAt     *time.Time `json:"next_fire_at,omitempty"`
}

// DefaultTickLimit is how many schedules one tick phase claims at most.
const DefaultTickLimit = 100

// Tick is one evaluation pass: phase 1 drains one buffered fire per
// schedule whose run has finished; phase 2 fires every due active schedule,
// oldest first. Each phase is one transaction over its claimed batch (one
// commit per batch is what makes thousands of fires per second possible);
// a savepoint per schedule keeps one bad schedule from failing the batch.
func (s *Service) Tick(ctx context.Context, limit int) ([]TickRow, error) {
	if limit <= 0 {
		limit = DefaultTickLimit
	}
	drained, err := s.drain(ctx, limit)
	if err != nil {
		return nil, err
	}
	fired, err := s.fireDue(ctx, limit)
	if err != nil {
		return drained, err
	}
	return append(drained, fired...), nil
}

// phase is one kind of batch work of a tick: which schedules it claims,
// and how it processes one of them.
type phase struct {
	claim   func(ctx context.Context, tx bun.Tx, now time.Time) ([]models.ClaimedSchedule, error)
	process func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) (TickRow, error)
	// onError records a failed fire so that the schedule still moves on.
	onError func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule, cause error) (TickRow, error)
}

// runPhase first tries the fast path: one transaction, every row written
// by a few multi-row statements. If anything in the batch fails, the batch
// is rolled back and redone carefully, one savepoint per schedule, so one
// bad schedule costs its own fire and nobody else's.
func (s *Service) runPhase(ctx context.Context, p phase) ([]TickRow, error) {
	batchCtx, started := withStartedRuns(ctx)
	rows, err := s.runBatch(batchCtx, p, true)
	if err != nil && ctx.Err() == nil {
		s.logger.Debug("fast batch failed; retrying one schedule at a time", "err", err)
		started.take() // rolled back
		rows, err = s.runBatch(batchCtx, p, false)
	}
	if err != nil {
		return nil, err
	}
	s.wakeups.wake(started) // long-polling workers: new runs are committed
	return rows, nil
}

func (s *Service) runBatch(ctx context.Context, p phase, fast bool) ([]TickRow, error) {
	var rows []TickRow
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if fast {
			rows, err = s.fastBatch(ctx, tx, p, s.now())
			return err
		}
		rows, err = s.carefulBatch(ctx, tx, p, s.now())
		return err
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// fastBatch claims a batch and processes it with every row deferred to a
// few multi-row statements at the end. Any error leaves the transaction
// to be rolled back by the caller.
func (s *Service) fastBatch(ctx context.Context, tx bun.Tx, p phase, now time.Time) ([]TickRow, error) {
	claimed, err := p.claim(ctx, tx, now)
	if err != nil || len(claimed) == 0 {
		return nil, err
	}
	w := deferredWriter(tx)
	rec := &recorder{w: w, ids: s.ids, now: now, cc: schedulerContext()}
	rows := make([]TickRow, 0, len(claimed))
	for i := range claimed {
		row, err := p.process(ctx, tx, rec, &claimed[i])
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	if err := w.flush(ctx); err != nil {
		return nil, err
	}
	return rows, rec.ended.flush(ctx, tx, now)
}

// carefulBatch claims a batch and processes each schedule under its own
// savepoint, recording a failed fire instead of failing the batch.
func (s *Service) carefulBatch(ctx context.Context, tx bun.Tx, p phase, now time.Time) ([]TickRow, error) {
	claimed, err := p.claim(ctx, tx, now)
	if err != nil || len(claimed) == 0 {
		return nil, err
	}
	rec := &recorder{w: immediateWriter(tx), ids: s.ids, now: now, cc: schedulerContext()}
	var rows []TickRow
	for i := range claimed {
		original := cloneClaimed(claimed[i])
		mark := rec.ended.mark()
		row, err := savepoint(ctx, tx, func() (TickRow, error) { return p.process(ctx, tx, rec, &claimed[i]) })
		if err != nil {
			rec.ended.rollback(mark)
			s.logger.Error("schedule fire failed", "namespace", original.Namespace, "schedule_id", original.ScheduleID, "err", err)
			row, err = savepoint(ctx, tx, func() (TickRow, error) { return p.onError(ctx, tx, rec, &original, err) })
			if err != nil {
				// Even bookkeeping failed: leave the row for the next tick.
				s.logger.Error("record fire failure", "schedule_id", original.ScheduleID, "err", err)
				continue
			}
		}
		rows = append(rows, row)
	}
	return rows, rec.ended.flush(ctx, tx, now)
}

// savepoint runs fn so that its statements can be undone alone.
func savepoint[T any](ctx context.Context, tx bun.Tx, fn func() (T, error)) (T, error) {
	var zero T
	if _, err := tx.ExecContext(ctx, "SAVEPOINT tideline_fire"); err != nil {
		return zero, fmt.Errorf("savepoint: %w", err)
	}
	v, err := fn()
	if err != nil {
		if _, rbErr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT tideline_fire"); rbErr != nil {
			return zero, fmt.Errorf("rollback to savepoint after %v: %w", err, rbErr)
		}
		return zero, err
	}
	if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT tideline_fire"); err != nil {
		return zero, fmt.Errorf("release savepoint: %w", err)
	}
	return v, nil
}

// cloneClaimed copies what processing mutates, so a failed attempt can be
// retried from the state that is still in the database.
func cloneClaimed(c models.ClaimedSchedule) models.ClaimedSchedule {
	c.BufferedActions = append([]models.BufferedAction(nil), c.BufferedActions...)
	return c
}

func (s *Service) drain(ctx context.Context, limit int) ([]TickRow, error) {
	return s.runPhase(ctx, phase{
		claim: func(ctx context.Context, tx bun.Tx, _ time.Time) ([]models.ClaimedSchedule, error) {
			return models.ClaimDrainable(ctx, tx, limit)
		},
		process: func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) (TickRow, error) {
			next := sch.BufferedActions[0]
			sch.BufferedActions = sch.BufferedActions[1:]
			sch.BufferDepth = len(sch.BufferedActions)
			res, err := s.fire(ctx, tx, rec, sch, fireRequest{
				kind: kindDrained, instanceID: next.InstanceID, occurrence: next.OccurrenceTime, policy: sch.OverlapPolicy,
			})
			if err != nil {
				return TickRow{}, err
			}
			return s.saveRow(ctx, rec, sch, res, next.OccurrenceTime, OutcomeDrained)
		},
		onError: func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule, cause error) (TickRow, error) {
			// Drop the fire that cannot start, so the buffer keeps moving.
			dropped := sch.BufferedActions[0]
			sch.BufferedActions = sch.BufferedActions[1:]
			sch.BufferDepth = len(sch.BufferedActions)
			return s.failRow(ctx, rec, sch, dropped.OccurrenceTime, cause)
		},
	})
}

func (s *Service) fireDue(ctx context.Context, limit int) ([]TickRow, error) {
	return s.runPhase(ctx, s.duePhase(func(ctx context.Context, tx bun.Tx, now time.Time) ([]models.ClaimedSchedule, error) {
		return models.ClaimDue(ctx, tx, now, limit, startsAnyway)
	}))
}

// duePhase fires the schedules claim returns at their next fire time.
func (s *Service) duePhase(claim func(ctx context.Context, tx bun.Tx, now time.Time) ([]models.ClaimedSchedule, error)) phase {
	return phase{
		claim: claim,
		process: func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) (TickRow, error) {
			compiled, err := rec.compile(ctx, s, tx, &sch.Schedule)
			if err != nil {
				return TickRow{}, fmt.Errorf("compile stored spec: %w", err)
			}
			nominal := nominalOf(sch)
			// Missed-fire policy (CONTRACT §12): the drops are counted first, in
			// one event, then the kept occurrences fire in order, each
			// through the overlap policy.
			plan := planCatchup(compiled, nominal, rec.now, sch.CatchupWindowSeconds)
			if err := s.recordMissed(ctx, rec, sch, plan); err != nil {
				return TickRow{}, err
			}
			first := FireResult{Outcome: OutcomeSkipped, Reason: SkipMissed}
			occurrence := nominal
			for i, at := range plan.fire {
				fireAt := at
				if at.Equal(nominal) {
					fireAt = sch.NextFireAt.UTC() // the jittered instant it was due at
				}
				res, err := s.fire(ctx, tx, rec, sch, fireRequest{
					kind: kindScheduled, instanceID: scheduledInstanceID(sch.ScheduleID, at), occurrence: fireAt, policy: sch.OverlapPolicy,
				})
				if err != nil {
					return TickRow{}, err
				}
				if i == 0 {
					first, occurrence = res, fireAt
				}
				if sch.Status != models.StatusActive {
					break // max_runs exhausted it
				}
			}
			if sch.Status == models.StatusActive {
				if plan.resumeAt != nil {
					// The rest of the window waits for the next tick; it is
					// due already, so no jitter delays it further.
					at := *plan.resumeAt
					sch.NextNominalAt, sch.NextFireAt = &at, ptrTime(at)
				} else {
					s.scheduleNext(&sch.Schedule, compiled, rec.now)
				}
			}
			return s.saveRow(ctx, rec, sch, first, occurrence, "")
		},
		onError: func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule, cause error) (TickRow, error) {
			occurrence := sch.NextFireAt.UTC()
			compiled, err := rec.compile(ctx, s, tx, &sch.Schedule)
			if err != nil {
				compiled = nil // a spec that no longer compiles never fires again
			}
			s.scheduleNext(&sch.Schedule, compiled, rec.now)
			return s.failRow(ctx, rec, sch, occurrence, cause)
		},
	}
}

// nominalOf is the canonical time of a due schedule's next fire; it names
// the run, whatever jitter delayed the fire.
func nominalOf(sch *models.ClaimedSchedule) time.Time {
	if sch.NextNominalAt != nil {
		return sch.NextNominalAt.UTC()
	}
	return sch.NextFireAt.UTC()
}

// saveRow writes the schedule and reports the fire. outcome overrides the
// fire's outcome when it started a run (drained fires report "drained").
func (s *Service) saveRow(ctx context.Context, rec *recorder, sch *models.ClaimedSchedule, res FireResult, occurrence time.Time, startedOutcome string) (TickRow, error) {
	sch.UpdatedAt = rec.now
	if err := rec.w.saveSchedule(ctx, &sch.Schedule); err != nil {
		return TickRow{}, err
	}
	outcome := res.Outcome
	if outcome == OutcomeTriggered && startedOutcome != "" {
		outcome = startedOutcome
	}
	return TickRow{
		ScheduleID: sch.ScheduleID, Namespace: sch.Namespace, Outcome: outcome,
		InstanceID: res.InstanceID, RunID: res.RunID, Reason: res.Reason,
		OccurrenceTime: ptrTime(occurrence), LastFiredAt: sch.LastFiredAt, NextFireAt: sch.NextFireAt,
	}, nil
}

func (s *Service) failRow(ctx context.Context, rec *recorder, sch *models.ClaimedSchedule, occurrence time.Time, _ error) (TickRow, error) {
	sch.StartFailuresCount++
	sch.UpdatedAt = rec.now
	if err := rec.w.saveSchedule(ctx, &sch.Schedule); err != nil {
		return TickRow{}, err
	}
	return TickRow{
		ScheduleID: sch.ScheduleID, Namespace: sch.Namespace, Outcome: OutcomeFailed, Reason: "fire_failed", // the cause is logged, not shown: it may hold SQL
		OccurrenceTime: ptrTime(occurrence), LastFiredAt: sch.LastFiredAt, NextFireAt: sch.NextFireAt,
	}, nil
}
