package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// BackfillKeeper serves the backfill jobs: the Backfill dialog's start, the
// Backfills page, a job's page and its actions, the schedule page's jobs.
type BackfillKeeper interface {
	StartBackfill(ctx context.Context, namespace, scheduleID string, in scheduling.BackfillJobInput) (*models.Backfill, error)
	OutlineBackfill(ctx context.Context, namespace, scheduleID string, from, to time.Time, policy string, listed int) (*scheduling.BackfillOutline, error)
	GetBackfill(ctx context.Context, namespace, id string) (*models.Backfill, error)
	ListBackfills(ctx context.Context, namespace string, q scheduling.BackfillListQuery) (*scheduling.BackfillPage, error)
	PauseBackfill(ctx context.Context, namespace, id string, cc *scheduling.CommandContext) (*models.Backfill, error)
	ResumeBackfill(ctx context.Context, namespace, id string, cc *scheduling.CommandContext) (*models.Backfill, error)
	CancelBackfill(ctx context.Context, namespace, id string, cc *scheduling.CommandContext) (*models.Backfill, error)
}

var _ BackfillKeeper = (*scheduling.Service)(nil)

const backfillsPath = consolePrefix + "/backfills"

func backfillURL(id string) string { return backfillsPath + "/" + url.PathEscape(id) }

// jobView pre-formats a job for views: times in the schedule's zone, the
// bar's widths, the actions the viewer may take in its status.
func (r *request) jobView(j *models.Backfill, loc *time.Location, returnTo string) views.BackfillJobView {
	v := views.BackfillJobView{
		ID: j.ID, URL: r.url(backfillURL(j.ID)), ScheduleID: j.ScheduleID, ScheduleURL: r.url(scheduleURL(j.ScheduleID)),
		Status: j.Status, Total: j.Total, Started: j.Started, Skipped: j.Skipped, Failed: j.Failed, Buffered: j.Buffered,
		Remaining: j.Remaining(), CreatedBy: j.CreatedBy, CreatedAt: moment(j.CreatedAt, loc, r.now),
		Window: j.From.In(loc).Format(localLayout) + " → " + j.To.In(loc).Format(localLayout) + " (" + loc.String() + ")",
		Live:   j.Status == models.BackfillRunning, ReturnTo: returnTo,
	}
	if j.Total > 0 {
		v.StartedPct = int(j.Started * 100 / j.Total)
		v.SkippedPct = int(j.Skipped * 100 / j.Total)
		v.DonePct = int(j.Handled() * 100 / j.Total)
	} else {
		v.DonePct = 100
	}
	if eta := scheduling.BackfillETA(j, r.now); eta != nil && j.Remaining() > 0 {
		v.ETA = moment(*eta, loc, r.now)
	}
	switch {
	case j.MaxPerMinute != nil && j.MaxConcurrentRuns != nil:
		v.Pace = fmt.Sprintf("at most %d a minute · %d runs at once", *j.MaxPerMinute, *j.MaxConcurrentRuns)
	case j.MaxPerMinute != nil:
		v.Pace = fmt.Sprintf("at most %d a minute", *j.MaxPerMinute)
	case j.MaxConcurrentRuns != nil:
		v.Pace = fmt.Sprintf("at most %d runs at once", *j.MaxConcurrentRuns)
	}
	if j.Error != nil {
		v.Error = *j.Error
	}
	if r.canOperate() {
		action := func(verb string) string { return r.url(backfillURL(j.ID) + "/" + verb) }
		switch j.Status {
		case models.BackfillRunning:
			v.PauseURL, v.CancelURL = action("pause"), action("cancel")
		case models.BackfillPaused:
			v.ResumeURL, v.CancelURL = action("resume"), action("cancel")
		}
	}
	return v
}

// jobZone is where a job's times are shown: its schedule's zone.
func (r *request) jobZone(j *models.Backfill) *time.Location {
	if s, err := r.h.Schedules.Get(r.c.Request().Context(), r.ns, j.ScheduleID); err == nil {
		return scheduleZone(s)
	}
	return time.UTC
}

