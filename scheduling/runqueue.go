package scheduling

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// The run queue: pending runs claimed by workers under a lease (Poll),
// leases extended (Heartbeat), and runs ended by their worker (CompleteRun,
// FailRun). The HTTP face of it is handlers/worker_api.go; the contract,
// docs/CONTRACT.md §7.

// Run queue limits.
const (
	DefaultLeaseSeconds = 30
	MaxLeaseSeconds     = 3600
	MaxPollLimit        = 100
	MaxPollWait         = 30 * time.Second
)

// PollRequest asks for pending runs of one queue.
type PollRequest struct {
	Namespace  string
	Connection string
	Queue      string
	WorkerID   string
	// Principal is the authenticated caller (the token's name): the lease
	// is held by it and WorkerID together.
	Principal    string
	Limit        int
	LeaseSeconds int
	Wait         time.Duration // long-poll: how long to wait when nothing is pending
}

func (r *PollRequest) validate() error {
	v := &ValidationError{Code: CodeValidationFailed}
	if r.Connection == "" {
		r.Connection = "default"
	}
	if r.Queue == "" {
		r.Queue = "default"
	}
	if r.Limit == 0 {
		r.Limit = 1
	}
	if r.LeaseSeconds == 0 {
		r.LeaseSeconds = DefaultLeaseSeconds
	}
	if r.Limit < 1 || r.Limit > MaxPollLimit {
		v.Add("limit", fmt.Sprintf("must be between 1 and %d", MaxPollLimit))
	}
	if r.LeaseSeconds < 1 || r.LeaseSeconds > MaxLeaseSeconds {
		v.Add("lease_seconds", fmt.Sprintf("must be between 1 and %d", MaxLeaseSeconds))
	}
	if r.Wait < 0 || r.Wait > MaxPollWait {
		v.Add("wait_seconds", "must be between 0 and 30")
	}
	if len(r.WorkerID) > MaxNameLength {
		v.Add("worker_id", fmt.Sprintf("must be at most %d characters", MaxNameLength))
	}
	return v.OrNil()
}

// Poll claims pending runs atomically: each becomes running, leased to the
// worker until LeaseExpiresAt. With Wait set it long-polls: it re-checks when
// this process starts a run, and at least every half second for runs started
// by other replicas, until Wait passes or ctx ends.
func (s *Service) Poll(ctx context.Context, req PollRequest) ([]models.Run, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	var deadline <-chan time.Time
	if req.Wait > 0 {
		timer := s.clock.NewTimer(req.Wait)
		defer timer.Stop()
		deadline = timer.C()
	}
	for {
		wake := s.wakeups.channel()
		runs, err := s.claim(ctx, req)
		if err != nil || len(runs) > 0 || deadline == nil {
			return runs, err
		}
		recheck := s.clock.NewTimer(pollRecheck)
		select {
		case <-ctx.Done():
			recheck.Stop()
			return []models.Run{}, nil
		case <-deadline:
			recheck.Stop()
			return []models.Run{}, nil
		case <-wake:
		case <-recheck.C():
		}
		recheck.Stop()
	}
}

// pollRecheck is how often a long poll looks for runs that another replica
// started (this process's own wake it at once).
const pollRecheck = 500 * time.Millisecond

func (s *Service) claim(ctx context.Context, req PollRequest) ([]models.Run, error) {
	var claimed []models.Run
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		now := s.now()
		runs, err := models.ClaimPending(ctx, tx, now, req.Namespace, req.Connection, req.Queue, req.Limit)
		if err != nil {
			return err
		}
		// The claimed runs' writes go to the database as one batch: a
		// poll of ten runs is then one round trip, not ten.
		out := &outcomes{batch: models.NewBatch(tx)}
		for i := range runs {
			run := &runs[i]
			run.Status = models.RunRunning
			run.Attempt++
			run.AvailableAt = nil
			run.StartDeadlineAt = nil // started: nothing to report
			run.StartedAt = ptrTime(now)
			run.LeaseExpiresAt = ptrTime(now.Add(time.Duration(req.LeaseSeconds) * time.Second))
			if req.WorkerID != "" {
				run.WorkerID = &req.WorkerID
			}
			if req.Principal != "" {
				run.WorkerPrincipal = &req.Principal
			}
			if err := s.transition(ctx, tx, out, run, now, RunEventStarted, map[string]any{"worker_id": req.WorkerID, "attempt": run.Attempt}); err != nil {
				return err
			}
		}
		if err := out.batch.Exec(ctx, tx); err != nil {
			return err
		}
		claimed = runs
		return nil
	})
	if claimed == nil {
		claimed = []models.Run{}
	}
	return claimed, err
}

