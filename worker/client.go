package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/apijson"
)

// apiPrefix is where the server mounts the worker protocol (CONTRACT §7).
const apiPrefix = "/api/v2/worker"

// maxResponseBytes bounds what the client reads from one answer, so that a
// misrouted request (a proxy's HTML page, a huge file) cannot exhaust memory.
const maxResponseBytes = 8 << 20

// ClientOptions configures a Client.
type ClientOptions struct {
	// BaseURL is the server's root, e.g. "http://127.0.0.1:8080"; a path
	// prefix (a reverse proxy's mount point) is kept.
	BaseURL string
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// Namespace is sent with every call; empty lets the server decide
	// (its fixed namespace, else "default").
	Namespace string
	// WorkerID is sent with heartbeats and results, so the server refuses
	// them for a run that another worker holds.
	WorkerID string
	// HTTPClient defaults to a client without a global timeout: each call
	// sets its own deadline, because a long poll legitimately takes ~30 s.
	HTTPClient *http.Client
}

// Client speaks the worker protocol over HTTP. It is safe for concurrent use.
type Client struct {
	base      string
	token     string
	namespace string
	workerID  string
	http      *http.Client
}

// NewClient returns a client for the server at opts.BaseURL.
func NewClient(opts ClientOptions) (*Client, error) {
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("worker: base URL %q must be an absolute http(s) URL", opts.BaseURL)
	}
	hc := &http.Client{}
	if opts.HTTPClient != nil {
		copied := *opts.HTTPClient // the caller's client is left as it is
		hc = &copied
	}
	// A followed redirect would carry the token (and a report's body) to
	// wherever it points: a 3xx is answered as an *APIError instead.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{base: strings.TrimRight(u.String(), "/") + apiPrefix, token: opts.Token, namespace: opts.Namespace, workerID: opts.WorkerID, http: hc}, nil
}

// Run is a run claimed by this worker (the handler's view of an
// apijson.ClaimedRun). Deadlines are the server's; it enforces them itself
// (timed_out), so handlers only need them to plan work.
type Run struct {
	ID         string
	InstanceID string
	// ScheduleID is the schedule that fired the run; empty for a run
	// started directly.
	ScheduleID          string
	Namespace           string
	WorkflowType        string
	WorkflowClass       string
	Trigger             string     // scheduled | manual | drained | backfilled | direct
	OccurrenceTime      *time.Time // the fire's nominal time; nil for a direct run
	Input               json.RawMessage
	Attempt             int
	LeaseExpiresAt      *time.Time
	RunDeadlineAt       *time.Time
	ExecutionDeadlineAt *time.Time
}

func runOf(r apijson.ClaimedRun) Run {
	var scheduleID string
	if r.ScheduleID != nil {
		scheduleID = *r.ScheduleID
	}
	return Run{ID: r.RunID, InstanceID: r.InstanceID, ScheduleID: scheduleID, Namespace: r.Namespace,
		WorkflowType: r.WorkflowType, WorkflowClass: r.WorkflowClass, Trigger: r.Trigger, OccurrenceTime: timeOf(r.OccurrenceTime),
		Input: r.Input, Attempt: r.Attempt, LeaseExpiresAt: timeOf(r.LeaseExpiresAt), RunDeadlineAt: timeOf(r.RunDeadlineAt),
		ExecutionDeadlineAt: timeOf(r.ExecutionDeadlineAt)}
}

func timeOf(t *apijson.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.T()
	return &v
}

// PollRequest asks for pending runs of one queue.
type PollRequest struct {
	Connection   string // empty: the server's "default"
	Queue        string // empty: the server's "default"
	WorkerID     string
	Limit        int
	LeaseSeconds int
	// Wait is how long the server may hold the request when nothing is
	// pending (whole seconds, at most 30 s).
	Wait time.Duration
}

// HeartbeatResult is the server's answer to a heartbeat.
type HeartbeatResult struct {
	CancelRequested bool
	LeaseExpiresAt  *time.Time
}

