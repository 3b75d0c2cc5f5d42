package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"
)

// Failure types the worker reports on its own.
const (
	FailureTypeDefault     = "error"                 // a handler error without a type
	FailureTypeCancelled   = "cancelled"             // the handler stopped after cancellation was requested
	FailureTypeUnknownType = "unknown_workflow_type" // no handler is registered for the run's type
	FailureTypePanic       = "panic"                 // the handler panicked
	FailureTypeBadOutput   = "invalid_output"        // the handler's output is not JSON-encodable
	FailureTypeStopped     = "worker_stopped"        // the worker stopped before the handler finished
)

// Why a handler's context ended: context.Cause(ctx) in a handler is one of
// these, so that a handler can wind down differently when its run was
// cancelled, lost or its worker is stopping.
var (
	// ErrCancelRequested: an operator or an overlap policy asked to cancel
	// the run; the handler's error is reported as type "cancelled".
	ErrCancelRequested = errors.New("cancellation of the run was requested")
	// ErrRunGone: the run is no longer this worker's — terminated, timed
	// out, or its lease expired (the server answered so, or no heartbeat got
	// through before the lease ran out). Nothing is reported: the server has
	// the final word, and may already run the next attempt elsewhere.
	ErrRunGone = errors.New("the run is no longer running on this worker")
	// ErrWorkerStopped: the worker stopped and its stop grace is over.
	ErrWorkerStopped = errors.New("the worker stopped")

	errHandlerReturned = errors.New("the handler returned")
)

// reportTimeout bounds how long a result is retried (transient failures:
// connection errors, 5xx such as 503 database_unavailable, honouring
// Retry-After). It survives the worker stopping: a result lost here costs a
// whole re-run (or a worker_lost failure) on the server; two minutes cover
// a database failover.
const reportTimeout = 2 * time.Minute

// maxReportPause caps one pause between report attempts, whatever the
// server's Retry-After says.
const maxReportPause = 15 * time.Second

// maxMessageBytes keeps a failure message (a stack trace, a dumped response)
// well below the server's 1 MiB request limit and readable in the console.
const maxMessageBytes = 8 << 10

// WithFailureType gives err a failure type, reported with the run's failure
// (e.g. "upstream_timeout"); errors may also implement
// interface{ FailureType() string } themselves.
func WithFailureType(err error, failureType string) error {
	if err == nil {
		return nil
	}
	return &typedError{err: err, typ: failureType}
}

// NonRetryable marks err so that the run ends with it at once instead of
// being retried by its schedule's retry policy: for failures a retry cannot
// mend (bad input, a permission denied). It keeps err's failure type.
//
//	return nil, worker.NonRetryable(fmt.Errorf("invoice %s: %w", id, errMalformed))
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &nonRetryableError{err}
}

type nonRetryableError struct{ err error }

func (e *nonRetryableError) Error() string { return e.err.Error() }
func (e *nonRetryableError) Unwrap() error { return e.err }

// IsNonRetryable reports whether err was marked with NonRetryable.
func IsNonRetryable(err error) bool {
	var nr *nonRetryableError
	return errors.As(err, &nr)
}

type typedError struct {
	err error
	typ string
}

func (e *typedError) Error() string       { return e.err.Error() }
func (e *typedError) Unwrap() error       { return e.err }
func (e *typedError) FailureType() string { return e.typ }

// failureType is the type err chose, else the default.
func failureType(err error) string {
	var typed interface{ FailureType() string }
	if errors.As(err, &typed) && typed.FailureType() != "" {
		return typed.FailureType()
	}
	return FailureTypeDefault
}

// result is what the worker tells the server about one run.
type result struct {
	output       json.RawMessage // when completed
	failed       bool
	message      string
	typ          string
	nonRetryable bool
}

func failure(typ, message string) result {
	if message == "" {
		message = typ // the server requires a message
	}
	if len(message) > maxMessageBytes {
		message = strings.ToValidUTF8(message[:maxMessageBytes], "") + "…"
	}
	return result{failed: true, message: message, typ: typ}
}

