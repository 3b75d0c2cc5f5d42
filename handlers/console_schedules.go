package handlers

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
	"github.com/tidelinehq/tideline/views"
)

const registryPath = consolePrefix + "/schedules"

// actions sets the Can* flags from the schedule's status: only what the
// service would accept is offered. (Roles narrow this further once
// authentication exists.)
func (r *request) actions(s *models.Schedule, returnTo string) views.ScheduleActions {
	base := scheduleURL(s.ScheduleID)
	a := views.ScheduleActions{
		ScheduleID: s.ScheduleID, OverlapPolicy: s.OverlapPolicy, ReturnTo: returnTo,
		PauseURL: r.url(base + "/pause"), ResumeURL: r.url(base + "/resume"), TriggerURL: r.url(base + "/trigger"),
		BackfillURL: r.url(base + "/backfill"), HistoryURL: r.url(base + "/history"), DeleteURL: r.url(base + "/delete"),
		EditURL: r.url(base + "/edit"), Timezone: s.Spec.Timezone,
	}
	if a.Timezone == "" {
		a.Timezone = "UTC"
	}
	operate, admin := r.canOperate(), r.canAdmin()
	switch s.Status {
	case models.StatusActive:
		a.CanPause, a.CanTrigger, a.CanBackfill = operate, operate, operate
		a.CanDelete, a.CanEdit = admin, admin
	case models.StatusPaused:
		// A manual trigger of a paused schedule would only record a skip
		// (status_not_triggerable), so it is not offered.
		a.CanResume, a.CanBackfill = operate, operate
		a.CanDelete, a.CanEdit = admin, admin
	}
	return a
}

// health describes how a schedule's runs went, the strip oldest first.
func (r *request) health(s *models.Schedule, loc *time.Location) views.HealthView {
	h := s.Health
	v := views.HealthView{Consecutive: h.ConsecutiveFailures, Failures: h.FailuresCount, LastError: deref(h.LastRunError),
		RunsURL: r.url(runsPath, "schedule_id", s.ScheduleID)}
	if h.LastRunID != nil {
		v.LastStatus, v.LastAt, v.LastURL = deref(h.LastRunStatus), momentPtr(h.LastRunFinishedAt, loc, r.now), r.url(runURL(*h.LastRunID))
	}
	for i := len(h.RecentRuns) - 1; i >= 0; i-- {
		run := h.RecentRuns[i]
		title := strings.ReplaceAll(run.Status, "_", " ")
		if at := run.Occurrence(); at != nil {
			title += " · " + moment(*at, loc, r.now).Text
		}
		if run.DurationMs != nil {
			title += " · " + durationText(time.Duration(*run.DurationMs)*time.Millisecond)
		}
		v.Recent = append(v.Recent, views.RecentRunView{Status: run.Status, Title: title, URL: r.url(runURL(run.RunID))})
	}
	return v
}

// pause describes a paused schedule's pause; nil when it is not paused.
func (r *request) pause(s *models.Schedule, loc *time.Location) *views.PauseView {
	if s.Status != models.StatusPaused {
		return nil
	}
	return &views.PauseView{
		By: deref(s.PausedBy), At: momentPtr(s.PausedAt, loc, r.now), Reason: deref(s.PauseReason),
		Until: momentPtr(s.PausedUntil, loc, r.now),
	}
}

// row is one registry row.
func (r *request) row(s *models.Schedule, returnTo string) views.ScheduleRowView {
	desc, tz := describeSpec(s.Spec)
	loc := r.zone(tz)
	row := views.ScheduleRowView{
		ScheduleID: s.ScheduleID, DetailURL: r.url(scheduleURL(s.ScheduleID)), WorkflowType: s.Action.WorkflowType,
		SpecDescription: desc, Timezone: tz, Status: s.Status, Ended: s.Ended(), Note: s.Note, Labels: sortedPairs(s.Labels),
		NextFire:   momentPtr(s.NextFireAt, loc, r.now),
		FiresCount: s.FiresCount, SkipsCount: s.SkippedTriggerCount,
		Selectable: s.Status != models.StatusDeleted && r.canOperate(),
		Actions:    r.actions(s, returnTo),
		Paused:     r.pause(s, loc),
		Health:     r.health(s, loc),
		Managed:    managedByApply(s),
	}
	row.State, row.StateLabel = s.HealthState, strings.ReplaceAll(s.HealthState, "_", " ")
	row.Overdue = s.HealthState == scheduling.HealthOverdue // the label agrees with the Overdue chip
	row.Detail = r.rowDetail(s, loc, row.Paused)
	row.SelectColumn = r.canOperate() // a viewer's registry has no checkbox column
	if len(s.RecentActions) > 0 {
		last := s.RecentActions[0]
		row.LastOutcome, row.LastAt, row.LastReason = last.Outcome, moment(last.FiredAt, loc, r.now), last.Reason
	}
	return row
}

