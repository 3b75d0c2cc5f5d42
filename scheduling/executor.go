package scheduling

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/egress"
	"github.com/tidelinehq/tideline/fairshare"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/notify"
)

// The HTTP target executor (CONTRACT §15): the server's own worker for the
// runs of HTTP targets. It claims them from the run queue like any worker —
// the same lease, attempt numbers, retry policy, deadlines and cancel rules,
// through the same transitions — and makes one request per attempt.
//
// Its slots are a fairshare.Pool: a pass claims from each (namespace, host)
// lane only what the pool lets that lane start now, so a hung target holds
// at most its lane's slots and never a claimed run it cannot start, and
// every namespace finds slots free. It runs in its own goroutine of the
// loop: a request never waits inside a scheduling pass.

// TargetConfig configures the executor. Zero values get defaults.
type TargetConfig struct {
	// AllowPrivate lets targets reach loopback, private and link-local
	// addresses (serve --allow-private-targets).
	AllowPrivate bool
	// Concurrency bounds the requests in flight (serve --http-concurrency,
	// DefaultHTTPConcurrency): at most half for one namespace, a quarter
	// for one namespace's host (fairshare.Limits).
	Concurrency int
	// WatchEvery is how often the runs in flight are checked for a cancel
	// request or an end decided elsewhere (a deadline, terminate);
	// DefaultTargetWatch when zero.
	WatchEvery time.Duration
	// OnAttempt, when set, observes every attempt (metrics): outcome is
	// completed, retry, failed or cancelled.
	OnAttempt func(namespace, outcome string, took time.Duration)
}

// Executor defaults.
const (
	DefaultHTTPConcurrency = 64
	DefaultTargetWatch     = time.Second
	// targetLeaseMargin is added to a target's timeout for the lease, so
	// the lease outlives any request the executor still waits for.
	targetLeaseMargin = 60 * time.Second
	// maxTargetBody is how much of an answer is kept as the run's output.
	maxTargetBody = 64 << 10
	// maxRetryAfter caps a Retry-After at the retry policy's own cap.
	maxRetryAfter = MaxRetryIntervalSecond * time.Second
	// targetRedirects is how many same-origin redirects are followed.
	targetRedirects = 5
	// laneScan bounds the lanes one pass reads.
	laneScan = 512
	// targetIdleLook is how long the executor waits, when no run of a
	// target was ready and none waits for a retry's time, before it looks
	// again for runs it was not woken for: those another replica (or
	// a serve without a loop) started and could not take itself. Its own
	// process wakes it at once, and a retry's time is known; looking every
	// pollRecheck was two statements an idle second.
	targetIdleLook = 2 * time.Second
)

func (c TargetConfig) withDefaults() TargetConfig {
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultHTTPConcurrency
	}
	if c.WatchEvery <= 0 {
		c.WatchEvery = DefaultTargetWatch
	}
	return c
}

// Why a request was stopped before it ended by itself.
var (
	errRunCancelled    = errors.New("cancel requested")
	errRunEnded        = errors.New("the run ended elsewhere (deadline, terminate or another holder)")
	errRedirectRefused = errors.New("redirect to another origin refused")
)

type executor struct {
	pool   *fairshare.Pool
	client *http.Client
	id     string // the worker_id of its leases

	mu       sync.Mutex
	inflight map[string]inflight
	cursor   int
	wg       sync.WaitGroup
}

type inflight struct {
	attempt int
	cancel  context.CancelCauseFunc
}

func newExecutor(s *Service) *executor {
	host, _ := os.Hostname()
	e := &executor{
		pool:     fairshare.New(fairshare.Limits{Total: s.targets.Concurrency}, s.clock.Now),
		id:       fmt.Sprintf("tideline-http/%s/%d/%s", host, os.Getpid(), strings.ToLower(s.ids.newAt(s.clock.Now())[18:])),
		inflight: map[string]inflight{},
	}
	transport := &http.Transport{
		Proxy:               nil, // a proxy would connect on our behalf to whatever the URL names
		DialContext:         egress.Dialer(10*time.Second, s.targets.AllowPrivate, "http target").DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: max(s.targets.Concurrency/4, 1),
		IdleConnTimeout:     90 * time.Second,
	}
	e.client = &http.Client{Transport: transport, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host) {
			return fmt.Errorf("%w: %s", errRedirectRefused, req.URL.Redacted())
		}
		if len(via) > targetRedirects {
			return fmt.Errorf("%w: more than %d redirects", errRedirectRefused, targetRedirects)
		}
		return nil
	}}
	return e
}

