package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/apijson"
)

func schedulePath(id string, rest ...string) string {
	return "/schedules/" + url.PathEscape(id) + strings.Join(rest, "")
}

// CreateSchedule creates a schedule (POST /schedules) and returns its
// describe object.
func (c *Client) CreateSchedule(ctx context.Context, req apijson.CreateSchedule) (*apijson.Schedule, error) {
	return call[apijson.Schedule](ctx, c, request{method: http.MethodPost, path: "/schedules", body: req})
}

// PlanCreateSchedule validates a new schedule as CreateSchedule would and
// returns it as it would be stored; nothing is written.
func (c *Client) PlanCreateSchedule(ctx context.Context, req apijson.CreateSchedule) (*apijson.Schedule, error) {
	return call[apijson.Schedule](ctx, c, request{method: http.MethodPost, path: "/schedules", query: url.Values{"dry_run": {"true"}},
		body: req, idempotent: true})
}

// GetSchedule describes a live schedule (deleted ones are ErrNotFound).
func (c *Client) GetSchedule(ctx context.Context, id string) (*apijson.Schedule, error) {
	return call[apijson.Schedule](ctx, c, request{method: http.MethodGet, path: schedulePath(id), idempotent: true})
}

// UpdateSchedule changes the fields the patch sets (PATCH) and returns the
// describe object. A patch that changes nothing records nothing.
func (c *Client) UpdateSchedule(ctx context.Context, id string, patch apijson.SchedulePatch) (*apijson.Schedule, error) {
	return call[apijson.Schedule](ctx, c, request{method: http.MethodPatch, path: schedulePath(id), body: patch})
}

// PlanUpdateSchedule reports what UpdateSchedule would change, field by
// field; nothing is written.
func (c *Client) PlanUpdateSchedule(ctx context.Context, id string, patch apijson.SchedulePatch) (*apijson.UpdatePlan, error) {
	return call[apijson.UpdatePlan](ctx, c, request{method: http.MethodPatch, path: schedulePath(id), query: url.Values{"dry_run": {"true"}},
		body: patch, idempotent: true})
}

// DeleteSchedule soft-deletes a schedule; deleting it again is a no-op.
func (c *Client) DeleteSchedule(ctx context.Context, id string) (*apijson.Schedule, error) {
	return call[apijson.Schedule](ctx, c, request{method: http.MethodDelete, path: schedulePath(id), idempotent: true})
}

// PauseOptions say why a schedule is paused and, optionally, until when.
type PauseOptions struct {
	Reason string
	Until  *time.Time
}

// PauseSchedule stops an active schedule from firing.
func (c *Client) PauseSchedule(ctx context.Context, id string, opts PauseOptions) (*apijson.Schedule, error) {
	body := apijson.PauseRequest{Reason: opts.Reason}
	if opts.Until != nil {
		body.PausedUntil = opts.Until.UTC().Format(time.RFC3339Nano)
	}
	return call[apijson.Schedule](ctx, c, request{method: http.MethodPost, path: schedulePath(id, "/pause"), body: body})
}

// ResumeSchedule restarts a paused schedule from now.
func (c *Client) ResumeSchedule(ctx context.Context, id string) (*apijson.Schedule, error) {
	return call[apijson.Schedule](ctx, c, request{method: http.MethodPost, path: schedulePath(id, "/resume"), body: struct{}{}})
}

// TriggerSchedule fires a schedule now; overlapPolicy "" keeps its own.
func (c *Client) TriggerSchedule(ctx context.Context, id, overlapPolicy string) (*apijson.Trigger, error) {
	return call[apijson.Trigger](ctx, c, request{method: http.MethodPost, path: schedulePath(id, "/trigger"),
		body: apijson.TriggerRequest{OverlapPolicy: overlapPolicy}})
}

// BackfillOptions is the window [From, To) of a backfill.
type BackfillOptions struct {
	From, To      time.Time
	OverlapPolicy string
	DryRun        bool
}

// BackfillSchedule starts (or with DryRun lists) the occurrences of a window.
func (c *Client) BackfillSchedule(ctx context.Context, id string, opts BackfillOptions) (*apijson.Backfill, error) {
	return call[apijson.Backfill](ctx, c, request{method: http.MethodPost, path: schedulePath(id, "/backfill"), body: apijson.BackfillRequest{
		From: opts.From.UTC().Format(time.RFC3339Nano), To: opts.To.UTC().Format(time.RFC3339Nano),
		OverlapPolicy: opts.OverlapPolicy, DryRun: opts.DryRun,
	}, idempotent: opts.DryRun})
}

// Preview lists the next count fire times of a spec after an instant (the
// server's now when after is zero) and describes it.
func (c *Client) Preview(ctx context.Context, spec apijson.Spec, after time.Time, count int) (*apijson.Preview, error) {
	body := apijson.PreviewRequest{Spec: spec}
	if !after.IsZero() {
		body.After = after.UTC().Format(time.RFC3339Nano)
	}
	if count > 0 {
		body.Count = &count
	}
	return call[apijson.Preview](ctx, c, request{method: http.MethodPost, path: "/schedules/preview", body: body, idempotent: true})
}

// Tick runs one scheduling pass over every namespace (admin, unbound
// token); limit 0 is the server's default.
func (c *Client) Tick(ctx context.Context, limit int) ([]apijson.TickRow, error) {
	var out apijson.Tick
	if err := c.do(ctx, request{method: http.MethodPost, path: "/tick", body: apijson.TickRequest{Limit: limit}}, &out); err != nil {
		return nil, err
	}
	return out.Rows, nil
}