// rowDetail is a registry row's second line: what its health state is
// about (the latest error, the run nobody claims, the run fires skip
// behind, how late it is), else its pause; nil when all is well.
func (r *request) rowDetail(s *models.Schedule, loc *time.Location, pause *views.PauseView) *views.RowDetail {
	since := func(t time.Time) string { return strings.TrimSuffix(relative(t, r.now), " ago") }
	lr := s.LatestRun
	var latestURL string
	if s.LatestRunID != nil {
		latestURL = r.url(runURL(*s.LatestRunID))
	}
	switch s.HealthState {
	case scheduling.HealthFailing:
		d := &views.RowDetail{Kind: "error", Text: "last run " + strings.ReplaceAll(deref(s.Health.LastRunStatus), "_", " ")}
		if msg := deref(s.Health.LastRunError); msg != "" {
			d.Text = msg
		}
		if s.Health.LastRunID != nil {
			d.URL = r.url(runURL(*s.Health.LastRunID))
		}
		return d
	case scheduling.HealthStuck:
		queue := lr.Queue
		if queue == "" {
			queue = "default"
		}
		return &views.RowDetail{Kind: "stuck", URL: latestURL,
			Text: fmt.Sprintf("pending %s — unclaimed on queue %s", since(lr.PendingSince()), queue)}
	case scheduling.HealthSkipping:
		// The Last result column has the latest skip and its time.
		text := fmt.Sprintf("fires skip behind a %s run, started %s", lr.Status, relative(lr.CreatedAt, r.now))
		return &views.RowDetail{Kind: "skipping", URL: latestURL, Text: text}
	case scheduling.HealthOverdue:
		return &views.RowDetail{Kind: "overdue",
			Text: fmt.Sprintf("due %s — not fired yet", relative(*s.NextFireAt, r.now))}
	}
	if pause != nil {
		text := pause.Reason
		if text == "" {
			text = "paused, no reason given"
		}
		if pause.At.Text != "" {
			text += " · since " + pause.At.Text
		}
		return &views.RowDetail{Kind: "paused", Text: text}
	}
	return nil
}

