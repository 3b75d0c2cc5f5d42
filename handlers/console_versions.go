package handlers

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// The console's Versions tab (docs/versions.md): the list, a comparison of
// any two versions side by side, and Revert behind a confirm page. Every
// page is a plain GET or a form post; nothing needs JavaScript.

// CheckSourceHeader refuses an X-Tideline-Source other than the tools it
// names (cli, apply): 422, before anything is read or written.
func CheckSourceHeader(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Header.Get(SourceHeader) {
		case "", scheduling.SourceCLI, scheduling.SourceApply:
			return next(c)
		}
		return scheduling.NewValidationError(SourceHeader, "must be cli or apply (Tideline's own tools), or absent")
	}
}

// VersionKeeper serves the Versions tab, its revert and the drift marks.
type VersionKeeper interface {
	Versions(ctx context.Context, namespace, scheduleID string) ([]scheduling.Version, error)
	DiffVersions(ctx context.Context, namespace, scheduleID string, from, to int64) (*scheduling.VersionDiff, error)
	PlanRevert(ctx context.Context, namespace, scheduleID string, n int64) (*scheduling.RevertPlan, error)
	Revert(ctx context.Context, namespace, scheduleID string, n int64, cc *scheduling.CommandContext) (*models.Schedule, error)
	DriftOf(ctx context.Context, schedules []models.Schedule) (map[string]scheduling.Drift, error)
	Drifted(ctx context.Context, namespace string) ([]models.Schedule, map[string]scheduling.Drift, error)
}

func versionsURL(id string) string { return scheduleURL(id) + "/versions" }

func (r *request) tabs(id, current string, versions int) views.ScheduleTabs {
	// History stays the action bar's button (a modal with JavaScript), the
	// schedule page's one link to it.
	return views.ScheduleTabs{OverviewURL: r.url(scheduleURL(id)), VersionsURL: r.url(versionsURL(id)),
		Current: current, Versions: versions}
}

// versionBy spells where a version came from, e.g. "bob (console)".
func versionBy(v *scheduling.Version) string {
	actor := ""
	if v.Context != nil {
		actor = v.Context.Actor
	}
	switch {
	case actor != "" && v.Source != "":
		return actor + " (" + v.Source + ")"
	case actor != "":
		return actor
	}
	return v.Source
}

