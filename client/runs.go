package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidelinehq/tideline/apijson"
)

// RunListOptions filter GET /runs (or a schedule's runs).
type RunListOptions struct {
	ScheduleID string
	Statuses   []string
	Limit      int
	Cursor     string
}

func (o RunListOptions) values(withSchedule bool) url.Values {
	q := url.Values{}
	if withSchedule {
		setIf(q, "schedule_id", o.ScheduleID)
	}
	if len(o.Statuses) > 0 {
		q.Set("status", strings.Join(o.Statuses, ","))
	}
	setIf(q, "cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// ListRunsPage fetches one page of runs, newest first.
func (c *Client) ListRunsPage(ctx context.Context, opts RunListOptions) (*apijson.RunPage, error) {
	return call[apijson.RunPage](ctx, c, request{method: http.MethodGet, path: "/runs", query: opts.values(true), idempotent: true})
}

// ListRuns yields every matching run, page by page.
func (c *Client) ListRuns(ctx context.Context, opts RunListOptions) iter.Seq2[apijson.Run, error] {
	return pages(func(cursor string) ([]apijson.Run, string, bool, error) {
		opts.Cursor = cursor
		p, err := c.ListRunsPage(ctx, opts)
		if err != nil {
			return nil, "", false, err
		}
		return p.Runs, deref(p.NextCursor), p.HasMore, nil
	}, opts.Cursor)
}

// ScheduleRunsPage fetches one page of a schedule's runs
// (GET /schedules/{id}/runs).
func (c *Client) ScheduleRunsPage(ctx context.Context, id string, opts RunListOptions) (*apijson.RunPage, error) {
	return call[apijson.RunPage](ctx, c, request{method: http.MethodGet, path: schedulePath(id, "/runs"), query: opts.values(false), idempotent: true})
}

// ScheduleRuns yields every run of a schedule, page by page.
func (c *Client) ScheduleRuns(ctx context.Context, id string, opts RunListOptions) iter.Seq2[apijson.Run, error] {
	return pages(func(cursor string) ([]apijson.Run, string, bool, error) {
		opts.Cursor = cursor
		p, err := c.ScheduleRunsPage(ctx, id, opts)
		if err != nil {
			return nil, "", false, err
		}
		return p.Runs, deref(p.NextCursor), p.HasMore, nil
	}, opts.Cursor)
}

func runPath(id, action string) string { return "/runs/" + url.PathEscape(id) + action }

// GetRun returns a run and its history.
func (c *Client) GetRun(ctx context.Context, runID string) (*apijson.RunDetail, error) {
	return call[apijson.RunDetail](ctx, c, request{method: http.MethodGet, path: runPath(runID, ""), idempotent: true})
}

// CancelRun asks a run to stop gracefully (its worker sees it on the next
// heartbeat).
func (c *Client) CancelRun(ctx context.Context, runID, reason string) (*apijson.Run, error) {
	return call[apijson.Run](ctx, c, request{method: http.MethodPost, path: runPath(runID, "/cancel"), body: apijson.RunActionRequest{Reason: reason}})
}

// TerminateRun ends a run at once.
func (c *Client) TerminateRun(ctx context.Context, runID, reason string) (*apijson.Run, error) {
	return call[apijson.Run](ctx, c, request{method: http.MethodPost, path: runPath(runID, "/terminate"), body: apijson.RunActionRequest{Reason: reason}})
}

// RetryRun gives a failed or timed-out run one more attempt now: the same
// run, back to pending (POST /runs/{id}/retry).
func (c *Client) RetryRun(ctx context.Context, runID, reason string) (*apijson.Run, error) {
	return call[apijson.Run](ctx, c, request{method: http.MethodPost, path: runPath(runID, "/retry"), body: apijson.RunActionRequest{Reason: reason}})
}

// RunAgain starts a new manual run of the run's schedule with the run's
// input (POST /runs/{id}/again), answered as a trigger.
func (c *Client) RunAgain(ctx context.Context, runID, reason string) (*apijson.Trigger, error) {
	return call[apijson.Trigger](ctx, c, request{method: http.MethodPost, path: runPath(runID, "/again"), body: apijson.RunActionRequest{Reason: reason}})
}

// RetryMatching retries the failed and timed-out runs matching (status
// "failed", "timed_out" or "" for both; scheduleID optional), at most 500
// a call (POST /runs/retry).
func (c *Client) RetryMatching(ctx context.Context, status, scheduleID, reason string) (*apijson.RetryMatchingResult, error) {
	return call[apijson.RetryMatchingResult](ctx, c, request{method: http.MethodPost, path: "/runs/retry",
		body: apijson.RetryMatchingRequest{Status: status, ScheduleID: scheduleID, Reason: reason}})
}

// OpenAPI returns the server's OpenAPI document.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.do(ctx, request{method: http.MethodGet, path: "/openapi.json", idempotent: true}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