// TargetPool exposes the executor's slots (tests, metrics).
func (s *Service) TargetPool() *fairshare.Pool { return s.executor.pool }

// ObserveTargets sets the observer of HTTP target attempts (metrics).
// Call it before the loop starts: the executor reads it unguarded.
func (s *Service) ObserveTargets(fn func(namespace, outcome string, took time.Duration)) {
	s.targets.OnAttempt = fn
}

// RunTargets is the executor: it starts attempts while there is room and
// ready work, waking when runs are started, a slot frees or a retry may be
// due, and checks the runs in flight for cancellation. It returns when ctx
// ends, after the requests in flight have stopped.
func (s *Service) RunTargets(ctx context.Context, logger *slog.Logger) {
	e := s.executor
	watch := s.clock.NewTimer(s.targets.WatchEvery)
	defer func() {
		watch.Stop()
		e.wg.Wait()
	}()
	for {
		wake := s.wakeups.watch(HTTPConnection)
		_, next, err := s.startTargetAttempts(ctx)
		if err != nil && ctx.Err() == nil {
			logPassError(logger, "http target pass failed", err)
		}
		recheck := s.clock.NewTimer(next)
		select {
		case <-ctx.Done():
			recheck.Stop()
			return
		case <-wake:
		case <-e.pool.Freed():
		case <-recheck.C():
		case <-watch.C():
			s.watchTargets(ctx, logger)
			watch = s.clock.NewTimer(s.targets.WatchEvery)
		}
		recheck.Stop()
	}
}

// ExecuteTargetsOnce is one pass that waits for the attempts it started:
// what tests and `tideline tick` use to drive the executor step by step.
func (s *Service) ExecuteTargetsOnce(ctx context.Context) (int, error) {
	n, err := s.StartTargetAttempts(ctx)
	s.executor.wg.Wait()
	return n, err
}

// StartTargetAttempts claims the ready runs of HTTP targets that the pool
// has room for, fairly across lanes, and starts their requests. It returns
// how many it started.
func (s *Service) StartTargetAttempts(ctx context.Context) (int, error) {
	n, _, err := s.startTargetAttempts(ctx)
	return n, err
}

// startTargetAttempts is StartTargetAttempts that also says how long the
// executor may wait before it looks again unwoken: pollRecheck while runs
// were ready or the pool was full (a freed slot wakes it too), else until
// the earliest retry comes due, targetIdleLook at most.
func (s *Service) startTargetAttempts(ctx context.Context) (started int, next time.Duration, err error) {
	e := s.executor
	if e.pool.Free() == 0 {
		return 0, pollRecheck, nil
	}
	done, err := s.turns.background(ctx)
	if err != nil {
		return 0, pollRecheck, err
	}
	defer done()
	now := s.now()
	lanes, later, err := models.ReadyLanes(ctx, s.db, now, HTTPConnection, laneScan)
	if err != nil {
		return 0, pollRecheck, err
	}
	if len(lanes) == 0 {
		next = targetIdleLook
		if later != nil {
			next = max(min(next, later.Sub(now)), 0)
		}
		return 0, next, nil
	}
	n, err := s.startLanes(ctx, lanes)
	return n, pollRecheck, err
}

