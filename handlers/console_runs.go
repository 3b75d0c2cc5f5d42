package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

const runsPath = consolePrefix + "/runs"

// runRow is one run in a list, its times in the zone named: its schedule's
// (under the "Schedule's zone" setting; UTC for a run without one).
func (r *request) runRow(run *models.Run, zoneName string) views.RunRowView {
	loc := r.zone(zoneName)
	row := views.RunRowView{
		RunID: run.ID, RunURL: r.url(runURL(run.ID)), InstanceID: run.InstanceID, WorkflowType: run.WorkflowType,
		Status: run.Status, Trigger: run.Trigger, Attempt: run.Attempt,
		CreatedAt: moment(run.CreatedAt, loc, r.now), StartedAt: momentPtr(run.StartedAt, loc, r.now),
		ClosedAt: momentPtr(run.FinishedAt, loc, r.now), Duration: runDuration(run),
	}
	if run.RetryPolicy != nil && run.RetryPolicy.MaxAttempts != nil {
		row.MaxAttempts = *run.RetryPolicy.MaxAttempts
	}
	if run.FailureMessage != nil && *run.FailureMessage != "" {
		row.Error = *run.FailureMessage
		if t := deref(run.FailureType); t != "" {
			row.Error = t + ": " + row.Error
		}
	}
	if run.ScheduleID != nil {
		row.Schedule = views.Link{Label: *run.ScheduleID, URL: r.url(scheduleURL(*run.ScheduleID))}
	}
	return row
}

// attemptMoment is an attempt's time (or the next one's) with its seconds
// when they matter: retries come seconds apart, so a delay under a minute
// from the moment before (prev; zero for none), or one not of whole
// minutes, would read as the same minute twice.
func attemptMoment(t, prev time.Time, loc *time.Location, now time.Time) views.Moment {
	m := moment(t, loc, now)
	gap := t.Sub(prev).Truncate(time.Second)
	if m.Text != "" && (t.Second() != 0 || (!prev.IsZero() && (gap < time.Minute || gap%time.Minute != 0))) {
		m.Text = t.In(loc).Format(secondLayout)
	}
	return m
}

func runDuration(run *models.Run) string {
	if run.StartedAt == nil || run.FinishedAt == nil {
		return ""
	}
	return durationText(run.FinishedAt.Sub(*run.StartedAt))
}