// Registry answers GET /waterline/schedules: the full page, or just the
// results for htmx (the 10 s refresh).
func (h *Console) Registry(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	status, q, label, cursor, limitRaw := c.QueryParam("status"), c.QueryParam("q"), c.QueryParam("label"), c.QueryParam("cursor"), c.QueryParam("limit")
	health, sort := c.QueryParam("health"), c.QueryParam("sort")
	back, pageNo := pagerStack(c)
	// list builds a registry URL from the current query with some values
	// replaced; a new filter or order starts again at the first page.
	list := func(over ...string) string {
		kv := map[string]string{"status": status, "q": q, "label": label, "health": health, "sort": sort, "limit": limitRaw, "cursor": cursor,
			"back": strings.Join(back, "."), "page": strconv.Itoa(pageNo)}
		for i := 0; i+1 < len(over); i += 2 {
			kv[over[i]] = over[i+1]
			if over[i] == "cursor" && over[i+1] == "" {
				kv["back"], kv["page"] = "", "" // the first page
			}
		}
		if kv["cursor"] == "" || kv["page"] == "1" {
			kv["page"] = ""
		}
		return r.url(registryPath, "status", kv["status"], "q", kv["q"], "label", kv["label"], "health", kv["health"],
			"sort", kv["sort"], "cursor", kv["cursor"], "back", kv["back"], "page", kv["page"], "limit", kv["limit"])
	}
	self := list()
	v := views.RegistryView{
		Filters: views.RegistryFilters{Action: registryPath, Status: status, Q: q, Label: label, Namespace: r.urlNamespace(),
			Health: health, Sort: sort},
		RefreshURL: self, BulkURL: r.url(registryPath + "/bulk"), CanBulk: r.canOperate(),
		Filtered: status != "" || q != "" || label != "" || health != "", ClearFiltersURL: r.url(registryPath),
	}
	counts, err := h.Schedules.Counts(c.Request().Context(), r.ns)
	if err != nil {
		return err
	}
	v.Chips = registryChips(counts, status, health, list)
	// Most urgent first unless another order is asked for: failing,
	// stuck, overdue and skipping schedules lead the page.
	v.Sorts = []views.FilterChip{
		{Key: "health", Label: "Health", URL: list("sort", "", "cursor", ""), Current: sort == "" || sort == "health"},
		{Key: "schedule_id", Label: "ID", URL: list("sort", "schedule_id", "cursor", ""), Current: sort == "schedule_id"},
		{Key: "next_fire", Label: "Next fire", URL: list("sort", "next_fire", "cursor", ""), Current: sort == "next_fire"},
	}
	if counts.Stale > 0 {
		// The stale are some of the Overdue chip's schedules (the same
		// state, further past), so the two numbers are said together.
		// Both counts stop at a cap: past it, "more than 1,000".
		who := countWord(int(counts.Stale), "schedule is", "schedules are")
		if counts.StaleCapped {
			who = "More than " + views.GroupDigits(counts.Stale) + " schedules are"
		} else if counts.Stale < counts.Overdue || counts.OverdueCapped {
			overdue := views.GroupDigits(counts.Overdue)
			if counts.OverdueCapped {
				overdue = "more than " + overdue
			}
			who = fmt.Sprintf("%d of the %s overdue schedules %s", counts.Stale, overdue, plural(counts.Stale, "is", "are"))
		}
		v.LoopWarning = fmt.Sprintf("%s more than %s past %s fire time: no scheduling loop seems to be running (every replica started with --no-loop, or the loop is stuck).",
			who, durationText(scheduling.LoopGrace), plural(counts.Stale, "its", "their"))
	}
	if err := h.alertsWarning(c, r, &v); err != nil {
		return err
	}
	if r.canAdmin() {
		v.NewURL = r.url(registryPath + "/new")
	}
	var statuses []string
	switch status {
	case "":
	case "all":
		statuses = []string{models.StatusActive, models.StatusPaused, models.StatusDeleted}
	default:
		statuses = []string{status}
	}
	limit, err := queryInt(c, "limit", scheduling.DefaultListLimit, scheduling.CodeValidationFailed)
	var page *scheduling.SchedulePage
	if err == nil {
		page, err = h.Schedules.List(c.Request().Context(), scheduling.ListFilter{
			Namespace: r.ns, Statuses: statuses, Text: q, Label: label, Cursor: cursor, Limit: int(limit), Health: health, Sort: cmp.Or(sort, "health"),
			Counts: &counts})
	}
	l := r.layout("Schedules", "schedules")
	if err != nil {
		// A bad filter or cursor keeps the page (and its filter form) with
		// the message, so the operator can correct it.
		var val *scheduling.ValidationError
		if !errors.As(err, &val) || isHX(c) {
			return err
		}
		l.Flash = &views.Flash{Kind: "error", Message: "Cannot list schedules: " + validationText(val)}
		v.RefreshURL = ""
		return Render(c, http.StatusUnprocessableEntity, views.RegistryPage(l, v))
	}
	for i := range page.Schedules {
		v.Rows = append(v.Rows, r.row(&page.Schedules[i], self))
	}
	if h.VersionStore != nil {
		if err := h.markDrift(r, page.Schedules, v.Rows); err != nil {
			return err
		}
		if c.QueryParam("drift") != "" {
			// Drift is a property of the audit stream, not a column: the
			// drifted schedules are found among those apply manages, all
			// on one page (versions.go, Drifted).
			if v.Rows, err = h.driftedRows(r, self); err != nil {
				return err
			}
			v.Filtered, page.HasMore, cursor = true, false, ""
		}
		v.DriftURL, v.DriftCurrent = r.url(registryPath, "drift", "1"), c.QueryParam("drift") != ""
		for i := range v.Chips {
			v.Chips[i].Current = v.Chips[i].Current && !v.DriftCurrent
		}
	}
	filter := scheduling.ListFilter{Namespace: r.ns, Statuses: statuses, Text: q, Label: label, Health: health, Sort: cmp.Or(sort, "health")}
	if c.QueryParam("drift") == "" {
		total, exact, counted := registryTotal(counts, status, health, q, label)
		if !counted && (page.HasMore || cursor != "") {
			// A text or label filter has no chip: count it, bounded.
			ids, more, err := h.Schedules.MatchingIDs(c.Request().Context(), filter, scheduling.MaxBulkMatching)
			if err != nil {
				return err
			}
			total, exact = int64(len(ids)), !more
		} else if (!counted || !exact) && cursor == "" && !page.HasMore {
			total, exact = int64(len(page.Schedules)), true
		}
		r.registryPager(&v, page, list, back, pageNo, int(limit), total, exact)
		if v.CanBulk && total > 0 && len(v.Rows) > 0 && !isHX(c) {
			v.BulkAll = &views.BulkAll{URL: r.url(registryPath + "/bulk"), Count: int(min(total, scheduling.MaxBulkMatching)),
				Total: total, Exact: exact, Limit: scheduling.MaxBulkMatching,
				Filters: v.Filters}
		}
	}
	if isHX(c) {
		return ok(c, views.RegistryResults(csrfToken(c), v))
	}
	return ok(c, views.RegistryPage(l, v))
}

// registryChips are the health filters with their counts. A chip sets one
// of status (active, paused) or health (failing, overdue) and clears the
// other, so exactly one is current; "all" clears both.
func registryChips(n models.ScheduleCounts, status, health string, list func(...string) string) []views.FilterChip {
	chip := func(key, label string, count int64, more bool, st, he string) views.FilterChip {
		return views.FilterChip{Key: key, Label: label, Count: count, More: more, URL: list("status", st, "health", he, "cursor", ""),
			Current: status == st && health == he}
	}
	return []views.FilterChip{
		chip("all", "All", n.All, false, "", ""),
		chip("failing", "Failing", n.Failing, false, "", "failing"),
		chip("stuck", "Stuck", n.Stuck, n.StuckCapped, "", "stuck"),
		chip("overdue", "Overdue", n.Overdue, n.OverdueCapped, "", "overdue"),
		chip("skipping", "Skipping", n.Skipping, n.SkippingCapped, "", "skipping"),
		chip("paused", "Paused", n.Paused, false, "paused", ""),
		chip("active", "Active", n.Active, false, "active", ""),
	}
}