// startLanes claims ready runs of lanes that the pool has room for, fairly
// across them, and starts their requests; it returns how many it started.
func (s *Service) startLanes(ctx context.Context, lanes []models.Lane) (int, error) {
	e := s.executor
	// Slots one at a time round the lanes, from a point that moves every
	// pass: each lane gets its share of what is free, and no lane is
	// always served last.
	e.cursor++
	start := e.cursor % len(lanes)
	slots := make([][]*fairshare.Slot, len(lanes))
	for progress := true; progress; {
		progress = false
		for i := range lanes {
			at := (start + i) % len(lanes)
			if slot, ok := e.pool.Acquire(lanes[at].Namespace, lanes[at].Queue); ok {
				slots[at] = append(slots[at], slot)
				progress = true
			}
		}
	}
	type claimed struct {
		run    models.Run
		target *models.Target
		secret string
		slot   *fairshare.Slot
	}
	var started []claimed
	var now time.Time
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		started = started[:0]
		now = s.now()
		var runs []models.Run
		var runSlots []*fairshare.Slot
		for at, l := range lanes {
			if len(slots[at]) == 0 {
				continue
			}
			got, err := models.ClaimPending(ctx, tx, now, l.Namespace, HTTPConnection, l.Queue, len(slots[at]))
			if err != nil {
				return err
			}
			runs = append(runs, got...)
			runSlots = append(runSlots, slots[at][:len(got)]...)
		}
		if len(runs) == 0 {
			return nil
		}
		ulids := make([]string, 0, len(runs))
		for _, r := range runs {
			if r.WorkflowScheduleID != nil {
				ulids = append(ulids, *r.WorkflowScheduleID)
			}
		}
		schedules, err := models.SchedulesByID(ctx, tx, ulids)
		if err != nil {
			return err
		}
		secrets, err := models.ScheduleSecrets(ctx, tx, ulids)
		if err != nil {
			return err
		}
		out := &outcomes{batch: models.NewBatch(tx)}
		for i := range runs {
			run := &runs[i]
			var target *models.Target
			var secret string
			if run.WorkflowScheduleID != nil {
				if sch, ok := schedules[*run.WorkflowScheduleID]; ok && IsHTTP(sch.Action.Target) {
					target, secret = sch.Action.Target, secrets[sch.ID]
				}
			}
			timeout := DefaultTargetTimeout
			if target != nil {
				timeout = target.TimeoutSeconds
			}
			lease := time.Duration(timeout)*time.Second + targetLeaseMargin
			if err := s.startAttempt(ctx, tx, out, run, now, lease, e.id, ""); err != nil {
				return err
			}
			started = append(started, claimed{run: *run, target: target, secret: secret, slot: runSlots[i]})
		}
		return out.batch.Exec(ctx, tx)
	})
	used := map[*fairshare.Slot]bool{}
	if err == nil {
		for _, c := range started {
			used[c.slot] = true
		}
	}
	for _, list := range slots {
		for _, slot := range list {
			if !used[slot] {
				slot.Return()
			}
		}
	}
	if err != nil {
		return 0, err
	}
	for _, c := range started {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			s.executeAttempt(ctx, c.run, c.target, c.secret, c.slot)
		}()
	}
	return len(started), nil
}

// targetResult is how one request ended.
type targetResult struct {
	status     int // 0 when no answer came
	output     json.RawMessage
	errorType  string // "" on success
	message    string
	retryable  bool
	retryAfter time.Time
	// healthy is false for answers that count against the lane's breaker.
	healthy bool
}

// executeAttempt makes the attempt's request and records its end.
func (s *Service) executeAttempt(ctx context.Context, run models.Run, target *models.Target, secret string, slot *fairshare.Slot) {
	e := s.executor
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.mu.Lock()
	e.inflight[run.ID] = inflight{attempt: run.Attempt, cancel: cancel}
	e.mu.Unlock()
	began := s.clock.Now()
	var res targetResult
	if target == nil {
		res = targetResult{errorType: "target_missing", message: "the schedule is gone or its target is no longer http", healthy: true}
		slot.Return()
	} else {
		res = s.callTarget(reqCtx, &run, target, secret)
		slot.Release(res.healthy)
	}
	took := s.clock.Now().Sub(began)
	e.mu.Lock()
	delete(e.inflight, run.ID)
	e.mu.Unlock()

	cause := context.Cause(reqCtx)
	record := ctx
	switch {
	case errors.Is(cause, errRunEnded):
		return // another transition ended the attempt; nothing of ours to record
	case errors.Is(cause, errRunCancelled):
		res = targetResult{errorType: "cancelled", message: "cancel requested: the request was abandoned"}
	case ctx.Err() != nil:
		// The server is stopping: the attempt is over, and saying so now
		// lets the policy retry it at once instead of after the lease.
		var stop context.CancelFunc
		record, stop = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer stop()
		res = targetResult{errorType: "interrupted", message: "the server stopped during the request", retryable: true}
	}
	outcome, err := s.endTargetAttempt(record, &run, res, took)
	if err != nil {
		var c *ConflictError
		if !errors.As(err, &c) && !errors.As(err, new(*NotFoundError)) {
			s.logger.Error("record http target attempt", "run", run.ID, "err", err)
		}
		return
	}
	if s.targets.OnAttempt != nil {
		s.targets.OnAttempt(run.Namespace, outcome, took)
	}
}

