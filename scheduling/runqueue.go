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
	if r.Connection == HTTPConnection {
		v.Add("connection", fmt.Sprintf("%q holds the runs of HTTP targets, which the server executes itself", HTTPConnection))
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
// by other replicas, until Wait passes or ctx ends. Once the process drains
// (Drain) it claims nothing and answers at once.
func (s *Service) Poll(ctx context.Context, req PollRequest) ([]models.Run, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	drained := s.draining.channel()
	s.draining.pollStarted()
	defer s.draining.pollDone()
	var deadline <-chan time.Time
	if req.Wait > 0 {
		timer := s.clock.NewTimer(req.Wait)
		defer timer.Stop()
		deadline = timer.C()
	}
	key := queueKey{req.Namespace, req.Connection, req.Queue}
	for {
		if s.Draining() {
			return []models.Run{}, nil
		}
		wake, stop := s.wakeups.wait(key)
		runs, err := s.claim(ctx, req)
		if err != nil && ctx.Err() != nil {
			// The worker hung up (or stops) mid-claim: the claim rolled
			// back, and nobody waits for an answer.
			return []models.Run{}, nil
		}
		if err != nil || len(runs) > 0 || deadline == nil {
			stop()
			return runs, err
		}
		recheck := s.clock.NewTimer(pollRecheck)
		select {
		case <-ctx.Done():
			recheck.Stop()
			stop()
			return []models.Run{}, nil
		case <-deadline:
			recheck.Stop()
			stop()
			return []models.Run{}, nil
		case <-drained:
			recheck.Stop()
			stop()
			return []models.Run{}, nil
		case <-wake:
		case <-recheck.C():
		}
		recheck.Stop()
		stop()
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
			if err := s.startAttempt(ctx, tx, out, &runs[i], now, time.Duration(req.LeaseSeconds)*time.Second, req.WorkerID, req.Principal); err != nil {
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

// startAttempt leases a claimed pending run to its holder: a worker, or
// the HTTP target executor (executor.go).
func (s *Service) startAttempt(ctx context.Context, tx bun.IDB, out *outcomes, run *models.Run, now time.Time, lease time.Duration, workerID, principal string) error {
	run.Status = models.RunRunning
	// The pending run already names this attempt (SPEC §10); a row
	// written before migration 0014 may say 0.
	run.Attempt = max(run.Attempt, 1)
	run.AvailableAt = nil
	run.StartDeadlineAt = nil // started: nothing to report
	run.StartedAt = ptrTime(now)
	run.LeaseExpiresAt = ptrTime(now.Add(lease))
	if workerID != "" {
		run.WorkerID = &workerID
	}
	if principal != "" {
		run.WorkerPrincipal = &principal
	}
	return s.transition(ctx, tx, out, run, now, RunEventStarted, map[string]any{"worker_id": workerID, "attempt": run.Attempt})
}

// wakeups lets long-polling workers in this process hear about new runs:
// a commit that started n runs of a queue wakes at most n of the pollers
// waiting on that queue, oldest first. (Waking every poller for every run
// made 1,000 long polls from one token cost every fire 1,000 claims, and
// raised another namespace's trigger latency 30-fold, issue 36.) A woken
// poller that finds nothing — another replica's worker was quicker — waits
// again at the back of the line; runs started on other replicas are found
// by the pollRecheck.
type wakeups struct {
	mu      sync.Mutex
	waiting map[queueKey][]*waiter
	// watching are waiters for any new run of a connection, whatever its
	// namespace and queue: the HTTP target executor, which serves every
	// queue of HTTPConnection. Each commit that starts such runs wakes
	// them all (one executor a process).
	watching map[string]chan struct{}
}

type waiter struct{ ch chan struct{} }

// queueKey names a queue of the run queue: what a poll claims from.
type queueKey struct{ namespace, connection, queue string }

// wait lines up a waiter on key's queue; stop takes it out of the line
// (a no-op once it was woken).
func (w *wakeups) wait(key queueKey) (<-chan struct{}, func()) {
	wt := &waiter{ch: make(chan struct{})}
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[queueKey][]*waiter{}
	}
	w.waiting[key] = append(w.waiting[key], wt)
	w.mu.Unlock()
	return wt.ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		line := w.waiting[key]
		for i, other := range line {
			if other == wt {
				line = append(line[:i], line[i+1:]...)
				break
			}
		}
		if len(line) == 0 {
			delete(w.waiting, key)
		} else {
			w.waiting[key] = line
		}
	}
}

// watch returns a channel closed by the next commit that starts a run on
// connection (see watching).
func (w *wakeups) watch(connection string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching == nil {
		w.watching = map[string]chan struct{}{}
	}
	ch, ok := w.watching[connection]
	if !ok {
		ch = make(chan struct{}) // shared until the next wake: watching again adds nothing
		w.watching[connection] = ch
	}
	return ch
}

// wake wakes, for each queue, as many waiters as the commit started runs
// there, and every watcher of the connections it started runs on.
func (w *wakeups) wake(started *startedRuns) {
	if started == nil {
		return
	}
	counts := started.take()
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, n := range counts {
		if ch, ok := w.watching[key.connection]; ok {
			close(ch)
			delete(w.watching, key.connection)
		}
		line := w.waiting[key]
		n = min(n, len(line))
		for _, wt := range line[:n] {
			close(wt.ch)
		}
		if rest := line[n:]; len(rest) == 0 {
			delete(w.waiting, key)
		} else {
			w.waiting[key] = append([]*waiter(nil), rest...)
		}
	}
}

// waitingPolls is how many long polls wait in this process.
func (w *wakeups) waitingPolls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, line := range w.waiting {
		n += len(line)
	}
	return n
}

// WaitingPolls is how many long polls wait for runs in this process
// (metrics, and tests that wait for pollers to be in line).
func (s *Service) WaitingPolls() int { return s.wakeups.waitingPolls() }

// startedRuns counts the runs a transaction starts, per queue, so that
// its commit wakes the pollers of those queues only. The writer adds to
// the one the context carries (withStartedRuns); work that starts no runs
// carries none.
type startedRuns struct {
	mu     sync.Mutex
	counts map[queueKey]int
}

func (r *startedRuns) add(key queueKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts == nil {
		r.counts = map[queueKey]int{}
	}
	r.counts[key]++
}

func (r *startedRuns) take() map[queueKey]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.counts
	r.counts = nil
	return out
}

type startedRunsKey struct{}

// withStartedRuns returns ctx carrying a fresh count of started runs.
func withStartedRuns(ctx context.Context) (context.Context, *startedRuns) {
	r := &startedRuns{}
	return context.WithValue(ctx, startedRunsKey{}, r), r
}

// noteStarted counts a run inserted under ctx (see startedRuns).
func noteStarted(ctx context.Context, r *models.Run) {
	if started, ok := ctx.Value(startedRunsKey{}).(*startedRuns); ok {
		started.add(queueKey{r.Namespace, r.Connection, r.Queue})
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
	output = BoundOutput(output)
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
	// Cut once, here: every copy below (the run, its events, the
	// notifications) stores the bounded value (reported.go).
	f.Message, f.Type = BoundMessage(f.Message), BoundType(f.Type)
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
