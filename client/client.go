// Package client is a typed Go client of Tideline's JSON API
// (/waterline/api/v2). Every call takes a context first, returns the API's
// own shapes (package apijson) and, on failure, an *Error carrying the
// API's error code and field messages. Lists and audit streams are
// iterators that fetch page after page as they are consumed.
//
//	c, err := client.New("https://tideline.example.com", client.WithToken(token), client.WithNamespace("payments"))
//	for s, err := range c.ListSchedules(ctx, client.ListSchedulesOptions{}) { … }
//
// Only idempotent requests are retried (GET, DELETE, dry runs and
// previews), on transport errors and 429/502/503/504 — a database restart
// or failover answers 503 database_unavailable with Retry-After, which the
// wait honours (up to maxRetryAfter): retrying a trigger or a backfill
// could start a run twice, and a create whose commit was cut could answer
// its own retry schedule_already_exists, so those are the caller's call.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/apijson"
)

// APIPrefix is where the JSON API lives on a server.
const APIPrefix = "/waterline/api/v2"

// Client talks to one Tideline server. It is safe for concurrent use.
type Client struct {
	base      string // server root without a trailing slash, e.g. https://host/tideline
	token     string
	namespace string
	http      *http.Client
	attempts  int
	backoff   func(attempt int) time.Duration
	userAgent string
	source    string
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends a bearer token (CONTRACT §9) with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithNamespace scopes every request to a namespace (sent as X-Namespace);
// without it the server picks "default" or the token's only namespace.
func WithNamespace(ns string) Option { return func(c *Client) { c.namespace = ns } }

// WithHTTPClient replaces http.DefaultClient (timeouts, TLS roots, proxies).
// The client uses a copy of h that never follows redirects.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithRetries sets how many times an idempotent request is tried in all
// (1 disables retries) and the wait before retry n (1-based); a nil
// backoff keeps the default, 200ms doubling up to 5s.
func WithRetries(attempts int, backoff func(attempt int) time.Duration) Option {
	return func(c *Client) {
		c.attempts = max(attempts, 1)
		if backoff != nil {
			c.backoff = backoff
		}
	}
}

// WithUserAgent names the caller in the server's request logs.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithSource names the Tideline tool behind the client's changes ("cli" or
// "apply"), sent as X-Tideline-Source and recorded by the server as the
// audit stream's source instead of "api" (CONTRACT §16); the server
// refuses other values (422).
func WithSource(source string) Option { return func(c *Client) { c.source = source } }

// New returns a client of the server at baseURL (scheme, host and any path
// prefix a proxy adds; not the API prefix).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want http(s)://host[:port]", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("invalid server URL %q: no query or fragment", baseURL)
	}
	c := &Client{
		base: strings.TrimSuffix(u.String(), "/"), http: http.DefaultClient, attempts: defaultAttempts,
		backoff: defaultBackoff, userAgent: "tideline-go-client",
	}
	for _, o := range opts {
		o(c)
	}
	c.http = refusingRedirects(c.http)
	return c, nil
}

// refusingRedirects returns a copy of h (the caller's client is left as it
// is) that hands a redirect back as the answer instead of following it. A
// followed redirect carries the request on — Go's client keeps the
// Authorization header to another port of the same host, and a 307 or 308
// re-sends the body (a notifier's secret) to whatever host it names — so an
// API call never follows one; once reports it as a *RedirectError.
func refusingRedirects(h *http.Client) *http.Client {
	cp := *h
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}

// RedirectError is a 3xx answer to an API call, which the client does not
// follow (see refusingRedirects). Location is where the server (or a proxy
// in front of it) pointed, "" when it named nowhere.
type RedirectError struct {
	Method     string
	URL        string // the request's URL without its query
	StatusCode int
	Location   string
}

func (e *RedirectError) Error() string {
	to := "no Location"
	if e.Location != "" {
		to = "Location " + e.Location
	}
	return fmt.Sprintf("%s %s: the server answered %d with a redirect (%s), which API calls never follow (the token would go along): "+
		"check that the server URL is the one the API is served from", e.Method, e.URL, e.StatusCode, to)
}

// defaultAttempts rides out a promoted standby: with the default backoff
// and the server's Retry-After of 1 s, five attempts span about 4.6 s, and
// a failover measured 2–3 s without a primary (docs/PRODUCTION.md).
const defaultAttempts = 5

// maxRetryAfter bounds how long a server's Retry-After may hold a retry.
const maxRetryAfter = 10 * time.Second

func defaultBackoff(attempt int) time.Duration {
	return min(200*time.Millisecond<<(attempt-1), 5*time.Second)
}

// Namespace is the namespace the client sends, "" when the server chooses.
func (c *Client) Namespace() string { return c.namespace }

// Error is an API error response: the HTTP status and the body's code,
// message and per-field messages (CONTRACT §8).
type Error struct {
	StatusCode int
	Code       string
	Message    string
	Fields     map[string]string
	// Schedules names the schedules in the way (409 calendar_in_use).
	Schedules []string
	RequestID string
	// RetryAfter is the answer's Retry-After (503 database_unavailable
	// carries one); zero when absent.
	RetryAfter time.Duration
}