// endTargetAttempt records how an attempt ended, as the lease holder.
func (s *Service) endTargetAttempt(ctx context.Context, run *models.Run, res targetResult, took time.Duration) (string, error) {
	extra := map[string]any{"duration_ms": took.Milliseconds()}
	if res.status != 0 {
		extra["http_status"] = res.status
	}
	outcome := "completed"
	holder := &LeaseHolder{WorkerID: s.executor.id}
	done, err := s.turns.background(ctx)
	if err != nil {
		return "", err
	}
	defer done()
	_, err = s.runChange(ctx, run.Namespace, run.ID, holder, true, func(ctx context.Context, tx bun.Tx, out *outcomes, r *models.Run, now time.Time) error {
		if r.Attempt != run.Attempt {
			return conflict(CodeRunHeldByAnotherWorker, "run %q moved on to attempt %d", run.ID, r.Attempt)
		}
		switch {
		case res.errorType == "":
			r.Output = res.output
			payload := map[string]any{"attempt": r.Attempt}
			for k, v := range extra {
				payload[k] = v
			}
			return s.finish(ctx, tx, out, r, now, models.RunCompleted, RunEventCompleted, payload)
		case res.errorType == "cancelled" && r.CancelRequestedAt != nil:
			outcome = "cancelled"
			return s.finish(ctx, tx, out, r, now, models.RunCancelled, RunEventCancelled, map[string]any{"reason": res.message})
		}
		err := s.failAttempt(ctx, tx, out, r, now, attemptFailure{
			errorType: res.errorType, message: res.message, retryable: res.retryable, notBefore: res.retryAfter, extra: extra,
			status: models.RunFailed, eventType: RunEventFailed, payload: map[string]any{"message": res.message, "type": res.errorType}})
		outcome = "failed"
		if r.Status == models.RunPending {
			outcome = "retry"
		}
		return err
	})
	return outcome, err
}

// targetRequest is the body of every request (CONTRACT §15).
type targetRequest struct {
	RunID          string          `json:"run_id"`
	InstanceID     string          `json:"instance_id"`
	ScheduleID     *string         `json:"schedule_id"`
	Namespace      string          `json:"namespace"`
	WorkflowType   string          `json:"workflow_type"`
	OccurrenceTime *string         `json:"occurrence_time"`
	Attempt        int             `json:"attempt"`
	Input          json.RawMessage `json:"input"`
}

// callTarget sends one attempt's request and maps the answer (CONTRACT §15).
func (s *Service) callTarget(ctx context.Context, run *models.Run, t *models.Target, secret string) targetResult {
	doc := targetRequest{RunID: run.ID, InstanceID: run.InstanceID, ScheduleID: run.ScheduleID, Namespace: run.Namespace,
		WorkflowType: run.WorkflowType, Attempt: run.Attempt, Input: run.Input}
	if run.OccurrenceTime != nil {
		at := FormatTime(*run.OccurrenceTime)
		doc.OccurrenceTime = &at
	}
	if len(doc.Input) == 0 {
		doc.Input = json.RawMessage("null")
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return targetResult{errorType: "request_invalid", message: fmt.Sprintf("encode request: %v", err), healthy: true}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(t.TimeoutSeconds)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, t.Method, t.URL, bytes.NewReader(body))
	if err != nil {
		return targetResult{errorType: "request_invalid", message: fmt.Sprintf("build request: %v", err), healthy: true}
	}
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "Tideline-Target/1")
	}
	req.Header.Set("Idempotency-Key", run.InstanceID)
	req.Header.Set("Tideline-Run-Id", run.ID)
	req.Header.Set("Tideline-Attempt", strconv.Itoa(run.Attempt))
	if secret != "" {
		req.Header.Set(notify.SignatureHeader, notify.Sign(secret, s.clock.Now(), body))
		if t.Auth == "bearer" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
	}
	resp, err := s.executor.client.Do(req)
	if err != nil {
		return transportFailure(ctx, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxTargetBody+1))
	if err != nil && len(answer) == 0 && resp.StatusCode/100 == 2 {
		return transportFailure(ctx, fmt.Errorf("read answer: %w", err))
	}
	return answerResult(resp, answer, s.now())
}