// Registry paging. The list is keyset-paged (an opaque cursor names the
// last row of a page), which has no way back by itself; so the URL keeps a
// stack of the cursors that led to the page: back is the previous pages'
// cursors, oldest first, joined by "." (a character no cursor holds), with
// "~" for the first page, and page is the page's number. Next pushes the
// current cursor, Previous pops one. The stack keeps the latest
// maxPagerBack pages (about 1.5 KB of URL); further back, First page. A
// page's rows are then page·limit+1… (every page before it is full), and
// the total is a chip's count, so "51–100 of 1,234" costs no query.
const maxPagerBack = 40

// pagerStack reads back and page (1 when absent or unreadable).
func pagerStack(c echo.Context) ([]string, int) {
	var back []string
	if raw := c.QueryParam("back"); raw != "" {
		back = strings.Split(raw, ".")
	}
	n, err := strconv.Atoi(c.QueryParam("page"))
	if err != nil || n < 1 || c.QueryParam("cursor") == "" {
		n = 1
	}
	return back, n
}

// registryTotal is how many schedules the filter selects, when a chip
// counts that set (counted): exactly, or at least total when the chip's
// count stopped at its cap (exact false). A text, label or deleted filter
// has no chip.
func registryTotal(n models.ScheduleCounts, status, health, q, label string) (total int64, exact, counted bool) {
	if q != "" || label != "" || (status != "" && health != "") {
		return 0, false, false
	}
	switch {
	case status == "" && health == "":
		return n.All, true, true
	case status == models.StatusActive:
		return n.Active, true, true
	case status == models.StatusPaused:
		return n.Paused, true, true
	case health == "failing":
		return n.Failing, true, true
	case health == "stuck":
		return n.Stuck, !n.StuckCapped, true
	case health == "overdue":
		return n.Overdue, !n.OverdueCapped, true
	case health == "skipping":
		return n.Skipping, !n.SkippingCapped, true
	}
	return 0, false, false
}

// registryPager fills in First, Previous, Next and "51–100 of 1,234".
func (r *request) registryPager(v *views.RegistryView, page *scheduling.SchedulePage, list func(...string) string, back []string, pageNo, limit int, total int64, exact bool) {
	cursor := r.c.QueryParam("cursor")
	if page.HasMore {
		next := append(slices.Clone(back), cmp.Or(cursor, "~"))
		if len(next) > maxPagerBack {
			next = next[len(next)-maxPagerBack:]
		}
		v.Pager.NextURL = list("cursor", page.NextCursor, "back", strings.Join(next, "."), "page", strconv.Itoa(pageNo+1))
	}
	if cursor != "" {
		v.Pager.FirstURL = list("cursor", "")
		if len(back) > 0 {
			prev := back[len(back)-1]
			if prev == "~" {
				v.Pager.PrevURL = list("cursor", "")
			} else {
				v.Pager.PrevURL = list("cursor", prev, "back", strings.Join(back[:len(back)-1], "."), "page", strconv.Itoa(pageNo-1))
			}
		}
	}
	if len(page.Schedules) == 0 || (cursor != "" && r.c.QueryParam("page") == "") {
		return // a cursor from elsewhere: where the page stands is not known
	}
	if limit <= 0 {
		limit = scheduling.DefaultListLimit
	}
	from := (pageNo-1)*limit + 1
	v.Pager.Range = views.GroupDigits(int64(from))
	if len(page.Schedules) > 1 {
		v.Pager.Range += "–" + views.GroupDigits(int64(from+len(page.Schedules)-1))
	}
	switch {
	case exact:
		v.Pager.Range += " of " + views.GroupDigits(total)
	case total > 0:
		v.Pager.Range += " of more than " + views.GroupDigits(total)
	}
}