// Runs answers GET /waterline/runs (?status=&schedule_id=&cursor=).
func (h *Console) Runs(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	status, scheduleID, cursor, limitRaw := c.QueryParam("status"), strings.TrimSpace(c.QueryParam("schedule_id")), c.QueryParam("cursor"), c.QueryParam("limit")
	wfType, fromRaw, toRaw := strings.TrimSpace(c.QueryParam("workflow_type")), strings.TrimSpace(c.QueryParam("created_from")), strings.TrimSpace(c.QueryParam("created_to"))
	v := views.RunsView{
		Filters:  views.RunFilters{Action: runsPath, Status: status, ScheduleID: scheduleID, WorkflowType: wfType, CreatedFrom: fromRaw, CreatedTo: toRaw},
		Filtered: status != "" || scheduleID != "" || wfType != "" || fromRaw != "" || toRaw != "", ClearFiltersURL: r.url(runsPath),
	}
	// list is this page's URL with the filters and another cursor.
	list := func(cursor string) string {
		return r.url(runsPath, "status", status, "schedule_id", scheduleID, "workflow_type", wfType, "created_from", fromRaw,
			"created_to", toRaw, "cursor", cursor, "limit", limitRaw)
	}
	var statuses []string
	if status != "" {
		statuses = []string{status}
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultListLimit, scheduling.CodeValidationFailed)
	from, fromErr := queryTime(fromRaw, "created_from")
	to, toErr := queryTime(toRaw, "created_to")
	err = errors.Join(err, fromErr, toErr)
	var page *scheduling.RunPage
	if err == nil {
		page, err = h.RunStore.ListRuns(c.Request().Context(), scheduling.RunListFilter{
			Namespace: r.ns, ScheduleID: scheduleID, Statuses: statuses, Cursor: cursor, Limit: int(limit),
			WorkflowType: wfType, CreatedFrom: from, CreatedTo: to})
	}
	l := r.layout("Runs", "runs")
	if err != nil {
		var val *scheduling.ValidationError
		switch {
		case errors.As(err, &val):
			l.Flash = &views.Flash{Kind: "error", Message: "Cannot list runs: " + validationText(val)}
		case errors.Is(err, scheduling.ErrNotFound) && scheduleID != "":
			// Filtering by a schedule that does not exist (here) simply
			// matches nothing; say so rather than showing an error page.
			l.Flash = &views.Flash{Kind: "error", Message: fmt.Sprintf("No schedule %q in namespace %q.", scheduleID, r.ns)}
		default:
			return err
		}
		return Render(c, http.StatusUnprocessableEntity, views.RunsPage(l, v))
	}
	for i := range page.Runs {
		zone := ""
		if id := page.Runs[i].WorkflowScheduleID; id != nil {
			zone = page.Zones[*id]
		}
		v.Rows = append(v.Rows, r.runRow(&page.Runs[i], zone))
		if page.Runs[i].Active() {
			v.RefreshURL = r.c.Request().URL.RequestURI() // live while one is in flight
		}
	}
	if page.HasMore {
		v.Pager.NextURL = list(page.NextCursor)
	}
	if cursor != "" {
		v.Pager.FirstURL = list("")
	}
	if page.Scanned > 0 {
		v.ScanNote = fmt.Sprintf("Showing matches for workflow type %q among the latest %s runs", wfType, views.GroupDigits(int64(page.Scanned)))
		if cursor != "" {
			v.ScanNote += " before the previous page"
		}
		v.ScanNote += " (the type has no index, so a page looks at a bounded number of runs); Next page looks at the ones before them. A time range narrows the search."
	}
	// "Retry all matching" takes the status and schedule filters only; it
	// is not offered where the list is narrowed further, so it never
	// retries more than the page says match.
	if (status == models.RunFailed || status == models.RunTimedOut) && r.canOperate() && wfType == "" && from == nil && to == nil {
		v.RetryMatchingURL, v.CSRFToken = r.url(runsPath+"/retry"), l.CSRFToken
	}
	return ok(c, views.RunsPage(l, v))
}

// Run answers GET /waterline/runs/{run_id}: the run and its own history.
func (h *Console) Run(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	d, err := h.RunStore.DescribeRun(c.Request().Context(), r.ns, c.Param("run_id"))
	if err != nil {
		return err
	}
	return ok(c, views.RunDetailPage(r.layout("Run "+d.Run.ID, "runs"), r.runDetail(d)))
}