// execute runs one claimed run to its reported end. polledAt is when the
// poll that claimed it was sent: the lease runs from no later than that.
func (w *Worker) execute(ctx context.Context, run Run, polledAt time.Time) {
	log := w.logger.With("run_id", run.ID, "workflow_type", run.WorkflowType, "attempt", run.Attempt)
	fn := w.handler(run.WorkflowType)
	if fn == nil {
		log.Warn("worker: no handler for the workflow type")
		w.report(ctx, log, run, failure(FailureTypeUnknownType, fmt.Sprintf("no handler is registered for workflow type %q on worker %s", run.WorkflowType, w.workerID)))
		return
	}

	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopHeartbeats := make(chan struct{})
	heartbeats := make(chan struct{})
	go func() {
		defer close(heartbeats)
		w.heartbeat(ctx, log, run, polledAt, stopHeartbeats, cancel)
	}()

	log.Debug("worker: run started")
	output, err := call(hctx, fn, run)
	// Heartbeats go on until the handler returns, even after cancellation
	// was requested, so that a handler winding down keeps its lease.
	close(stopHeartbeats)
	<-heartbeats
	cancel(errHandlerReturned)
	cause := context.Cause(hctx)

	switch {
	case errors.Is(cause, ErrRunGone):
		// Terminated, timed out or lost: the server has the final word and
		// would refuse any report.
		log.Info("worker: run ended on the server while its handler ran", "handler_err", err)
		return
	case err == nil:
		// A handler that finished its work despite a cancellation request
		// did the work: record it.
		w.report(ctx, log, run, encodeOutput(output))
	case errors.Is(cause, ErrCancelRequested):
		w.report(ctx, log, run, failure(FailureTypeCancelled, err.Error()))
	case ctx.Err() != nil:
		w.report(ctx, log, run, failure(FailureTypeStopped, "worker "+w.workerID+" stopped before the run finished: "+err.Error()))
	default:
		res := failure(failureType(err), err.Error())
		res.nonRetryable = IsNonRetryable(err)
		w.report(ctx, log, run, res)
	}
}

// call runs the handler, turning a panic into an error so that one bad run
// fails that run instead of the whole process and every run in it.
func call(ctx context.Context, fn Handler, run Run) (output any, err error) {
	defer func() {
		if p := recover(); p != nil {
			output, err = nil, WithFailureType(fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack()), FailureTypePanic)
		}
	}()
	return fn(ctx, run)
}

func encodeOutput(output any) result {
	if output == nil {
		return result{}
	}
	b, err := json.Marshal(output)
	if err != nil {
		return failure(FailureTypeBadOutput, "encode the handler's output as JSON: "+err.Error())
	}
	return result{output: b}
}

// heartbeat extends the lease every third of it until stop closes. It
// cancels the handler when the server asks for cancellation or no longer
// has the run running — or when no heartbeat got through before the lease
// ran out: the server then fails the attempt (worker_lost) and may hand the
// next one to another worker, so the handler must not go on beside it.
func (w *Worker) heartbeat(ctx context.Context, log *slog.Logger, run Run, polledAt time.Time, stop <-chan struct{}, cancel context.CancelCauseFunc) {
	lease := time.Duration(w.leaseSeconds) * time.Second
	// Measured on this machine's clock from when each request was sent, so
	// the local deadline is never later than the server's.
	leaseUntil := polledAt.Add(lease)
	// A third leaves room for two lost heartbeats before the lease expires.
	ticker := time.NewTicker(lease / 3)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
		sent := time.Now()
		// One hanging heartbeat must not outlast the lease it is renewing.
		hctx, cancelCall := context.WithTimeout(ctx, max(lease/3, time.Second))
		hb, err := w.client.Heartbeat(hctx, run.ID, w.leaseSeconds)
		cancelCall()
		switch {
		case ctx.Err() != nil:
			return // the worker is stopping: not a failure worth a warning
		case runGone(err):
			log.Info("worker: the server no longer runs this run; cancelling its handler", "err", err)
			cancel(ErrRunGone)
			return
		case err != nil && !time.Now().Before(leaseUntil):
			log.Warn("worker: no heartbeat got through before the lease expired; cancelling the handler", "err", err)
			cancel(ErrRunGone)
			return
		case err != nil:
			// Transient: the next heartbeat may get through before the lease
			// runs out.
			log.Warn("worker: heartbeat failed", "err", err)
		case hb.CancelRequested:
			leaseUntil = sent.Add(lease)
			log.Info("worker: cancellation requested; cancelling the handler")
			cancel(ErrCancelRequested)
		default:
			leaseUntil = sent.Add(lease)
		}
	}
}

// report tells the server how the run ended, retrying transient failures.
// It uses a context detached from the worker's, because a worker that stops
// should still hand in the results it already has.
func (w *Worker) report(ctx context.Context, log *slog.Logger, run Run, res result) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		var err error
		if res.failed {
			err = w.client.Fail(ctx, run.ID, res.message, res.typ, res.nonRetryable)
		} else {
			err = w.client.Complete(ctx, run.ID, res.output)
		}
		var apiErr *APIError
		switch {
		case err == nil:
			if res.failed {
				log.Info("worker: run failed", "type", res.typ, "message", res.message)
			} else {
				log.Info("worker: run completed")
			}
			return
		case runGone(err):
			log.Info("worker: run ended on the server before its result was reported", "err", err)
			return
		case errors.As(err, &apiErr) && !apiErr.Temporary():
			log.Error("worker: could not report the run's result", "err", err, "attempt", attempt)
			return
		}
		log.Warn("worker: reporting the run's result failed; retrying", "err", err, "attempt", attempt)
		if !pause(ctx, min(max(w.backoff(attempt), retryAfter(err)), maxReportPause)) {
			log.Error("worker: gave up reporting the run's result", "err", err)
			return
		}
	}
}