// transportFailure maps a request that got no answer.
func transportFailure(ctx context.Context, err error) targetResult {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // the method and URL are known; keep the reason
	}
	switch {
	case errors.Is(err, errRedirectRefused):
		return targetResult{errorType: "redirect_refused", message: err.Error(), healthy: true}
	case errors.Is(err, egress.ErrPrivateTarget):
		return targetResult{errorType: "target_refused", message: err.Error() + " (start the server with " + AllowPrivateTargetsFlag + " to allow it)", healthy: true}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return targetResult{errorType: "timeout", message: "no complete answer within the target's timeout", retryable: true}
	}
	return targetResult{errorType: "connection", message: err.Error(), retryable: true}
}

// answerResult maps an answer: 2xx completes with {status, body}; 408, 429
// and 5xx are retryable failures; any other status is final.
func answerResult(resp *http.Response, answer []byte, now time.Time) targetResult {
	code := resp.StatusCode
	if code >= 200 && code <= 299 {
		doc := map[string]any{"status": code, "body": bodyValue(resp, answer)}
		out, err := json.Marshal(doc)
		if err != nil {
			out = []byte(fmt.Sprintf(`{"status":%d,"body":null}`, code))
		}
		return targetResult{status: code, output: out, healthy: true}
	}
	res := targetResult{status: code, errorType: "http_" + strconv.Itoa(code), healthy: true}
	res.message = fmt.Sprintf("target answered %d", code)
	if excerpt := strings.TrimSpace(textOf(answer, 512)); excerpt != "" {
		res.message += ": " + excerpt
	}
	if code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500 {
		res.retryable, res.healthy = true, false
		res.retryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	}
	return res
}

// bodyValue is an answer as the run's output keeps it: JSON when it is
// JSON (and was not cut), else text.
func bodyValue(resp *http.Response, answer []byte) any {
	if len(answer) == 0 {
		return nil
	}
	if len(answer) <= maxTargetBody && json.Valid(answer) {
		return json.RawMessage(answer)
	}
	_ = resp
	return textOf(answer, maxTargetBody)
}

// textOf is up to limit bytes of b as valid UTF-8 text.
func textOf(b []byte, limit int) string {
	if len(b) > limit {
		b = b[:limit]
		for len(b) > 0 && !utf8.Valid(b) && len(b) > limit-4 {
			b = b[:len(b)-1]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// retryAfter reads Retry-After (seconds or an HTTP date) as an instant,
// capped; zero when absent or unreadable.
func retryAfter(v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return now.Add(min(time.Duration(min(n, int64(maxRetryAfter/time.Second)))*time.Second, maxRetryAfter))
	}
	if at, err := http.ParseTime(v); err == nil {
		if at.After(now.Add(maxRetryAfter)) {
			return now.Add(maxRetryAfter)
		}
		return at
	}
	return time.Time{}
}

// watchTargets stops the requests whose run was cancelled, or ended by
// someone else (a deadline, terminate), since they started.
func (s *Service) watchTargets(ctx context.Context, logger *slog.Logger) {
	e := s.executor
	e.mu.Lock()
	ids := make([]string, 0, len(e.inflight))
	for id := range e.inflight {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	done, err := s.turns.background(ctx)
	if err != nil {
		return
	}
	states, err := models.RunStates(ctx, s.db, ids)
	done()
	if err != nil {
		if ctx.Err() == nil {
			logger.Warn("watch http target runs", "err", err)
		}
		return
	}
	found := map[string]models.RunState{}
	for _, st := range states {
		found[st.ID] = st
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range ids {
		f, ok := e.inflight[id]
		if !ok {
			continue
		}
		st, there := found[id]
		switch {
		case !there || st.Status != models.RunRunning || st.Attempt != f.attempt || st.WorkerID == nil || *st.WorkerID != e.id:
			f.cancel(errRunEnded)
		case st.CancelRequestedAt != nil:
			f.cancel(errRunCancelled)
		}
	}
}