func (r *request) runDetail(d *scheduling.RunDescription) views.RunDetailView {
	run := d.Run
	// Times of a scheduled run read best in its schedule's zone, which the
	// provenance event records.
	loc := r.zone("")
	for _, e := range d.Events {
		if e.EventType == scheduling.RunEventScheduleTriggered {
			var p struct {
				Timezone string `json:"timezone"`
			}
			if json.Unmarshal(e.Payload, &p) == nil {
				loc = r.zone(p.Timezone)
			}
		}
	}
	active := run.Active()
	v := views.RunDetailView{
		RunID: run.ID, InstanceID: run.InstanceID, Namespace: run.Namespace, WorkflowType: run.WorkflowType,
		WorkflowClass: run.WorkflowClass, Status: run.Status, Trigger: run.Trigger,
		OccurrenceTime: momentPtr(run.OccurrenceTime, loc, r.now), Connection: run.Connection, Queue: run.Queue,
		WorkerID: deref(run.WorkerID), CreatedAt: moment(run.CreatedAt, loc, r.now),
		StartedAt: momentPtr(run.StartedAt, loc, r.now), ClosedAt: momentPtr(run.FinishedAt, loc, r.now),
		Duration: runDuration(run), CancelRequested: run.CancelRequestedAt != nil && active,
		Input: prettyJSON(run.Input), Output: prettyJSON(run.Output),
		FailureMessage: deref(run.FailureMessage), FailureType: deref(run.FailureType),
		CanCancel: active && run.CancelRequestedAt == nil && r.canOperate(), CanTerminate: active && r.canOperate(),
		CancelURL: r.url(runURL(run.ID) + "/cancel"), TerminateURL: r.url(runURL(run.ID) + "/terminate"),
		CanRetry:    (run.Status == models.RunFailed || run.Status == models.RunTimedOut) && r.canOperate(),
		RetryURL:    r.url(runURL(run.ID) + "/retry"),
		CanRunAgain: !active && run.ScheduleID != nil && r.canOperate(),
		RunAgainURL: r.url(runURL(run.ID) + "/again"),
	}
	if run.Attempt > 0 {
		v.Attempt = strconv.Itoa(run.Attempt)
	}
	if active {
		v.LeaseExpiresAt = momentPtr(run.LeaseExpiresAt, loc, r.now)
	}
	if run.ScheduleID != nil {
		v.Schedule = views.Link{Label: *run.ScheduleID, URL: r.url(scheduleURL(*run.ScheduleID))}
	}
	for _, e := range d.Events {
		v.Events = append(v.Events, r.runEvent(e, loc))
	}
	var prev time.Time
	for _, a := range d.Attempts {
		av := views.AttemptView{Number: a.Number, WorkerID: a.WorkerID, Started: attemptMoment(a.StartedAt, prev, loc, r.now), Outcome: a.Outcome}
		prev = a.StartedAt
		if a.EndedAt != nil {
			prev = *a.EndedAt
		}
		if a.EndedAt != nil {
			av.Duration = durationText(a.EndedAt.Sub(a.StartedAt))
		}
		if a.ErrorType != "" || a.Message != "" {
			av.Error = strings.TrimPrefix(a.ErrorType+": "+a.Message, ": ")
		}
		if a.HTTPStatus != nil {
			av.HTTPStatus = strconv.Itoa(*a.HTTPStatus)
		}
		v.Attempts = append(v.Attempts, av)
	}
	if run.Status == models.RunPending && run.AvailableAt != nil {
		v.NextAttempt = attemptMoment(*run.AvailableAt, prev, loc, r.now)
	}
	v.RetryPolicy = retryPolicyText(run.RetryPolicy)
	if active {
		v.RefreshURL = r.url(runURL(run.ID))
	}
	return v
}

func (r *request) runEvent(e models.RunEvent, loc *time.Location) views.RunEventView {
	ev := views.RunEventView{Sequence: e.Sequence, EventType: e.EventType, Payload: prettyJSON(e.Payload),
		RecordedAt: eventMoment(e.RecordedAt, loc, r.now)}
	var p map[string]any
	_ = json.Unmarshal(e.Payload, &p)
	str := func(k string) string { s, _ := p[k].(string); return s }
	switch e.EventType {
	case scheduling.RunEventScheduleTriggered:
		id := str("schedule_id")
		ev.Summary = fmt.Sprintf("Started by schedule %s (trigger #%v, policy %s)", id, p["trigger_number"], str("overlap_policy"))
		if id != "" {
			ev.Links = append(ev.Links, views.Link{Label: "Schedule " + id, URL: r.url(scheduleURL(id))})
		}
	case scheduling.RunEventFailed:
		ev.Summary = strings.TrimPrefix(str("type")+": "+str("message"), ": ")
	case scheduling.RunEventTimedOut:
		ev.Summary = str("timeout") + " timeout"
	case scheduling.RunEventAttemptFailed:
		ev.Summary = fmt.Sprintf("attempt %v failed: %s", p["attempt"], strings.TrimPrefix(str("error_type")+": "+str("message"), ": "))
		if next, err := time.Parse(time.RFC3339Nano, str("next_attempt_at")); err == nil {
			ev.Summary += "; next attempt at " + attemptMoment(next, e.RecordedAt, loc, r.now).Text
		} else {
			ev.Summary += "; no attempt follows"
		}
	default:
		if reason := str("reason"); reason != "" {
			ev.Summary = "reason: " + reason
		}
	}
	return ev
}