// wakeups lets long-polling workers in this process hear about new runs.
type wakeups struct {
	mu sync.Mutex
	ch chan struct{}
}

func (w *wakeups) channel() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

// broadcast wakes every waiter once.
func (w *wakeups) broadcast() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// lockActiveRun locks a run of the namespace for a worker or operator
// action; finished runs are a conflict.
func (s *Service) lockActiveRun(ctx context.Context, tx bun.IDB, namespace, runID string) (*models.Run, error) {
	run, err := models.LockRun(ctx, tx, runID)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && run.Namespace != namespace) {
		return nil, runNotFound(namespace, runID)
	}
	if err != nil {
		return nil, err
	}
	if !run.Active() {
		return nil, conflict(CodeRunNotRunning, "run %q is %s", runID, run.Status)
	}
	return run, nil
}

// LeaseHolder names who acts on a leased run: the authenticated principal
// and the worker ID it polled with. Both must match the lease, so one token
// cannot finish another's runs, nor a worker another worker's.
type LeaseHolder struct {
	Principal string
	WorkerID  string
}

func (h LeaseHolder) validate() error {
	switch {
	case h.WorkerID == "":
		return NewValidationError("worker_id", "is required: the worker_id this worker polled with")
	case len(h.WorkerID) > MaxNameLength:
		return NewValidationError("worker_id", fmt.Sprintf("must be at most %d characters", MaxNameLength))
	}
	return nil
}

// holds reports whether h holds run's lease. A lease taken without a
// worker ID (or before principals were recorded) binds only what it named.
func (h LeaseHolder) holds(run *models.Run) bool {
	return (run.WorkerPrincipal == nil || *run.WorkerPrincipal == h.Principal) &&
		(run.WorkerID == nil || *run.WorkerID == h.WorkerID)
}

// runChange runs fn on one locked run in a transaction. holder is nil for
// operator actions (cancel, terminate), which need no lease.
func (s *Service) runChange(ctx context.Context, namespace, runID string, holder *LeaseHolder, requireRunning bool, fn func(ctx context.Context, tx bun.Tx, out *outcomes, run *models.Run, now time.Time) error) (*models.Run, error) {
	if holder != nil {
		if err := holder.validate(); err != nil {
			return nil, err
		}
	}
	var changed *models.Run
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		run, err := s.lockActiveRun(ctx, tx, namespace, runID)
		if err != nil {
			return err
		}
		if requireRunning && run.Status != models.RunRunning {
			return conflict(CodeRunNotRunning, "run %q is %s, not running", runID, run.Status)
		}
		if holder != nil && !holder.holds(run) {
			return conflict(CodeRunHeldByAnotherWorker, "run %q is held by another worker", runID)
		}
		changed = run
		// One run changes here: its writes and its schedule's health go
		// to the database as one batch when fn is done.
		ended := outcomes{batch: models.NewBatch(tx)}
		now := s.now()
		if err := fn(ctx, tx, &ended, run, now); err != nil {
			return err
		}
		return ended.flush(ctx, tx, now)
	})
	return changed, err
}

