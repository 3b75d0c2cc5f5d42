package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tidelinehq/tideline/apijson"
)

func calendarPath(name, rest string) string {
	return "/calendars/" + url.PathEscape(name) + rest
}

// ListCalendarsPage fetches one page of the namespace's calendars by name
// (GET /calendars); their dates by count.
func (c *Client) ListCalendarsPage(ctx context.Context, limit int, cursor string) (*apijson.CalendarList, error) {
	q := url.Values{}
	setIf(q, "cursor", cursor)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[apijson.CalendarList](ctx, c, request{method: http.MethodGet, path: "/calendars", query: q, idempotent: true})
}

// CreateCalendar creates a calendar (admins).
func (c *Client) CreateCalendar(ctx context.Context, req apijson.CalendarWrite) (*apijson.Calendar, error) {
	return call[apijson.Calendar](ctx, c, request{method: http.MethodPost, path: "/calendars", body: req})
}

// GetCalendar reads a calendar with the live schedules that use it.
func (c *Client) GetCalendar(ctx context.Context, name string) (*apijson.Calendar, error) {
	return call[apijson.Calendar](ctx, c, request{method: http.MethodGet, path: calendarPath(name, ""), idempotent: true})
}

// UpdateCalendar changes the given fields of a calendar; the answer lists
// the schedules whose next fire it re-planned (admins).
func (c *Client) UpdateCalendar(ctx context.Context, name string, req apijson.CalendarWrite) (*apijson.CalendarChange, error) {
	return call[apijson.CalendarChange](ctx, c, request{method: http.MethodPatch, path: calendarPath(name, ""), body: req})
}

// DeleteCalendar deletes a calendar no live schedule uses; one in use is a
// *APIError with code calendar_in_use and the schedules in Schedules.
func (c *Client) DeleteCalendar(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: calendarPath(name, ""), idempotent: true}, nil)
}

// CalendarImpact says what a proposed change would add and remove for each
// schedule using the calendar, writing nothing.
func (c *Client) CalendarImpact(ctx context.Context, name string, req apijson.CalendarWrite) (*apijson.CalendarImpact, error) {
	return call[apijson.CalendarImpact](ctx, c, request{method: http.MethodPost, path: calendarPath(name, "/impact"), body: req, idempotent: true})
}

// CalendarHistoryPage fetches one page of a calendar's trail.
func (c *Client) CalendarHistoryPage(ctx context.Context, name string, limit int, cursor string) (*apijson.ObjectHistory, error) {
	q := url.Values{}
	setIf(q, "cursor", cursor)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[apijson.ObjectHistory](ctx, c, request{method: http.MethodGet, path: calendarPath(name, "/history"), query: q, idempotent: true})
}