// ListSchedulesOptions filter GET /schedules. Statuses nil means active
// and paused; "all" is every status.
type ListSchedulesOptions struct {
	Statuses     []string
	Query        string // ID, note or workflow type contains
	WorkflowType string
	Label        string // key=value
	Limit        int    // page size; 0 is the server's default
	Cursor       string
}

func (o ListSchedulesOptions) values() url.Values {
	q := url.Values{}
	if len(o.Statuses) > 0 {
		q.Set("status", strings.Join(o.Statuses, ","))
	}
	setIf(q, "q", o.Query)
	setIf(q, "workflow_type", o.WorkflowType)
	setIf(q, "label", o.Label)
	setIf(q, "cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// ListSchedulesPage fetches one page of schedules.
func (c *Client) ListSchedulesPage(ctx context.Context, opts ListSchedulesOptions) (*apijson.SchedulePage, error) {
	return call[apijson.SchedulePage](ctx, c, request{method: http.MethodGet, path: "/schedules", query: opts.values(), idempotent: true})
}

// ListSchedules yields every matching schedule, fetching pages as the loop
// asks for more; an error is yielded once and ends the sequence.
func (c *Client) ListSchedules(ctx context.Context, opts ListSchedulesOptions) iter.Seq2[apijson.Schedule, error] {
	return pages(func(cursor string) ([]apijson.Schedule, string, bool, error) {
		opts.Cursor = cursor
		p, err := c.ListSchedulesPage(ctx, opts)
		if err != nil {
			return nil, "", false, err
		}
		return p.Schedules, deref(p.NextCursor), p.HasMore, nil
	}, opts.Cursor)
}

// HistoryOptions page an audit stream: events after AfterSequence (of
// EventType only, when set), Limit (1-500, 0 = 100) per page.
type HistoryOptions struct {
	AfterSequence int64
	EventType     string
	Limit         int
}

// ScheduleHistoryPage fetches one page of a schedule's audit stream (also
// of a deleted schedule).
func (c *Client) ScheduleHistoryPage(ctx context.Context, id string, opts HistoryOptions) (*apijson.History, error) {
	q := url.Values{}
	if opts.AfterSequence > 0 {
		q.Set("after_sequence", strconv.FormatInt(opts.AfterSequence, 10))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.EventType != "" {
		q.Set("event_type", opts.EventType)
	}
	return call[apijson.History](ctx, c, request{method: http.MethodGet, path: schedulePath(id, "/history"), query: q, idempotent: true})
}

// ScheduleHistory yields every event after opts.AfterSequence, in
// sequence order, following the cursor page by page.
func (c *Client) ScheduleHistory(ctx context.Context, id string, opts HistoryOptions) iter.Seq2[apijson.Event, error] {
	return pages(func(cursor string) ([]apijson.Event, string, bool, error) {
		if cursor != "" {
			n, _ := strconv.ParseInt(cursor, 10, 64)
			opts.AfterSequence = n
		}
		p, err := c.ScheduleHistoryPage(ctx, id, opts)
		if err != nil {
			return nil, "", false, err
		}
		next := ""
		if p.NextCursor != nil {
			next = strconv.FormatInt(*p.NextCursor, 10)
		}
		return p.Events, next, p.HasMore, nil
	}, "")
}

// OccurrencesOptions select a window of the occurrence ledger: [From, To)
// (zero: the last 7 days up to now), after Cursor, Limit (1-1000, 0 =
// 1000) per page.
type OccurrencesOptions struct {
	From, To time.Time
	Cursor   string
	Limit    int
}

// ScheduleOccurrencesPage fetches one page of a schedule's occurrence
// ledger: every occurrence with its fate (also of a deleted schedule).
func (c *Client) ScheduleOccurrencesPage(ctx context.Context, id string, opts OccurrencesOptions) (*apijson.OccurrencePage, error) {
	q := url.Values{}
	if !opts.From.IsZero() {
		q.Set("from", opts.From.UTC().Format(time.RFC3339Nano))
	}
	if !opts.To.IsZero() {
		q.Set("to", opts.To.UTC().Format(time.RFC3339Nano))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	return call[apijson.OccurrencePage](ctx, c, request{method: http.MethodGet, path: schedulePath(id, "/occurrences"), query: q, idempotent: true})
}

// ScheduleOccurrences yields every occurrence of the window, oldest first,
// following the cursor page by page.
func (c *Client) ScheduleOccurrences(ctx context.Context, id string, opts OccurrencesOptions) iter.Seq2[apijson.Occurrence, error] {
	return pages(func(cursor string) ([]apijson.Occurrence, string, bool, error) {
		opts.Cursor = cursor
		p, err := c.ScheduleOccurrencesPage(ctx, id, opts)
		if err != nil {
			return nil, "", false, err
		}
		return p.Occurrences, deref(p.NextCursor), p.HasMore, nil
	}, opts.Cursor)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// pages turns a page fetcher into an iterator. It stops when the server
// says there is no more, or when a page with more promised comes back
// without a cursor (which would otherwise loop forever).
func pages[T any](fetch func(cursor string) (items []T, next string, more bool, err error), cursor string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, next, more, err := fetch(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if !more || next == "" || next == cursor {
				return
			}
			cursor = next
		}
	}
}