// CancelRun answers POST /waterline/runs/{run_id}/cancel.
func (h *Console) CancelRun(c echo.Context) error {
	return h.runAction(c, h.RunStore.CancelRun, "Cancellation requested.")
}

// TerminateRun answers POST /waterline/runs/{run_id}/terminate (reason).
func (h *Console) TerminateRun(c echo.Context) error {
	return h.runAction(c, h.RunStore.TerminateRun, "Run terminated.")
}

// RetryRun answers POST /waterline/runs/{run_id}/retry (reason).
func (h *Console) RetryRun(c echo.Context) error {
	return h.runAction(c, h.RunStore.RetryRun, "Retried: the run is pending for one more attempt.")
}

// RunAgain answers POST /waterline/runs/{run_id}/again (reason): the new
// run's page, or the old one's with why nothing started.
func (h *Console) RunAgain(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	id := c.Param("run_id")
	res, err := h.RunStore.RunAgain(c.Request().Context(), r.ns, id, r.cc(strings.TrimSpace(c.FormValue("reason"))))
	if err != nil {
		msg, _, known := refusal(err)
		if !known {
			return err
		}
		return r.redirect(r.url(runURL(id)), views.Flash{Kind: "error", Message: msg})
	}
	switch res.Outcome {
	case scheduling.OutcomeBuffered:
		return r.redirect(r.url(runURL(id)), views.Flash{Kind: "ok", Message: fmt.Sprintf("Buffered: it starts when the schedule's running run finishes (%d waiting).", res.BufferDepth)})
	case scheduling.OutcomeSkipped:
		return r.redirect(r.url(runURL(id)), views.Flash{Kind: "error", Message: fmt.Sprintf("Did not start: skipped (%s).", strings.ReplaceAll(res.Reason, "_", " "))})
	}
	return r.redirect(r.url(runURL(res.RunID)), views.Flash{Kind: "ok", Message: "Started again as a new run, from run " + id + "'s input."})
}

// RetryMatching answers POST /waterline/runs/retry (status, schedule_id,
// reason): back to the same filter with how many were retried.
func (h *Console) RetryMatching(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	status, scheduleID := c.FormValue("status"), strings.TrimSpace(c.FormValue("schedule_id"))
	back := r.url(runsPath, "status", status, "schedule_id", scheduleID)
	n, more, err := h.RunStore.RetryMatching(c.Request().Context(), scheduling.RunListFilter{
		Namespace: r.ns, ScheduleID: scheduleID, Statuses: []string{status}}, r.cc(strings.TrimSpace(c.FormValue("reason"))))
	if err != nil {
		msg, _, known := refusal(err)
		if !known {
			return err
		}
		return r.redirect(back, views.Flash{Kind: "error", Message: msg})
	}
	msg := fmt.Sprintf("Retried %s: pending for one more attempt.", pluralRuns(n))
	if more {
		msg += fmt.Sprintf(" More match; retry again for the next %d.", scheduling.MaxRetryMatching)
	}
	return r.redirect(back, views.Flash{Kind: "ok", Message: msg})
}

func pluralRuns(n int) string {
	if n == 1 {
		return "1 run"
	}
	return strconv.Itoa(n) + " runs"
}

func (h *Console) runAction(c echo.Context, action func(ctx context.Context, ns, runID string, cc *scheduling.CommandContext) (*models.Run, error), done string) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	id := c.Param("run_id")
	target := r.url(runURL(id))
	_, err = action(c.Request().Context(), r.ns, id, r.cc(strings.TrimSpace(c.FormValue("reason"))))
	if err != nil {
		msg, _, known := refusal(err)
		if !known {
			return err
		}
		return r.redirect(target, views.Flash{Kind: "error", Message: msg})
	}
	run, err := h.RunStore.GetRun(c.Request().Context(), r.ns, id)
	if err != nil {
		return err
	}
	if run.Status == models.RunCancelled {
		done = "Run cancelled: no worker had claimed it yet."
	}
	return r.redirect(target, views.Flash{Kind: "ok", Message: done})
}
