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

// OpenAPI returns the server's OpenAPI document.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.do(ctx, request{method: http.MethodGet, path: "/openapi.json", idempotent: true}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