// Heartbeat extends a running run's lease and tells the worker whether an
// operator (or an overlap policy) asked it to stop.
func (s *Service) Heartbeat(ctx context.Context, namespace, runID string, holder LeaseHolder, leaseSeconds int) (*models.Run, error) {
	if leaseSeconds == 0 {
		leaseSeconds = DefaultLeaseSeconds
	}
	if leaseSeconds < 1 || leaseSeconds > MaxLeaseSeconds {
		return nil, NewValidationError("lease_seconds", fmt.Sprintf("must be between 1 and %d", MaxLeaseSeconds))
	}
	return s.runChange(ctx, namespace, runID, &holder, true, func(ctx context.Context, tx bun.Tx, out *outcomes, run *models.Run, now time.Time) error {
		run.LeaseExpiresAt = ptrTime(now.Add(time.Duration(leaseSeconds) * time.Second))
		run.UpdatedAt = now
		return models.UpdateRun(ctx, tx, run)
	})
}

// CompleteRun records a run's successful result.
func (s *Service) CompleteRun(ctx context.Context, namespace, runID string, holder LeaseHolder, output json.RawMessage) (*models.Run, error) {
	if len(output) > 0 && !json.Valid(output) {
		return nil, NewValidationError("output", "must be valid JSON")
	}
	return s.runChange(ctx, namespace, runID, &holder, true, func(ctx context.Context, tx bun.Tx, out *outcomes, run *models.Run, now time.Time) error {
		run.Output = output
		return s.finish(ctx, tx, out, run, now, models.RunCompleted, RunEventCompleted, map[string]any{})
	})
}

// Failure is how a worker says an attempt failed.
type Failure struct {
	Message string
	Type    string
	// NonRetryable ends the run at once, whatever its retry policy says
	// (the worker knows a retry cannot help).
	NonRetryable bool
}

// FailRun records the failure of a run's attempt; the run is retried when
// its retry policy allows (see failAttempt). A worker that stops because it
// was asked to cancel reports type "cancelled"; the run then ends cancelled.
func (s *Service) FailRun(ctx context.Context, namespace, runID string, holder LeaseHolder, f Failure) (*models.Run, error) {
	if f.Message == "" {
		return nil, NewValidationError("message", "is required")
	}
	return s.runChange(ctx, namespace, runID, &holder, true, func(ctx context.Context, tx bun.Tx, out *outcomes, run *models.Run, now time.Time) error {
		if f.Type == "cancelled" && run.CancelRequestedAt != nil {
			return s.finish(ctx, tx, out, run, now, models.RunCancelled, RunEventCancelled, map[string]any{"reason": f.Message})
		}
		return s.failAttempt(ctx, tx, out, run, now, attemptFailure{
			errorType: f.Type, message: f.Message, retryable: !f.NonRetryable,
			status: models.RunFailed, eventType: RunEventFailed, payload: map[string]any{"message": f.Message, "type": f.Type}})
	})
}

// CancelRun asks a run to stop gracefully (a pending run is cancelled at once).
func (s *Service) CancelRun(ctx context.Context, namespace, runID string, cc *CommandContext) (*models.Run, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	return s.runChange(ctx, namespace, runID, nil, false, func(ctx context.Context, tx bun.Tx, out *outcomes, run *models.Run, now time.Time) error {
		if run.CancelRequestedAt != nil {
			return conflict(CodeCancelAlreadyRequested, "cancellation of run %q was already requested", runID)
		}
		return s.requestCancel(ctx, tx, out, now, run.ID, operatorReason("cancel", cc))
	})
}

// TerminateRun stops a run at once.
func (s *Service) TerminateRun(ctx context.Context, namespace, runID string, cc *CommandContext) (*models.Run, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	return s.runChange(ctx, namespace, runID, nil, false, func(ctx context.Context, tx bun.Tx, out *outcomes, run *models.Run, now time.Time) error {
		return s.terminate(ctx, tx, out, now, run.ID, operatorReason("terminate", cc))
	})
}

func operatorReason(action string, cc *CommandContext) string {
	reason := action + " requested"
	if cc != nil && cc.Actor != "" {
		reason += " by " + cc.Actor
	}
	if cc != nil && cc.Reason != "" {
		reason += ": " + cc.Reason
	}
	return reason
}