// Backfills answers GET /waterline/backfills: the namespace's jobs, newest
// first, ?status= to filter, ?before= to page.
func (h *Console) Backfills(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	status := c.QueryParam("status")
	page, err := h.BackfillStore.ListBackfills(c.Request().Context(), r.ns, scheduling.BackfillListQuery{Status: status, Cursor: c.QueryParam("before"), Limit: 50})
	if err != nil {
		return err
	}
	v := views.BackfillsView{Status: status}
	v.Filters = append(v.Filters, views.Link{Label: "all", URL: r.url(backfillsPath)})
	for _, s := range scheduling.BackfillStatuses {
		v.Filters = append(v.Filters, views.Link{Label: s, URL: r.url(backfillsPath, "status", s)})
	}
	zones := map[string]*time.Location{}
	for i := range page.Backfills {
		j := &page.Backfills[i]
		loc, ok := zones[j.ScheduleID]
		if !ok {
			loc = r.jobZone(j)
			zones[j.ScheduleID] = loc
		}
		v.Jobs = append(v.Jobs, r.jobView(j, loc, ""))
	}
	if page.HasMore {
		v.OlderURL = r.url(backfillsPath, "status", status, "before", page.NextCursor)
	}
	if c.QueryParam("before") != "" {
		v.NewerURL = r.url(backfillsPath, "status", status)
	}
	return ok(c, views.BackfillsPage(r.layout("Backfills", "backfills"), v))
}

// BackfillJob answers GET /waterline/backfills/{id}: the job's page (its
// live panel polls it).
func (h *Console) BackfillJob(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	j, err := h.BackfillStore.GetBackfill(c.Request().Context(), r.ns, c.Param("backfill_id"))
	if err != nil {
		return err
	}
	return ok(c, views.BackfillJobPage(r.layout("Backfill of "+j.ScheduleID, "backfills"), r.jobView(j, r.jobZone(j), "")))
}

// PauseBackfill, ResumeBackfill and CancelBackfill answer POST
// /waterline/backfills/{id}/pause|resume|cancel: with htmx the job's panel,
// without it a redirect back with a flash message.
func (h *Console) PauseBackfill(c echo.Context) error {
	return h.backfillAction(c, "Paused", h.BackfillStore.PauseBackfill)
}

// ResumeBackfill: see PauseBackfill.
func (h *Console) ResumeBackfill(c echo.Context) error {
	return h.backfillAction(c, "Resumed", h.BackfillStore.ResumeBackfill)
}

// CancelBackfill: see PauseBackfill.
func (h *Console) CancelBackfill(c echo.Context) error {
	return h.backfillAction(c, "Cancelled", h.BackfillStore.CancelBackfill)
}

func (h *Console) backfillAction(c echo.Context, done string,
	act func(ctx context.Context, namespace, id string, cc *scheduling.CommandContext) (*models.Backfill, error)) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	id := c.Param("backfill_id")
	back := r.returnTo(r.url(backfillURL(id)))
	j, err := act(c.Request().Context(), r.ns, id, r.cc(""))
	if err != nil {
		msg, _, known := refusal(err)
		if !known {
			return err
		}
		if isHX(c) {
			j, gerr := h.BackfillStore.GetBackfill(c.Request().Context(), r.ns, id)
			if gerr != nil {
				return gerr
			}
			v := r.jobView(j, r.jobZone(j), back)
			v.Error = msg
			return Render(c, http.StatusConflict, views.BackfillProgress(csrfToken(c), v))
		}
		return r.redirect(back, views.Flash{Kind: "error", Message: msg})
	}
	if isHX(c) {
		return Render(c, http.StatusOK, views.BackfillProgress(csrfToken(c), r.jobView(j, r.jobZone(j), back)))
	}
	return r.redirect(back, views.Flash{Kind: "ok", Message: fmt.Sprintf("%s the backfill of %s.", done, j.ScheduleID)})
}

// scheduleJobs are the schedule page's backfills: its five newest jobs.
func (r *request) scheduleJobs(s *models.Schedule, self string) ([]views.BackfillJobView, bool, error) {
	page, err := r.h.BackfillStore.ListBackfills(r.c.Request().Context(), r.ns, scheduling.BackfillListQuery{ScheduleID: s.ScheduleID, Limit: 5})
	if err != nil {
		return nil, false, err
	}
	loc, live := scheduleZone(s), false
	out := make([]views.BackfillJobView, 0, len(page.Backfills))
	for i := range page.Backfills {
		j := &page.Backfills[i]
		live = live || j.Status == models.BackfillRunning
		out = append(out, r.jobView(j, loc, self))
	}
	return out, live, nil
}