// Bulk answers POST /waterline/schedules/bulk (ids…, action, reason).
func (h *Console) Bulk(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return &BadRequestError{Code: scheduling.CodeBadRequest, Message: "could not read the form"}
	}
	back := r.returnTo(r.url(registryPath))
	action, reason := form.Get("action"), strings.TrimSpace(form.Get("reason"))
	var ids []string
	seen := map[string]bool{}
	for _, id := range form["ids"] {
		if id = strings.TrimSpace(id); id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	var verb string
	switch action {
	case "pause":
		verb = "Paused"
	case "resume":
		verb = "Resumed"
	default:
		return r.redirect(back, views.Flash{Kind: "error", Message: "Choose Pause selected or Resume selected."})
	}
	// "Select all N matching": the filter's schedules, at most the N the
	// operator confirmed (and MaxBulkMatching); ones that came to match
	// since are left alone and said so.
	var moreMatch bool
	if form.Get("all") == "1" {
		expect, err := strconv.Atoi(form.Get("expect"))
		if err != nil || expect < 1 {
			return r.redirect(back, views.Flash{Kind: "error", Message: "Confirm how many schedules to change."})
		}
		var statuses []string
		switch st := form.Get("status"); st {
		case "":
		case "all":
			statuses = []string{models.StatusActive, models.StatusPaused, models.StatusDeleted}
		default:
			statuses = []string{st}
		}
		ids, moreMatch, err = h.Schedules.MatchingIDs(c.Request().Context(), scheduling.ListFilter{Namespace: r.ns, Statuses: statuses,
			Text: form.Get("q"), Label: form.Get("label"), Health: form.Get("health"), Sort: cmp.Or(form.Get("sort"), "health")}, expect)
		var val *scheduling.ValidationError
		if errors.As(err, &val) {
			return r.redirect(back, views.Flash{Kind: "error", Message: "Cannot list schedules: " + validationText(val)})
		}
		if err != nil {
			return err
		}
	}
	if len(ids) == 0 {
		return r.redirect(back, views.Flash{Kind: "error", Message: "Select at least one schedule first."})
	}
	var done int
	// Failures are summarised by reason with a few example IDs: a bulk
	// action may cover thousands of schedules, and the flash is a cookie.
	failed := map[string][]string{}
	var reasons []string
	failedCount := 0
	for _, id := range ids {
		if action == "pause" {
			_, err = h.Changes.Pause(c.Request().Context(), r.ns, id, scheduling.PauseInput{Reason: reason}, r.cc(reason))
		} else {
			_, err = h.Changes.Resume(c.Request().Context(), r.ns, id, r.cc(reason))
		}
		if err == nil {
			done++
			continue
		}
		msg, _, known := refusal(err)
		if !known && !errors.Is(err, scheduling.ErrNotFound) {
			return err
		}
		if !known {
			msg = "not found"
		}
		if _, seen := failed[msg]; !seen {
			reasons = append(reasons, msg)
		}
		failed[msg] = append(failed[msg], id)
		failedCount++
	}
	f := views.Flash{Kind: "ok", Message: fmt.Sprintf("%s %s.", verb, countWord(done, "schedule", "schedules"))}
	if failedCount > 0 {
		f.Kind = "error"
		parts := make([]string, 0, len(reasons))
		for _, msg := range reasons {
			parts = append(parts, bulkFailure(failed[msg], msg))
		}
		const maxReasons = 3
		if len(parts) > maxReasons {
			parts = append(parts[:maxReasons], fmt.Sprintf("%d other reasons", len(parts)-maxReasons))
		}
		f.Message += fmt.Sprintf(" Not changed: %s.", strings.Join(parts, "; "))
	}
	if moreMatch {
		f.Message += " More schedules match than were confirmed; they were not changed (select all matching again for them)."
	}
	return r.redirect(back, f)
}

// bulkFailure names up to three of the IDs refused for one reason: "a, b
// (not found)" or "a, b, c and 9,897 more (schedule is paused)".
func bulkFailure(ids []string, reason string) string {
	const shown = 3
	if len(ids) <= shown {
		return strings.Join(ids, ", ") + " (" + reason + ")"
	}
	return fmt.Sprintf("%s and %d more (%s)", strings.Join(ids[:shown], ", "), len(ids)-shown, reason)
}