// driftView is the drift notice of a schedule, nil when it has none.
func (r *request) driftView(s *models.Schedule) (*views.DriftView, error) {
	if r.h.VersionStore == nil {
		return nil, nil
	}
	drift, err := r.h.VersionStore.DriftOf(r.c.Request().Context(), []models.Schedule{*s})
	if err != nil {
		return nil, err
	}
	d, ok := drift[s.ID]
	if !ok || !d.Drifted {
		return nil, nil
	}
	by := d.LatestAuthor
	if d.LatestSource != "" && d.LatestSource != by {
		by = strings.TrimSpace(by + " (" + d.LatestSource + ")")
	}
	return &views.DriftView{LastApply: d.LastApply, Latest: d.Latest, By: by,
		DiffURL: r.url(versionsURL(s.ScheduleID)+"/diff", "from", itoa(d.LastApply), "to", itoa(d.Latest))}, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Versions answers GET /waterline/schedules/{id}/versions, newest first.
func (h *Console) Versions(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	s, err := h.Schedules.Get(ctx, r.ns, c.Param("schedule_id"))
	if err != nil {
		return err
	}
	versions, err := h.VersionStore.Versions(ctx, r.ns, s.ScheduleID)
	if err != nil {
		return err
	}
	loc := r.zone(s.Spec.Timezone)
	v := views.VersionsView{ScheduleID: s.ScheduleID, Tabs: r.tabs(s.ScheduleID, "versions", len(versions)),
		Managed: managedByApply(s), DiffURL: versionsURL(s.ScheduleID) + "/diff"}
	if ns := r.urlNamespace(); ns != "" {
		v.Hidden = append(v.Hidden, views.KV{Key: "namespace", Value: ns})
	}
	if v.Drift, err = r.driftView(s); err != nil {
		return err
	}
	n := int64(len(versions))
	v.To, v.From = n, max(n-1, 1)
	canRevert := r.canAdmin() && s.Status != models.StatusDeleted
	for i := len(versions) - 1; i >= 0; i-- {
		ver := &versions[i]
		row := views.VersionRowView{N: ver.N, RecordedAt: eventMoment(ver.RecordedAt, loc, r.now), Source: ver.Source,
			Changed: ver.ChangedFields, Unrecorded: strings.Join(ver.Unrecorded, ", "), Current: ver.N == n}
		if ver.Context != nil {
			row.Actor = ver.Context.Actor
		}
		if ver.RevertedTo != nil {
			row.RevertedTo = *ver.RevertedTo
		}
		if ver.N > 1 {
			row.ViewURL = r.url(versionsURL(s.ScheduleID)+"/diff", "from", itoa(ver.N-1), "to", itoa(ver.N))
		}
		if canRevert && ver.N != n {
			row.RevertURL = r.url(versionsURL(s.ScheduleID) + "/" + itoa(ver.N) + "/revert")
		}
		v.Rows = append(v.Rows, row)
	}
	return ok(c, views.VersionsPage(r.layout("Versions of "+s.ScheduleID, "schedules"), v))
}

// VersionDiff answers GET /waterline/schedules/{id}/versions/diff?from=&to=:
// every field of the two versions side by side, the changed ones marked.
func (h *Console) VersionDiff(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	s, err := h.Schedules.Get(ctx, r.ns, c.Param("schedule_id"))
	if err != nil {
		return err
	}
	versions, err := h.VersionStore.Versions(ctx, r.ns, s.ScheduleID)
	if err != nil {
		return err
	}
	n := int64(len(versions))
	from, to, err := versionRange(c, func() (int64, error) { return n, nil })
	if err != nil {
		return err
	}
	d, err := h.VersionStore.DiffVersions(ctx, r.ns, s.ScheduleID, from, to)
	if err != nil {
		return err
	}
	loc := r.zone(s.Spec.Timezone)
	head := func(ver *scheduling.Version) views.VersionHeadView {
		return views.VersionHeadView{N: ver.N, RecordedAt: eventMoment(ver.RecordedAt, loc, r.now), By: versionBy(ver)}
	}
	v := views.VersionDiffView{ScheduleID: s.ScheduleID, Tabs: r.tabs(s.ScheduleID, "versions", int(n)),
		From: head(d.From), To: head(d.To), Changed: len(d.Changes),
		SwapURL: r.url(versionsURL(s.ScheduleID)+"/diff", "from", itoa(to), "to", itoa(from))}
	if r.canAdmin() && s.Status != models.StatusDeleted && from != n {
		v.RevertURL = r.url(versionsURL(s.ScheduleID) + "/" + itoa(from) + "/revert")
	}
	for _, f := range d.Fields {
		v.Fields = append(v.Fields, views.DiffFieldView{Field: f.Field, Label: views.FieldLabel(f.Field), From: f.From, To: f.To,
			Changed: f.Changed, Unrecorded: f.Unrecorded})
	}
	return ok(c, views.VersionDiffPage(r.layout(fmt.Sprintf("%s: v%d → v%d", s.ScheduleID, from, to), "schedules"), v))
}

// RevertConfirm answers GET /waterline/schedules/{id}/versions/{n}/revert:
// what the revert changes and the next five fire times before and after.
func (h *Console) RevertConfirm(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	n, err := versionNumber("n", c.Param("n"))
	if err != nil {
		return err
	}
	ctx, id := c.Request().Context(), c.Param("schedule_id")
	plan, err := h.VersionStore.PlanRevert(ctx, r.ns, id, n)
	if err != nil {
		return err
	}
	s := plan.Plan.Schedule
	loc := r.zone(s.Spec.Timezone)
	times := func(list []time.Time) []views.Moment {
		out := make([]views.Moment, 0, len(list))
		for _, t := range list {
			out = append(out, moment(t, loc, r.now))
		}
		return out
	}
	v := views.RevertConfirmView{ScheduleID: s.ScheduleID, Tabs: r.tabs(s.ScheduleID, "versions", 0), N: n,
		CSRFToken: csrfToken(c), Action: r.url(versionsURL(s.ScheduleID) + "/" + itoa(n) + "/revert"),
		CancelURL: r.url(versionsURL(s.ScheduleID)), Before: times(plan.FireTimesBefore), After: times(plan.FireTimesAfter),
		Paused: s.Status != models.StatusActive, Zone: s.Spec.Timezone, Managed: managedByApply(s)}
	if v.Zone == "" {
		v.Zone = "UTC"
	}
	for _, ch := range plan.Plan.Changes {
		v.Changes = append(v.Changes, views.FieldChange{Field: ch.Field, From: ch.From, To: ch.To})
	}
	var kept []string
	for _, f := range plan.Version.Unrecorded {
		if !slices.ContainsFunc(plan.Plan.Changes, func(ch scheduling.FieldChange) bool { return ch.Field == f }) {
			kept = append(kept, f)
		}
	}
	v.Unrecorded = strings.Join(kept, ", ")
	return ok(c, views.RevertConfirmPage(r.layout(fmt.Sprintf("Revert %s to version %d", s.ScheduleID, n), "schedules"), v))
}

// Revert answers POST /waterline/schedules/{id}/versions/{n}/revert and
// goes back to the schedule page with what changed.
func (h *Console) Revert(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	n, err := versionNumber("n", c.Param("n"))
	if err != nil {
		return err
	}
	id := c.Param("schedule_id")
	back := r.url(versionsURL(id))
	_, err = h.VersionStore.Revert(c.Request().Context(), r.ns, id, n, r.cc(strings.TrimSpace(c.FormValue("reason"))))
	if msg, _, handled := refusal(err); handled {
		return r.redirect(back, views.Flash{Kind: "error", Message: "Not reverted: " + msg})
	} else if err != nil {
		return err
	}
	return r.redirect(r.url(scheduleURL(id)), views.Flash{Kind: "ok", Message: fmt.Sprintf("Reverted %s to version %d.", id, n),
		LinkURL: back, LinkLabel: "Versions"})
}

// driftedRows are the registry's ?drift=1 rows: the schedules kept by
// apply that were edited outside it since.
func (h *Console) driftedRows(r *request, self string) ([]views.ScheduleRowView, error) {
	drifted, _, err := h.VersionStore.Drifted(r.c.Request().Context(), r.ns)
	if err != nil {
		return nil, err
	}
	rows := make([]views.ScheduleRowView, 0, len(drifted))
	for i := range drifted {
		row := r.row(&drifted[i], self)
		row.Drifted = true
		rows = append(rows, row)
	}
	return rows, nil
}

// markDrift marks the rows of a registry page whose schedules drifted.
func (h *Console) markDrift(r *request, page []models.Schedule, rows []views.ScheduleRowView) error {
	drift, err := h.VersionStore.DriftOf(r.c.Request().Context(), page)
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].Drifted = drift[page[i].ID].Drifted
	}
	return nil
}
