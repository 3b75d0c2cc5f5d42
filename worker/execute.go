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

// Why a handler's context ended, told apart with context.Cause.
var (
	errCancelRequested = errors.New("cancellation of the run was requested")
	errRunGone         = errors.New("the run is no longer running on the server")
	errHandlerReturned = errors.New("the handler returned")
)

// Reporting a result survives the worker stopping, within bounds: a result
// lost here costs a whole re-run (or a worker_lost failure) on the server.
const (
	reportTimeout  = 30 * time.Second
	reportAttempts = 5
)

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

// execute runs one claimed run to its reported end.
func (w *Worker) execute(ctx context.Context, run Run) {
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
		w.heartbeat(ctx, log, run, stopHeartbeats, cancel)
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
	case errors.Is(cause, errRunGone):
		// Terminated, timed out or lost: the server has the final word and
		// would refuse any report.
		log.Info("worker: run ended on the server while its handler ran", "handler_err", err)
		return
	case err == nil:
		// A handler that finished its work despite a cancellation request
		// did the work: record it.
		w.report(ctx, log, run, encodeOutput(output))
	case errors.Is(cause, errCancelRequested):
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
// has the run running.
func (w *Worker) heartbeat(ctx context.Context, log *slog.Logger, run Run, stop <-chan struct{}, cancel context.CancelCauseFunc) {
	// A third leaves room for two lost heartbeats before the lease expires.
	ticker := time.NewTicker(time.Duration(w.leaseSeconds) * time.Second / 3)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
		}
		hb, err := w.client.Heartbeat(ctx, run.ID, w.leaseSeconds)
		switch {
		case ctx.Err() != nil:
			return // the worker is stopping: not a failure worth a warning
		case runGone(err):
			log.Info("worker: the server no longer runs this run; cancelling its handler", "err", err)
			cancel(errRunGone)
			return
		case err != nil:
			// Transient: the next heartbeat may get through before the lease
			// runs out; if none does, the server fails the run (worker_lost).
			log.Warn("worker: heartbeat failed", "err", err)
		case hb.CancelRequested:
			log.Info("worker: cancellation requested; cancelling the handler")
			cancel(errCancelRequested)
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
		case errors.As(err, &apiErr) && !apiErr.Temporary(), attempt == reportAttempts:
			log.Error("worker: could not report the run's result", "err", err, "attempt", attempt)
			return
		}
		log.Warn("worker: reporting the run's result failed; retrying", "err", err, "attempt", attempt)
		if !pause(ctx, w.backoff(attempt)) {
			log.Error("worker: gave up reporting the run's result", "err", err)
			return
		}
	}
}