// Error reads "code: message", or "code: field: message; …" for field
// errors, the way the CLI prints service errors.
func (e *Error) Error() string {
	if len(e.Fields) > 0 {
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+": "+e.Fields[k])
		}
		return e.Code + ": " + strings.Join(parts, "; ")
	}
	return e.Code + ": " + e.Message
}

// Sentinels matched by errors.Is against an *Error's status.
var (
	ErrUnauthorized = errors.New("unauthorized")    // 401: no or unknown token
	ErrForbidden    = errors.New("forbidden")       // 403: the token's role may not do this
	ErrNotFound     = errors.New("not found")       // 404: absent, or in a namespace the token cannot see
	ErrConflict     = errors.New("conflict")        // 409: not allowed in the current state
	ErrInvalid      = errors.New("invalid request") // 400 and 422: bad JSON or field errors
	// ErrUnavailable: 503, the server busy or its database unavailable
	// (code database_unavailable) — the request may succeed if sent again.
	ErrUnavailable = errors.New("unavailable")
)

// Is matches the sentinel of the error's status.
func (e *Error) Is(target error) bool {
	switch e.StatusCode {
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusForbidden:
		return target == ErrForbidden
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusConflict:
		return target == ErrConflict
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return target == ErrInvalid
	case http.StatusServiceUnavailable:
		return target == ErrUnavailable
	}
	return false
}

// request is one API call.
type request struct {
	method string
	path   string // under APIPrefix
	query  url.Values
	body   any // JSON-encoded when non-nil
	// idempotent requests are retried: sending one twice has the effect
	// of sending it once. The worker protocol's reports (heartbeat,
	// complete, fail) are, by design: a repeat of a report that was
	// applied answers 409 run_not_running, never a second effect.
	idempotent bool
}

// do sends r and decodes a 2xx answer into out (when non-nil).
func (c *Client) do(ctx context.Context, r request, out any) error {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("encode %s %s: %w", r.method, r.path, err)
		}
	}
	target := c.base + APIPrefix + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	attempts := 1
	if r.idempotent {
		attempts = c.attempts
	}
	var (
		lastErr    error
		retryAfter time.Duration
	)
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			if err := wait(ctx, max(c.backoff(attempt-1), retryAfter)); err != nil {
				return lastErr
			}
		}
		retry, err := c.once(ctx, r.method, target, body, out)
		retryAfter = retryAfterOf(err)
		if err == nil {
			return nil
		}
		lastErr = err
		if !retry || ctx.Err() != nil {
			break
		}
	}
	return lastErr
}

// once sends one attempt; retry says whether another could succeed.
func (c *Client) once(ctx context.Context, method, target string, body []byte, out any) (retry bool, err error) {
	var rdr io.Reader
	if body != nil {
		rdr = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rdr)
	if err != nil {
		return false, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.source != "" {
		req.Header.Set("X-Tideline-Source", c.source)
	}
	if body != nil {
		// The API refuses bodies of other types with 415.
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.namespace != "" {
		req.Header.Set("X-Namespace", c.namespace)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// Certificate problems do not go away on a second try.
		return !isTLSError(err), fmt.Errorf("%s %s: %w", method, redact(target), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return true, fmt.Errorf("%s %s: read response: %w", method, redact(target), err)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return false, &RedirectError{Method: method, URL: redact(target), StatusCode: resp.StatusCode, Location: resp.Header.Get("Location")}
	}
	if resp.StatusCode >= 300 {
		apiErr := decodeError(resp, data)
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true, apiErr
		}
		return false, apiErr
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return false, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return false, fmt.Errorf("%s %s: decode response: %w", method, redact(target), err)
	}
	return false, nil
}

// retryAfterOf is the wait an error answer asked for (Retry-After in
// seconds), at most maxRetryAfter; zero when none.
func retryAfterOf(err error) time.Duration {
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.RetryAfter <= 0 {
		return 0
	}
	return min(apiErr.RetryAfter, maxRetryAfter)
}

func decodeError(resp *http.Response, data []byte) *Error {
	e := &Error{StatusCode: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	var body apijson.ErrorBody
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Fields, e.Schedules = body.Error.Code, body.Error.Message, body.Error.Fields, body.Error.Schedules
		return e
	}
	// Not Tideline's answer (a proxy's error page, a wrong URL).
	e.Code = "http_" + strconv.Itoa(resp.StatusCode)
	e.Message = strings.TrimSpace(http.StatusText(resp.StatusCode))
	if text := strings.TrimSpace(string(data)); text != "" && len(text) < 200 && !strings.Contains(text, "<") {
		e.Message += ": " + text
	}
	return e
}

// redact drops the query from a URL in error messages (cursors are noise).
func redact(target string) string {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i]
	}
	return target
}

// wait pauses for d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// call sends r and decodes its answer into a new T; nil on error.
func call[T any](ctx context.Context, c *Client, r request) (*T, error) {
	var out T
	if err := c.do(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Must returns c, or panics on err: for clients built from constants.
func Must(c *Client, err error) *Client {
	if err != nil {
		panic(err)
	}
	return c
}