func countWord(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// finishRow answers a row action. With htmx: the re-read row with the
// result in it (status 200, or 409/422 for a refusal, which htmx swaps
// too). Without JavaScript: back to the page the form was on, with a flash.
func (r *request) finishRow(id string, f views.Flash, outcome *views.TriggerOutcomeView, status int) error {
	if !isHX(r.c) {
		return r.redirect(r.returnTo(r.url(registryPath)), f)
	}
	s, err := r.h.Schedules.Get(r.c.Request().Context(), r.ns, id)
	if err != nil {
		return err
	}
	returnTo, _ := localPath(r.c.FormValue("return_to"))
	row := r.row(s, returnTo)
	row.Outcome = outcome
	if outcome == nil {
		row.Notice = &f
	}
	return Render(r.c, status, views.ScheduleRow(csrfToken(r.c), row))
}

// rowResult turns a service answer into the row action's response: a
// refusal (conflict, validation) is reported in place; anything else
// (not found, internal) goes to the error handler.
func (r *request) rowResult(id string, err error, success views.Flash) error {
	if err == nil {
		return r.finishRow(id, success, nil, http.StatusOK)
	}
	msg, status, known := refusal(err)
	if !known {
		return err
	}
	return r.finishRow(id, views.Flash{Kind: "error", Message: msg}, nil, status)
}

// Pause answers POST /waterline/schedules/{id}/pause (reason).
func (h *Console) Pause(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	id, reason := c.Param("schedule_id"), strings.TrimSpace(c.FormValue("reason"))
	in := scheduling.PauseInput{Reason: reason}
	until, err := r.pauseUntil(id, c.FormValue("until_preset"), strings.TrimSpace(c.FormValue("until_custom")))
	if err != nil {
		return r.rowResult(id, err, views.Flash{})
	}
	in.Until = until
	_, err = h.Changes.Pause(c.Request().Context(), r.ns, id, in, r.cc(reason))
	msg := "Paused " + id + "."
	if reason != "" {
		msg = fmt.Sprintf("Paused %s: %s", id, reason)
	}
	if until != nil {
		msg += " It resumes by itself at " + until.Format(time.RFC3339) + "."
	}
	return r.rowResult(id, err, views.Flash{Kind: "ok", Message: msg})
}

// pauseUntil reads the "Pause until…" choice of the console's pause form:
// none, a preset, or a custom wall time in the schedule's zone.
func (r *request) pauseUntil(id, preset, custom string) (*time.Time, error) {
	if preset == "" {
		return nil, nil
	}
	s, err := r.h.Schedules.Get(r.c.Request().Context(), r.ns, id)
	if err != nil {
		return nil, err
	}
	loc := scheduleZone(s)
	if preset == "custom" {
		t, ok := parseLocal(custom, loc)
		if !ok {
			return nil, scheduling.NewValidationError("paused_until", "must be a date and 24-hour time in the schedule's zone, e.g. 2026-07-01 09:00")
		}
		t = t.UTC()
		return &t, nil
	}
	t, ok := scheduling.PauseUntilPreset(preset, r.now, loc)
	if !ok {
		return nil, scheduling.NewValidationError("paused_until", "unknown preset "+strconv.Quote(preset))
	}
	return &t, nil
}

// Resume answers POST /waterline/schedules/{id}/resume.
func (h *Console) Resume(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	id := c.Param("schedule_id")
	_, err = h.Changes.Resume(c.Request().Context(), r.ns, id, r.cc(""))
	return r.rowResult(id, err, views.Flash{Kind: "ok", Message: "Resumed " + id + "; it fires next at its next occurrence from now."})
}

// Trigger answers POST /waterline/schedules/{id}/trigger (overlap_policy).
func (h *Console) Trigger(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	id := c.Param("schedule_id")
	res, err := h.Changes.Trigger(c.Request().Context(), r.ns, id, c.FormValue("overlap_policy"), r.cc(""))
	if err != nil {
		return r.rowResult(id, err, views.Flash{})
	}
	out := views.TriggerOutcomeView{Outcome: res.Outcome, RunID: res.RunID, InstanceID: res.InstanceID,
		BufferDepth: res.BufferDepth, Reason: res.Reason}
	f := views.Flash{Kind: "ok"}
	switch res.Outcome {
	case scheduling.OutcomeTriggered:
		out.RunURL = r.url(runURL(res.RunID))
		f.Message, f.LinkURL, f.LinkLabel = "Triggered "+id+": started run", out.RunURL, res.RunID
	case scheduling.OutcomeBuffered:
		f.Message = fmt.Sprintf("Buffered a run of %s: it starts when the running one finishes (%d waiting).", id, res.BufferDepth)
	default:
		f.Kind = "error"
		f.Message = fmt.Sprintf("Did not start %s: skipped (%s).", id, strings.ReplaceAll(res.Reason, "_", " "))
	}
	return r.finishRow(id, f, &out, http.StatusOK)
}

// DeleteConfirm answers GET /waterline/schedules/{id}/delete: the
// confirmation as a page of its own (deep links, no JavaScript).
func (h *Console) DeleteConfirm(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	s, err := h.Schedules.Get(c.Request().Context(), r.ns, c.Param("schedule_id"))
	if err != nil {
		return err
	}
	return ok(c, views.DeleteConfirmPage(r.layout("Delete "+s.ScheduleID, "schedules"), r.deleteView(s, "")))
}

func (r *request) deleteView(s *models.Schedule, msg string) views.DeleteView {
	return views.DeleteView{ScheduleID: s.ScheduleID, ScheduleURL: r.url(scheduleURL(s.ScheduleID)),
		Action: r.url(scheduleURL(s.ScheduleID) + "/delete"), Error: msg, ReturnTo: r.url(registryPath)}
}

// Delete answers POST /waterline/schedules/{id}/delete (confirm = the ID).
func (h *Console) Delete(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	id := c.Param("schedule_id")
	if c.FormValue("confirm") != id {
		s, err := h.Schedules.Get(c.Request().Context(), r.ns, id)
		if err != nil {
			return err
		}
		msg := "Type the schedule ID exactly (" + id + ") to delete it."
		if isHX(c) {
			return r.finishRow(id, views.Flash{Kind: "error", Message: msg}, nil, http.StatusUnprocessableEntity)
		}
		return Render(c, http.StatusUnprocessableEntity, views.DeleteConfirmPage(r.layout("Delete "+id, "schedules"), r.deleteView(s, msg)))
	}
	_, err = h.Changes.Delete(c.Request().Context(), r.ns, id, r.cc(""))
	return r.rowResult(id, err, views.Flash{Kind: "ok", Message: "Deleted " + id + ". It never fires again; its history stays readable.",
		LinkURL: r.url(scheduleURL(id) + "/history"), LinkLabel: "History"})
}

// describe returns what the detail page shows. Unlike the API's describe,
// the console also opens deleted schedules (read-only), so that the
// registry's "deleted" filter leads somewhere and their history is a click
// away.
func (r *request) describe(id string) (*scheduling.Description, error) {
	d, err := r.h.Schedules.Describe(r.c.Request().Context(), r.ns, id)
	if !errors.Is(err, scheduling.ErrNotFound) {
		return d, err
	}
	s, getErr := r.h.Schedules.Get(r.c.Request().Context(), r.ns, id)
	if getErr != nil || s.Status != models.StatusDeleted {
		return nil, err
	}
	d = &scheduling.Description{Schedule: s, SpecText: timespec.SpecText{Zone: cmp.Or(s.Spec.Timezone, "UTC")}}
	if compiled, cerr := timespec.CompileForText(s.Spec); cerr == nil {
		d.SpecDescription, d.SpecText = compiled.Description(), compiled.Text()
	}
	return d, nil
}

// Detail answers GET /waterline/schedules/{id}.
func (h *Console) Detail(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	d, err := r.describe(c.Param("schedule_id"))
	if err != nil {
		return err
	}
	runs, err := h.RunStore.ListRuns(c.Request().Context(), scheduling.RunListFilter{Namespace: r.ns, ScheduleID: d.Schedule.ScheduleID, Limit: 10})
	if err != nil {
		return err
	}
	v := r.detail(d, runs.Runs)
	if v.Ledger, err = r.ledgerView(d.Schedule, c.QueryParam("ledger")); err != nil {
		return err
	}
	if w := d.Schedule.CatchupWindowSeconds; w != nil {
		v.CatchupWindow = durationText(time.Duration(*w) * time.Second) // "2 h", like every duration shown
	}
	v.Tabs = r.tabs(d.Schedule.ScheduleID, "overview", 0)
	if v.Drift, err = r.driftView(d.Schedule); err != nil {
		return err
	}
	jobs, jobRunning, err := r.scheduleJobs(d.Schedule, r.url(scheduleURL(d.Schedule.ScheduleID)))
	if err != nil {
		return err
	}
	v.Backfills, v.BackfillsURL = jobs, r.url(backfillsPath)
	if r.detailIsLive(d.Schedule, runs.Runs) || jobRunning {
		v.RefreshURL = c.Request().URL.RequestURI()
	}
	return ok(c, views.ScheduleDetailPage(r.layout("Schedule "+d.Schedule.ScheduleID, "schedules"), v))
}

func (r *request) detail(d *scheduling.Description, runs []models.Run) views.ScheduleDetailView {
	s := d.Schedule
	desc, tz := d.SpecText.Sentence(), d.SpecText.Zone
	loc := r.zone(tz)
	self := r.url(scheduleURL(s.ScheduleID))
	v := views.ScheduleDetailView{
		ID: s.ID, ScheduleID: s.ScheduleID, Namespace: s.Namespace, Status: s.Status, Ended: s.Ended(),
		SpecDescription: desc, Timezone: tz, CronExpressions: s.Spec.CronExpressions,
		WorkflowType: s.Action.WorkflowType, WorkflowClass: s.Action.WorkflowClass, Input: prettyValue(s.Action.Input),
		Target: targetText(s.Action.Target), TargetSecretSet: scheduling.IsHTTP(s.Action.Target) && s.Action.Target.SecretVersion > 0,
		ExecutionTimeout: secondsText(s.Action.ExecutionTimeoutSeconds), RunTimeout: secondsText(s.Action.RunTimeoutSeconds),
		OverlapPolicy: s.OverlapPolicy,
		MaxRuns:       int64Text(s.MaxRuns), RemainingActions: int64Text(s.RemainingActions),
		Connection: deref(s.Connection), Queue: deref(s.Queue),
		Labels: sortedPairs(s.Labels), Memo: sortedPairs(s.Memo), SearchAttributes: sortedPairs(s.SearchAttributes),
		Note: s.Note, FiresCount: s.FiresCount, FailuresCount: s.Health.FailuresCount, SkippedCount: s.SkippedTriggerCount,
		LastSkipReason: deref(s.LastSkipReason), LastSkippedAt: momentPtr(s.LastSkippedAt, loc, r.now),
		NextFire:    momentPtr(s.NextFireAt, loc, r.now),
		Overdue:     s.Status == models.StatusActive && s.NextFireAt != nil && s.NextFireAt.Before(r.now),
		LastFiredAt: momentPtr(s.LastFiredAt, loc, r.now), LatestInstanceID: deref(s.LatestInstanceID),
		PausedAt: momentPtr(s.PausedAt, loc, r.now), DeletedAt: momentPtr(s.DeletedAt, loc, r.now),
		CreatedAt: moment(s.CreatedAt, loc, r.now), UpdatedAt: moment(s.UpdatedAt, loc, r.now),
		RunsURL: r.url(consolePrefix+"/runs", "schedule_id", s.ScheduleID), HistoryURL: r.url(scheduleURL(s.ScheduleID) + "/history"),
		Actions: r.actions(s, self), Paused: r.pause(s, loc),
		Managed: managedByApply(s), Health: r.health(s, loc), StartFailures: s.StartFailuresCount, RetryPolicy: retryPolicyText(s.Action.RetryPolicy),
	}
	if s.JitterSeconds > 0 { // no jitter is the default, not a fact worth a line
		v.Jitter = fmt.Sprintf("%d s", s.JitterSeconds)
	}
	if n := s.PauseAfterFailures; n != nil {
		v.PauseAfter = fmt.Sprintf("%d consecutive failures", *n)
	}
	for _, iv := range s.Spec.Intervals {
		v.Intervals = append(v.Intervals, intervalText(iv))
	}
	if s.LatestRunID != nil {
		v.LatestRun = views.Link{Label: *s.LatestRunID, URL: r.url(runURL(*s.LatestRunID))}
	}
	for _, t := range d.FutureFireTimes {
		v.FutureFireTimes = append(v.FutureFireTimes, moment(t, loc, r.now))
	}
	for _, b := range s.BufferedActions {
		v.BufferedActions = append(v.BufferedActions, views.BufferedActionView{InstanceID: b.InstanceID,
			OccurrenceTime: moment(b.OccurrenceTime, loc, r.now), BufferedAt: moment(b.BufferedAt, loc, r.now)})
	}
	for _, a := range s.RecentActions {
		ra := views.RecentActionView{InstanceID: a.InstanceID, Outcome: a.Outcome, FiredAt: moment(a.FiredAt, loc, r.now),
			OccurrenceTime: absMoment(a.OccurrenceTime, loc), FireLag: durationText(time.Duration(a.FireLagMs) * time.Millisecond), Reason: a.Reason}
		if a.RunID != "" {
			ra.Run = views.Link{Label: a.RunID, URL: r.url(runURL(a.RunID))}
		}
		v.RecentActions = append(v.RecentActions, ra)
	}
	for i := range runs {
		v.Runs = append(v.Runs, r.runRow(&runs[i], tz))
	}
	return v
}

// liveSoon is how close a next fire makes the schedule page live: a
// schedule about to fire is about to have a run worth watching.
const liveSoon = time.Minute

// detailIsLive says the schedule page should keep itself current
// (views.LivePoller): one of its recent runs is pending or running, fires
// wait in its buffer, or it fires within liveSoon.
func (r *request) detailIsLive(s *models.Schedule, runs []models.Run) bool {
	for i := range runs {
		if runs[i].Active() {
			return true
		}
	}
	if len(s.BufferedActions) > 0 {
		return true
	}
	return s.Status == models.StatusActive && s.NextFireAt != nil && !s.NextFireAt.Before(r.now) && s.NextFireAt.Sub(r.now) <= liveSoon
}

// intervalText is an interval as the detail page lists it.
func intervalText(iv models.Interval) string {
	if iv.Offset == "" {
		return "every " + iv.Every
	}
	return "every " + iv.Every + ", offset " + iv.Offset
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// managedByApply reports whether `schedule apply` owns the schedule.
func managedByApply(s *models.Schedule) bool {
	return s.Labels[apijson.ManagedByLabel] == apijson.ManagedByApply
}

// targetText is a target as the schedule page shows it: the kind and, for
// HTTP, the method and host — not the path (it may carry a token), never
// the secret.
func targetText(t *models.Target) string {
	if !scheduling.IsHTTP(t) {
		return "a worker (polls the run queue)"
	}
	host := t.URL
	if u, err := url.Parse(t.URL); err == nil {
		host = u.Host
	}
	method := t.Method
	if method == "" {
		method = "POST"
	}
	return fmt.Sprintf("HTTP %s to %s (timeout %d s)", method, host, t.TimeoutSeconds)
}

// alertsWarning fills the registry's banner when a notifier of the
// namespace is failing: alerts about these schedules are not arriving.
func (h *Console) alertsWarning(c echo.Context, r *request, v *views.RegistryView) error {
	failing, health, err := h.NotifierStore.FailingNotifiers(c.Request().Context(), r.ns)
	if err != nil || len(failing) == 0 {
		return err
	}
	first := health[failing[0].ID]
	m := moment(*first.FailingSince, r.zone(""), r.now)
	since := m.Text + " (" + m.Relative + ")"
	what := fmt.Sprintf("notifier %s is failing since %s", failing[0].Name, since)
	if len(failing) > 1 {
		what = fmt.Sprintf("%d notifiers are failing, %s since %s", len(failing), failing[0].Name, since)
	}
	var pending, dead int64
	for _, n := range failing {
		pending, dead = pending+health[n.ID].Pending, dead+health[n.ID].Dead
	}
	v.AlertsWarning = fmt.Sprintf("Alerts are not being delivered: %s; %d pending, %d dead. Last error: %s.", what, pending, dead, deref(first.LastError))
	if r.canAdmin() {
		v.AlertsURL = r.url(notifiersPath)
	}
	return nil
}
