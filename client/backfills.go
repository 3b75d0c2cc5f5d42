package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tidelinehq/tideline/apijson"
)

// BackfillJobOptions starts a backfill job over [From, To) (SPEC §18).
type BackfillJobOptions struct {
	From, To          time.Time
	OverlapPolicy     string
	MaxPerMinute      *int
	MaxConcurrentRuns *int
	Reason            string
}

// StartBackfill starts a backfill job; the server answers at once (202)
// with the job, its first slice done. Not retried: a retry after a lost
// answer would meet the first job (409 backfill_overlaps), never start the
// occurrences twice.
func (c *Client) StartBackfill(ctx context.Context, scheduleID string, opts BackfillJobOptions) (*apijson.BackfillJob, error) {
	env, err := call[apijson.BackfillJobEnvelope](ctx, c, request{method: http.MethodPost, path: schedulePath(scheduleID, "/backfill"), body: apijson.BackfillRequest{
		From: opts.From.UTC().Format(time.RFC3339Nano), To: opts.To.UTC().Format(time.RFC3339Nano),
		OverlapPolicy: opts.OverlapPolicy, MaxPerMinute: opts.MaxPerMinute, MaxConcurrentRuns: opts.MaxConcurrentRuns, Reason: opts.Reason,
	}})
	if err != nil {
		return nil, err
	}
	return &env.Backfill, nil
}

// BackfillListOptions filter GET /backfills.
type BackfillListOptions struct {
	ScheduleID string
	Status     string
	Limit      int
	Cursor     string
}

func (o BackfillListOptions) values() url.Values {
	q := url.Values{}
	setIf(q, "schedule_id", o.ScheduleID)
	setIf(q, "status", o.Status)
	setIf(q, "cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// ListBackfillsPage fetches one page of jobs, newest first.
func (c *Client) ListBackfillsPage(ctx context.Context, opts BackfillListOptions) (*apijson.BackfillJobPage, error) {
	return call[apijson.BackfillJobPage](ctx, c, request{method: http.MethodGet, path: "/backfills", query: opts.values(), idempotent: true})
}

// ListBackfills yields every matching job, page by page.
func (c *Client) ListBackfills(ctx context.Context, opts BackfillListOptions) iter.Seq2[apijson.BackfillJob, error] {
	return pages(func(cursor string) ([]apijson.BackfillJob, string, bool, error) {
		opts.Cursor = cursor
		p, err := c.ListBackfillsPage(ctx, opts)
		if err != nil {
			return nil, "", false, err
		}
		return p.Backfills, deref(p.NextCursor), p.HasMore, nil
	}, opts.Cursor)
}

func backfillPath(id, action string) string { return "/backfills/" + url.PathEscape(id) + action }

// GetBackfill fetches one job with its progress and ETA.
func (c *Client) GetBackfill(ctx context.Context, id string) (*apijson.BackfillJob, error) {
	return c.backfill(ctx, http.MethodGet, id, "", "", true)
}

// PauseBackfill pauses a running job after its current slice.
func (c *Client) PauseBackfill(ctx context.Context, id, reason string) (*apijson.BackfillJob, error) {
	return c.backfill(ctx, http.MethodPost, id, "/pause", reason, false)
}

// ResumeBackfill resumes a paused job from its cursor.
func (c *Client) ResumeBackfill(ctx context.Context, id, reason string) (*apijson.BackfillJob, error) {
	return c.backfill(ctx, http.MethodPost, id, "/resume", reason, false)
}

// CancelBackfill ends a running or paused job for good.
func (c *Client) CancelBackfill(ctx context.Context, id, reason string) (*apijson.BackfillJob, error) {
	return c.backfill(ctx, http.MethodPost, id, "/cancel", reason, false)
}

func (c *Client) backfill(ctx context.Context, method, id, action, reason string, idempotent bool) (*apijson.BackfillJob, error) {
	req := request{method: method, path: backfillPath(id, action), idempotent: idempotent}
	if method == http.MethodPost {
		req.body = apijson.BackfillActionRequest{Reason: reason}
	}
	env, err := call[apijson.BackfillJobEnvelope](ctx, c, req)
	if err != nil {
		return nil, err
	}
	return &env.Backfill, nil
}