// APIError is an error answer of the server: {"error":{"code","message","fields"}}.
type APIError struct {
	StatusCode int
	Code       string
	Message    string
	Fields     map[string]string
	// RetryAfter is the server's Retry-After (503 while its database is
	// unavailable, 429); zero when it sent none.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	code := e.Code
	if code == "" {
		code = strings.ToLower(http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("server answered %d %s: %s", e.StatusCode, code, e.Message)
}

// Temporary reports whether repeating the same request may succeed: server
// failures, timeouts and rate limits, but not requests the server rejected.
func (e *APIError) Temporary() bool {
	return e.StatusCode >= 500 || e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests
}

// runGone reports whether err says the run no longer belongs to a worker:
// unknown (404) or already finished — terminated, timed out, lease lost (409).
func runGone(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusNotFound || apiErr.StatusCode == http.StatusConflict)
}

// Poll claims up to req.Limit pending runs, long-polling up to req.Wait.
func (c *Client) Poll(ctx context.Context, req PollRequest) ([]Run, error) {
	body := apijson.WorkerPoll{Namespace: c.namespace, Connection: req.Connection, Queue: req.Queue, Limit: req.Limit,
		LeaseSeconds: req.LeaseSeconds, WaitSeconds: waitSeconds(req.Wait), WorkerID: req.WorkerID}
	var out apijson.WorkerPollResult
	// The server may hold the request for the whole wait; allow for that
	// plus the time a claim takes on a busy database.
	timeout := time.Duration(body.WaitSeconds)*time.Second + callTimeout
	if err := c.call(ctx, timeout, "/poll", body, &out); err != nil {
		return nil, fmt.Errorf("poll runs: %w", err)
	}
	runs := make([]Run, 0, len(out.Runs))
	for _, r := range out.Runs {
		runs = append(runs, runOf(r))
	}
	return runs, nil
}

// Heartbeat extends the run's lease (leaseSeconds 0: the server's default)
// and tells whether cancellation was requested.
func (c *Client) Heartbeat(ctx context.Context, runID string, leaseSeconds int) (HeartbeatResult, error) {
	body := apijson.WorkerHeartbeat{Namespace: c.namespace, WorkerID: c.workerID, LeaseSeconds: leaseSeconds}
	var out apijson.WorkerHeartbeatResult
	if err := c.call(ctx, callTimeout, runPath(runID, "heartbeat"), body, &out); err != nil {
		return HeartbeatResult{}, fmt.Errorf("heartbeat run %s: %w", runID, err)
	}
	return HeartbeatResult{CancelRequested: out.CancelRequested, LeaseExpiresAt: timeOf(out.LeaseExpiresAt)}, nil
}

// Complete records the run's output (nil: no output).
func (c *Client) Complete(ctx context.Context, runID string, output json.RawMessage) error {
	body := apijson.WorkerComplete{Namespace: c.namespace, WorkerID: c.workerID, Output: output}
	if err := c.call(ctx, callTimeout, runPath(runID, "complete"), body, nil); err != nil {
		return fmt.Errorf("complete run %s: %w", runID, err)
	}
	return nil
}

// Fail records the run's failure. Type "cancelled" for a run whose
// cancellation was requested ends it cancelled instead of failed.
//
// nonRetryable ends the run for good, whatever its retry policy; otherwise
// the server retries it when the policy allows (the next attempt reaches a
// worker as the same run with Attempt + 1).
func (c *Client) Fail(ctx context.Context, runID, message, failureType string, nonRetryable bool) error {
	body := apijson.WorkerFail{Namespace: c.namespace, WorkerID: c.workerID, Message: message, Type: failureType, NonRetryable: nonRetryable}
	if err := c.call(ctx, callTimeout, runPath(runID, "fail"), body, nil); err != nil {
		return fmt.Errorf("fail run %s: %w", runID, err)
	}
	return nil
}

// callTimeout bounds a call that the server answers without waiting.
const callTimeout = 30 * time.Second

func runPath(runID, action string) string {
	return "/runs/" + url.PathEscape(runID) + "/" + action
}

// waitSeconds rounds a wait up to whole seconds: rounding down would turn
// a sub-second wait into a short poll, and the poll loop into a busy loop.
func waitSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// call POSTs in as JSON and decodes a 2xx answer into out (when not nil).
func (c *Client) call(ctx context.Context, timeout time.Duration, path string, in, out any) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		apiErr := decodeAPIError(resp.StatusCode, body)
		apiErr.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return apiErr
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// decodeAPIError reads the server's error body; anything else in front of
// the server (a proxy's error page) still yields the status.
func decodeAPIError(status int, body []byte) *APIError {
	var envelope apijson.ErrorBody
	apiErr := &APIError{StatusCode: status, Message: strings.ToLower(http.StatusText(status))}
	if json.Unmarshal(body, &envelope) == nil && envelope.Error.Code != "" {
		apiErr.Code, apiErr.Message, apiErr.Fields = envelope.Error.Code, envelope.Error.Message, envelope.Error.Fields
	}
	return apiErr
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
// Anything else, or a time in the past, is zero.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		return time.Duration(max(secs, 0)) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// retryAfter is the Retry-After of an error answer, else zero.
func retryAfter(err error) time.Duration {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.RetryAfter
	}
	return 0
}
