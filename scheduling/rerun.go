package scheduling

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// MaxRetryMatching bounds "retry all matching": one transaction retries at
// most this many runs; the rest wait for the next request.
const MaxRetryMatching = 500

// retryableStatuses are the ends an operator may retry: the run failed
// (its attempts spent, or a non-retryable error) or timed out. A
// cancelled or terminated run was stopped on purpose; run it again
// instead.
var retryableStatuses = []string{models.RunFailed, models.RunTimedOut}

// RetryRun gives a failed or timed-out run one more attempt, now: the same
// run goes back to pending with attempt + 1 (SPEC §10's numbering), its
// deadlines counted again from now (the execution deadline keeps its
// length), and a RunRetried event records who asked and why. The retry
// policy still applies to the new attempt; since its attempts are spent,
// a failure of this one ends the run again.
func (s *Service) RetryRun(ctx context.Context, namespace, runID string, cc *CommandContext) (*models.Run, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	var run *models.Run
	err := s.retryInTx(ctx, func(ctx context.Context, tx bun.Tx, now time.Time) error {
		locked, err := models.LockRun(ctx, tx, runID)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && locked.Namespace != namespace) {
			return runNotFound(namespace, runID)
		}
		if err != nil {
			return err
		}
		run = locked
		return s.retry(ctx, tx, run, now, cc)
	})
	return run, err
}

// RetryMatching retries the failed and timed-out runs a runs-list filter
// matches (statuses narrowed to those two), oldest first, at most
// MaxRetryMatching in one transaction; it returns how many it retried and
// whether more match.
func (s *Service) RetryMatching(ctx context.Context, f RunListFilter, cc *CommandContext) (retried int, more bool, err error) {
	if err := cc.validate(); err != nil {
		return 0, false, err
	}
	statuses := retryableStatuses
	if len(f.Statuses) > 0 {
		statuses = nil
		for _, st := range f.Statuses {
			if st == models.RunFailed || st == models.RunTimedOut {
				statuses = append(statuses, st)
			}
		}
		if len(statuses) == 0 {
			return 0, false, NewValidationError("status", "retry all matching takes failed and timed_out runs only")
		}
	}
	scheduleULID := ""
	if f.ScheduleID != "" {
		sch, err := s.Get(ctx, f.Namespace, f.ScheduleID)
		if err != nil {
			return 0, false, err
		}
		scheduleULID = sch.ID
	}
	err = s.retryInTx(ctx, func(ctx context.Context, tx bun.Tx, now time.Time) error {
		runs, err := models.LockRunsByStatus(ctx, tx, f.Namespace, scheduleULID, statuses, MaxRetryMatching+1)
		if err != nil {
			return err
		}
		if more = len(runs) > MaxRetryMatching; more {
			runs = runs[:MaxRetryMatching]
		}
		for i := range runs {
			if err := s.retry(ctx, tx, &runs[i], now, cc); err != nil {
				return err
			}
		}
		retried = len(runs)
		return nil
	})
	return retried, more, err
}

// retryInTx runs fn in one transaction and wakes the workers' long polls
// for the runs it sent back to pending once it commits.
func (s *Service) retryInTx(ctx context.Context, fn func(ctx context.Context, tx bun.Tx, now time.Time) error) error {
	txCtx, started := withStartedRuns(ctx)
	err := s.db.RunInTx(txCtx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(ctx, tx, s.now())
	})
	if err == nil {
		s.wakeups.wake(started)
	}
	return err
}

// retry sends one locked run back to pending for one more attempt.
func (s *Service) retry(ctx context.Context, tx bun.Tx, run *models.Run, now time.Time, cc *CommandContext) error {
	if run.Status != models.RunFailed && run.Status != models.RunTimedOut {
		return conflict(CodeRunNotRetryable, "run %q is %s: only a failed or timed-out run can be retried; run it again instead", run.ID, run.Status)
	}
	ended := run.Status
	if run.ExecutionDeadlineAt != nil {
		// The execution's length, counted again from now: the old deadline
		// has passed, or the retry would time out at once.
		run.ExecutionDeadlineAt = ptrTime(now.Add(run.ExecutionDeadlineAt.Sub(run.CreatedAt)))
	}
	run.RunDeadlineAt = nil
	if t := run.RunTimeoutSeconds; t != nil {
		run.RunDeadlineAt = ptrTime(now.Add(time.Duration(*t) * time.Second))
	}
	run.Status = models.RunPending
	run.Attempt++
	run.FinishedAt, run.AvailableAt, run.StartDeadlineAt = nil, nil, nil
	run.LeaseExpiresAt, run.WorkerID, run.WorkerPrincipal, run.CancelRequestedAt = nil, nil, nil, nil
	payload := map[string]any{"attempt": run.Attempt, "after": ended}
	if cc != nil {
		payload["source"], payload["actor"] = cc.Source, cc.Actor
		if cc.Reason != "" {
			payload["reason"] = cc.Reason
		}
	}
	if err := s.transition(ctx, tx, nil, run, now, RunEventRetried, payload); err != nil {
		return err
	}
	noteStarted(ctx, run)
	return nil
}

// RunAgain starts a new manual run of the schedule that started runID,
// with that run's input (not the action's input now): "run this
// occurrence again". The overlap policy applies as to a trigger, and the
// fire is audited as one (ScheduleTriggered, outcome manual).
func (s *Service) RunAgain(ctx context.Context, namespace, runID string, cc *CommandContext) (FireResult, error) {
	run, err := s.GetRun(ctx, namespace, runID)
	if err != nil {
		return FireResult{}, err
	}
	if run.ScheduleID == nil {
		return FireResult{}, conflict(CodeRunNoSchedule, "run %q was not started by a schedule", runID)
	}
	scheduleID := *run.ScheduleID
	var result FireResult
	_, err = s.mutate(ctx, namespace, scheduleID, cc, func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		if sch.Status == models.StatusDeleted || (run.WorkflowScheduleID != nil && *run.WorkflowScheduleID != sch.ID) {
			return conflict(CodeRunNoSchedule, "run %q's schedule %q is deleted", runID, scheduleID)
		}
		var err error
		result, err = s.fire(ctx, tx, rec, sch, fireRequest{
			kind: kindManual, instanceID: s.manualInstanceID(sch.ScheduleID, rec.now), occurrence: rec.now,
			policy: sch.OverlapPolicy, input: run.Input,
		})
		return err
	})
	if err != nil {
		var nf *NotFoundError
		if errors.As(err, &nf) {
			return FireResult{}, conflict(CodeRunNoSchedule, "run %q's schedule %q no longer exists", runID, scheduleID)
		}
		return FireResult{}, err
	}
	return result, nil
}
