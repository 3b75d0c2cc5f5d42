// Package worker runs workflow handlers in a Go process against Tideline's
// HTTP worker protocol (CONTRACT §7): it long-polls for runs, runs each with the
// handler registered for its workflow type, heartbeats while it runs, and
// reports the result. Workers in other languages speak the same protocol;
// Client is the protocol on its own.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Protocol limits the server enforces (scheduling.MaxLeaseSeconds and
// friends); checking them in New turns a misconfiguration into an error at
// start-up instead of a poll loop the server keeps rejecting.
const (
	maxLeaseSeconds = 3600
	maxPollLimit    = 100
	maxPollWait     = 30 * time.Second
)

// Defaults for zero Options fields.
const (
	defaultLeaseSeconds = 30
	defaultPollWait     = 20 * time.Second
)

// Handler runs one attempt of a workflow run (run.Attempt counts from 1;
// a retried run comes back with the same ID and the next number). Its ctx
// ends when the run is cancelled (an operator or an overlap policy asked),
// when the server no longer considers the run this worker's, or when the
// worker stops. A non-nil output is stored as JSON; an error fails the
// attempt with its message and type (see WithFailureType), and the server
// retries it when the schedule's retry policy allows — unless the error is
// marked NonRetryable.
type Handler func(ctx context.Context, run Run) (output any, err error)

// Options configures a Worker. Zero values get the defaults noted.
type Options struct {
	BaseURL    string // the server's root URL (required)
	Token      string // bearer token; sent when set
	Namespace  string // empty: the server's fixed namespace, else "default"
	Connection string // empty: "default"
	Queue      string // empty: "default"
	// WorkerID names this process in run history; default "<hostname>-<pid>".
	WorkerID string
	// Concurrency is how many handlers may run at once; default 1.
	Concurrency int
	// LeaseSeconds is the lease asked for on poll and heartbeat; default 30.
	// Heartbeats are sent every third of it.
	LeaseSeconds int
	// PollWait is how long one poll may wait for work (long poll, whole
	// seconds, 1 s to 30 s); default 20 s.
	PollWait time.Duration
	// StopGrace is how long running handlers may go on after Run's ctx
	// ends (polling stops at once) before their context is cancelled with
	// cause ErrWorkerStopped; default 0, at once. Results that come in
	// within it are reported as usual.
	StopGrace  time.Duration
	HTTPClient *http.Client
	Logger     *slog.Logger // default: discard
	// Backoff is the pause before retrying after the attempt-th consecutive
	// failure (attempt ≥ 1); default exponential from 0.5 s to 30 s with
	// jitter. Tests inject a tiny one.
	Backoff func(attempt int) time.Duration
}

// Worker polls one queue and runs registered handlers. Register handlers
// before calling Run.
type Worker struct {
	client       *Client
	logger       *slog.Logger
	workerID     string
	connection   string
	queue        string
	concurrency  int
	leaseSeconds int
	pollWait     time.Duration
	stopGrace    time.Duration
	backoff      func(attempt int) time.Duration

	mu       sync.RWMutex
	handlers map[string]Handler
	fallback Handler
	running  atomic.Bool
}

