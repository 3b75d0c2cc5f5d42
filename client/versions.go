package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tidelinehq/tideline/apijson"
)

// The versions of a schedule (CONTRACT §16).

func versionPath(id string, n int64, rest ...string) string {
	return schedulePath(id, append([]string{"/versions/" + strconv.FormatInt(n, 10)}, rest...)...)
}

// ScheduleVersions lists every version of a schedule, oldest first.
func (c *Client) ScheduleVersions(ctx context.Context, id string) (*apijson.VersionList, error) {
	return call[apijson.VersionList](ctx, c, request{method: http.MethodGet, path: schedulePath(id, "/versions"), idempotent: true})
}

// ScheduleVersion reads version n with its whole definition.
func (c *Client) ScheduleVersion(ctx context.Context, id string, n int64) (*apijson.VersionDetail, error) {
	return call[apijson.VersionDetail](ctx, c, request{method: http.MethodGet, path: versionPath(id, n), idempotent: true})
}

// DiffScheduleVersions compares versions from and to field by field; 0
// leaves either to the server (to: the latest, from: the one before to).
func (c *Client) DiffScheduleVersions(ctx context.Context, id string, from, to int64) (*apijson.VersionDiff, error) {
	q := url.Values{}
	if from > 0 {
		q.Set("from", strconv.FormatInt(from, 10))
	}
	if to > 0 {
		q.Set("to", strconv.FormatInt(to, 10))
	}
	return call[apijson.VersionDiff](ctx, c, request{method: http.MethodGet, path: schedulePath(id, "/versions/diff"), query: q, idempotent: true})
}

// RevertSchedule updates a schedule back to version n and returns its
// describe object; a revert that would change nothing is a 409 no_change
// (ErrConflict).
func (c *Client) RevertSchedule(ctx context.Context, id string, n int64, reason string) (*apijson.Schedule, error) {
	return call[apijson.Schedule](ctx, c, request{method: http.MethodPost, path: versionPath(id, n, "/revert"),
		body: apijson.RevertRequest{Reason: reason}})
}

// PlanRevertSchedule reports what RevertSchedule would change and the next
// fire times before and after; nothing is written.
func (c *Client) PlanRevertSchedule(ctx context.Context, id string, n int64) (*apijson.RevertPlan, error) {
	return call[apijson.RevertPlan](ctx, c, request{method: http.MethodPost, path: versionPath(id, n, "/revert"),
		query: url.Values{"dry_run": {"true"}}, body: struct{}{}, idempotent: true})
}