// New returns a worker, or an error when the options cannot work.
func New(opts Options) (*Worker, error) {
	// The ID is chosen before the client exists: the server requires it on
	// every heartbeat and result, not only on poll.
	if opts.WorkerID == "" {
		host, _ := os.Hostname() // only a label: an unknown host still makes a unique-enough ID with the pid
		opts.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	client, err := NewClient(ClientOptions{BaseURL: opts.BaseURL, Token: opts.Token, Namespace: opts.Namespace, WorkerID: opts.WorkerID, HTTPClient: opts.HTTPClient})
	if err != nil {
		return nil, err
	}
	w := &Worker{
		client: client, logger: opts.Logger, workerID: opts.WorkerID, connection: opts.Connection, queue: opts.Queue,
		concurrency: opts.Concurrency, leaseSeconds: opts.LeaseSeconds, pollWait: opts.PollWait, stopGrace: opts.StopGrace, backoff: opts.Backoff,
		handlers: map[string]Handler{},
	}
	if w.logger == nil {
		w.logger = slog.New(slog.DiscardHandler)
	}
	if w.concurrency == 0 {
		w.concurrency = 1
	}
	if w.leaseSeconds == 0 {
		w.leaseSeconds = defaultLeaseSeconds
	}
	if w.pollWait == 0 {
		w.pollWait = defaultPollWait
	}
	if w.backoff == nil {
		w.backoff = defaultBackoff
	}
	switch {
	case w.concurrency < 1:
		return nil, fmt.Errorf("worker: concurrency %d must be at least 1", opts.Concurrency)
	case w.leaseSeconds < 1 || w.leaseSeconds > maxLeaseSeconds:
		return nil, fmt.Errorf("worker: lease of %d seconds must be between 1 and %d", opts.LeaseSeconds, maxLeaseSeconds)
	case w.pollWait < 0 || w.pollWait > maxPollWait:
		return nil, fmt.Errorf("worker: poll wait %s must be between 1s and %s", opts.PollWait, maxPollWait)
	case w.stopGrace < 0:
		return nil, fmt.Errorf("worker: stop grace %s must not be negative", opts.StopGrace)
	}
	// The server long-polls in whole seconds; a shorter wait would make it
	// answer at once and the loop spin.
	w.pollWait = max(w.pollWait, time.Second)
	return w, nil
}

// defaultBackoff doubles from 0.5 s up to 30 s, then draws within the upper
// half so that workers that failed together do not retry together.
func defaultBackoff(attempt int) time.Duration {
	d := min(500*time.Millisecond<<min(max(attempt-1, 0), 6), 30*time.Second)
	return d/2 + rand.N(d/2+1)
}

// Register sets the handler for a workflow type. It panics on an empty type,
// a nil handler or a type registered twice: all are programming errors that
// would otherwise surface as runs failing at random later.
func (w *Worker) Register(workflowType string, fn Handler) {
	if workflowType == "" || fn == nil {
		panic("worker: Register needs a workflow type and a handler")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.handlers[workflowType]; dup {
		panic(fmt.Sprintf("worker: workflow type %q registered twice", workflowType))
	}
	w.handlers[workflowType] = fn
}

// RegisterFallback sets the handler of every workflow type that has none of
// its own (a command runner matching types by pattern, say). It panics on a
// nil handler or a second fallback.
func (w *Worker) RegisterFallback(fn Handler) {
	if fn == nil {
		panic("worker: RegisterFallback needs a handler")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fallback != nil {
		panic("worker: fallback handler registered twice")
	}
	w.fallback = fn
}

func (w *Worker) handler(workflowType string) Handler {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if fn, ok := w.handlers[workflowType]; ok {
		return fn
	}
	return w.fallback
}

// pollStopGrace is how long a poll in flight when the worker stops may
// still answer. Its runs may already be claimed on the server — a draining
// server answers every waiting poll at once (SPEC §20) — and a poll
// aborted now would strand them until their leases lapse; runs that do
// arrive are run (or failed as worker_stopped) like any others.
const pollStopGrace = time.Second

// poll asks for runs with a context that outlives ctx by pollStopGrace.
func (w *Worker) poll(ctx context.Context, req PollRequest) ([]Run, error) {
	pollCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(pollStopGrace, cancel) })
	defer stop()
	return w.client.Poll(pollCtx, req)
}

// Run polls and runs handlers until ctx ends, then stops polling, lets the
// running handlers go on for the StopGrace, cancels those still running,
// waits for them and reports their results. It returns nil when stopped by
// ctx, and an error when the server rejects the poll itself (bad namespace,
// token or URL): retrying that would never succeed. A poll in flight when ctx ends may
// still answer for pollStopGrace.
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("worker: Run is already running")
	}
	defer w.running.Store(false)

	var handlers sync.WaitGroup
	// Handlers get a context of their own, detached from ctx, so that they
	// outlive the poll loop by the grace, and so that stopping on a
	// rejected poll cancels them too.
	runCtx, stopRuns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer w.drain(&handlers, stopRuns)
	// Each slot is one handler that may run; a poll asks for as many runs as
	// there are free slots, so claimed runs never wait in this process while
	// their lease ticks away.
	slots := make(chan struct{}, w.concurrency)
	failures := 0
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		free := 1
	fill:
		for free < min(w.concurrency, maxPollLimit) {
			select {
			case slots <- struct{}{}:
				free++
			default:
				break fill
			}
		}

		started := time.Now()
		runs, err := w.poll(ctx, PollRequest{
			Connection: w.connection, Queue: w.queue, WorkerID: w.workerID,
			Limit: free, LeaseSeconds: w.leaseSeconds, Wait: w.pollWait,
		})
		for range max(free-len(runs), 0) {
			<-slots
		}
		for i, run := range runs {
			if i >= free {
				// The server handed out more than asked; the runs are ours
				// now, so run them as soon as a slot frees up.
				slots <- struct{}{}
			}
			handlers.Go(func() {
				defer func() { <-slots }()
				w.execute(runCtx, run, started)
			})
		}

		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			var apiErr *APIError
			if errors.As(err, &apiErr) && !apiErr.Temporary() {
				w.logger.Error("worker: the server rejected the poll; stopping", "err", err)
				return err
			}
			failures++
			w.logger.Warn("worker: poll failed; backing off", "err", err, "attempt", failures)
			if !pause(ctx, max(w.backoff(failures), min(retryAfter(err), maxPollWait))) {
				return nil
			}
			continue
		case len(runs) == 0 && time.Since(started) < w.pollWait/2:
			// The server should have held an empty poll for the wait; an
			// early empty answer (a proxy, an old server) would otherwise
			// turn this loop into a busy loop.
			failures++
			w.logger.Warn("worker: empty poll came back early; backing off", "attempt", failures)
		default:
			failures = 0
			continue
		}
		if !pause(ctx, w.backoff(failures)) {
			return nil
		}
	}
}

// drain ends Run: the handlers still running get the stop grace to finish,
// then their context is cancelled, and Run waits until each has reported.
func (w *Worker) drain(handlers *sync.WaitGroup, stopRuns context.CancelCauseFunc) {
	done := make(chan struct{})
	go func() {
		handlers.Wait()
		close(done)
	}()
	if w.stopGrace > 0 {
		t := time.NewTimer(w.stopGrace)
		select {
		case <-done:
		case <-t.C:
			w.logger.Warn("worker: the stop grace is over; cancelling the handlers still running", "grace", w.stopGrace)
		}
		t.Stop()
	}
	stopRuns(ErrWorkerStopped)
	<-done
}

// pause waits d, or less when ctx ends first (then it reports false).
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
