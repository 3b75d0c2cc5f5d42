package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

const calendarsPath = consolePrefix + "/calendars"

func calendarURL(name string) string { return calendarsPath + "/" + url.PathEscape(name) }

var weekdayNames = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// calendarForm builds the form's view from values (a stored calendar, or
// what was just submitted).
func (r *request) calendarForm(action string, editing bool, name, description string, dates, weekend []string, errs map[string]string) views.CalendarFormView {
	f := views.CalendarFormView{Action: r.url(action), Editing: editing, Name: name, Description: description,
		Dates: strings.Join(dates, "\n"), Errors: formErrors(errs), CSRF: csrfToken(r.c)}
	for _, d := range weekdayNames {
		f.Weekend = append(f.Weekend, views.EventChoice{Name: d, Checked: slices.Contains(weekend, d)})
	}
	return f
}

// formErrors files "dates[3]" under the dates input ("2026-13-01: …").
func formErrors(errs map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range errs {
		field, _, _ := strings.Cut(k, "[")
		if _, ok := out[field]; !ok {
			out[field] = v
		}
	}
	return out
}

// calendarInput reads the create/edit form: dates one a line (blank lines
// and spaces ignored), weekend checkboxes.
func calendarInput(c echo.Context) (scheduling.CalendarInput, string, error) {
	form, err := c.FormParams()
	if err != nil {
		return scheduling.CalendarInput{}, "", &BadRequestError{Code: scheduling.CodeInvalidForm, Message: "the form could not be read"}
	}
	description := strings.TrimSpace(form.Get("description"))
	in := scheduling.CalendarInput{Name: strings.TrimSpace(form.Get("name")), Description: &description, Dates: []string{}, Weekend: form["weekend"]}
	if in.Weekend == nil {
		in.Weekend = []string{}
	}
	for line := range strings.SplitSeq(form.Get("dates"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			in.Dates = append(in.Dates, line)
		}
	}
	return in, form.Get("intent"), nil
}

// Calendars answers GET /waterline/calendars.
func (h *Console) Calendars(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	return h.calendarsPage(c, r, http.StatusOK, r.calendarForm(calendarsPath, false, "", "", nil, scheduling.DefaultWeekend, nil))
}

func (h *Console) calendarsPage(c echo.Context, r *request, status int, form views.CalendarFormView) error {
	page, err := h.CalendarStore.ListCalendars(c.Request().Context(), r.ns, "", scheduling.MaxListLimit)
	if err != nil {
		return err
	}
	v := views.CalendarsView{Form: form, CanAdmin: r.canAdmin()}
	for _, cal := range page.Calendars {
		row := views.CalendarRowView{Name: cal.Name, URL: r.url(calendarURL(cal.Name)), Dates: strconv.Itoa(len(cal.Dates)) + " dates",
			Range: "—", Weekend: orNone(strings.Join(cal.Weekend, ", ")), Description: cal.Description}
		if n := len(cal.Dates); n > 0 {
			row.Range = cal.Dates[0] + " – " + cal.Dates[n-1]
		}
		v.Rows = append(v.Rows, row)
	}
	return Render(c, status, views.CalendarsPage(r.layout("Calendars", "calendars"), v))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// CreateCalendar answers POST /waterline/calendars: the new calendar's
// page, or the form again with field errors (422).
func (h *Console) CreateCalendar(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	in, _, err := calendarInput(c)
	if err != nil {
		return err
	}
	cal, err := h.CalendarStore.CreateCalendar(c.Request().Context(), r.ns, in, r.cc(""))
	var val *scheduling.ValidationError
	var conf *scheduling.ConflictError
	fail := func(errs map[string]string) error {
		return h.calendarsPage(c, r, http.StatusUnprocessableEntity,
			r.calendarForm(calendarsPath, false, in.Name, *in.Description, in.Dates, in.Weekend, errs))
	}
	switch {
	case errors.As(err, &val):
		return fail(val.Fields)
	case errors.As(err, &conf):
		return fail(map[string]string{"name": conf.Message})
	case err != nil:
		return err
	}
	return r.redirect(r.url(calendarURL(cal.Name)), views.Flash{Kind: "ok", Message: fmt.Sprintf("Calendar %s created with %d dates.", cal.Name, len(cal.Dates))})
}

// Calendar answers GET /waterline/calendars/{name}.
func (h *Console) Calendar(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	return h.calendarPage(c, r, http.StatusOK, c.Param("name"), nil, nil)
}

func (h *Console) calendarPage(c echo.Context, r *request, status int, name string, form *views.CalendarFormView, impact *views.CalendarImpactView) error {
	ctx := c.Request().Context()
	view, err := h.CalendarStore.GetCalendar(ctx, r.ns, name)
	if err != nil {
		return err
	}
	cal := view.Calendar
	base := calendarURL(cal.Name)
	v := views.CalendarView{Name: cal.Name, Description: orDashText(cal.Description), Weekend: orNone(strings.Join(cal.Weekend, ", ")),
		DateCount: strconv.Itoa(len(cal.Dates)), Managed: view.ManagedByApply, CanAdmin: r.canAdmin(), DeleteURL: r.url(base + "/delete"), Impact: impact}
	today := r.now.In(r.zone(""))
	year := today.Year()
	if y, err := strconv.Atoi(c.QueryParam("year")); err == nil && y >= 1900 && y <= 2999 {
		year = y
	}
	var proposed []string
	if impact != nil && form != nil {
		proposed = strings.Fields(form.Dates)
		year = proposedYear(cal.Dates, proposed, year)
	}
	v.Year = calendarYear(cal.Dates, proposed, impact != nil, cal.Weekend, year, today, func(y int) string {
		return r.url(base) + "?year=" + strconv.Itoa(y)
	})
	for _, id := range view.UsedBy {
		v.UsedBy = append(v.UsedBy, views.Link{Label: id, URL: r.url(scheduleURL(id))})
	}
	if form != nil {
		v.Form = *form
	} else {
		v.Form = r.calendarForm(base, true, cal.Name, cal.Description, cal.Dates, cal.Weekend, nil)
	}
	hist, err := h.CalendarStore.CalendarHistory(ctx, r.ns, cal.Name, "", scheduling.MaxListLimit)
	if err != nil && !errors.Is(err, scheduling.ErrNotFound) {
		return err
	}
	if hist != nil {
		for _, e := range hist.Events {
			v.History = append(v.History, views.CalendarEventView{Type: e.EventType, Actor: orDashText(e.Actor), Source: orDashText(e.Source),
				When: moment(e.RecordedAt, r.zone(""), r.now), Summary: calendarEventSummary(e)})
		}
	}
	return Render(c, status, views.CalendarPage(r.layout("Calendar "+cal.Name, "calendars"), v))
}

// proposedYear is the year an impact's year view opens on: the first year
// from def on whose dates the edit changes, else the last one before it,
// else def.
func proposedYear(stored, proposed []string, def int) int {
	was, will := map[string]bool{}, map[string]bool{}
	for _, d := range stored {
		was[d] = true
	}
	for _, d := range proposed {
		will[d] = true
	}
	best, past := 0, 0
	consider := func(d string) {
		y, err := strconv.Atoi(d[:min(4, len(d))])
		switch {
		case err != nil:
		case y >= def && (best == 0 || y < best):
			best = y
		case y < def && y > past:
			past = y
		}
	}
	for d := range was {
		if !will[d] {
			consider(d)
		}
	}
	for d := range will {
		if !was[d] {
			consider(d)
		}
	}
	switch {
	case best != 0:
		return best
	case past != 0:
		return past
	}
	return def
}

// calendarYear lays out one year of a calendar as twelve month grids,
// Monday first: its dates, its weekend days and today marked; with an
// edit (compare), the dates it adds and removes instead.
func calendarYear(stored, proposed []string, compare bool, weekend []string, year int, today time.Time, yearURL func(int) string) views.CalendarYearView {
	in := map[string]bool{}
	for _, d := range stored {
		in[d] = true
	}
	after := map[string]bool{}
	for _, d := range proposed {
		after[d] = true
	}
	prefix := strconv.Itoa(year) + "-"
	count := 0
	for _, d := range stored {
		if strings.HasPrefix(d, prefix) {
			count++
		}
	}
	y := views.CalendarYearView{Year: strconv.Itoa(year), Count: fmt.Sprintf("%d dates in %d", count, year), Compare: compare,
		PrevURL: yearURL(year - 1), PrevLabel: strconv.Itoa(year - 1), NextURL: yearURL(year + 1), NextLabel: strconv.Itoa(year + 1),
		DayHeads: []string{"Mo", "Tu", "We", "Th", "Fr", "Sa", "Su"}}
	if count == 1 {
		y.Count = fmt.Sprintf("1 date in %d", year)
	}
	// An edit shows only the months it changes (every month if none).
	changed := map[time.Month]bool{}
	var added, removed int
	for d := range after {
		if !in[d] && strings.HasPrefix(d, prefix) {
			added++
			changed[monthOf(d)] = true
		}
	}
	for d := range in {
		if compare && !after[d] && strings.HasPrefix(d, prefix) {
			removed++
			changed[monthOf(d)] = true
		}
	}
	if compare {
		y.Year = fmt.Sprintf("What this edit changes in %d", year)
		y.Count = countWord(added, "date added", "dates added") + fmt.Sprintf(", %d removed", removed)
		if len(changed) == 0 {
			compare = false
			y.Compare = false
			y.Year = strconv.Itoa(year)
			y.Count = fmt.Sprintf("%d dates in %d", count, year)
		}
	}
	todayText := today.Format(time.DateOnly)
	for m := time.January; m <= time.December; m++ {
		first := time.Date(year, m, 1, 0, 0, 0, 0, time.UTC)
		mv := views.CalendarMonthView{Name: m.String()}
		week := make([]views.CalendarDayView, 0, 7)
		for range (int(first.Weekday()) + 6) % 7 {
			week = append(week, views.CalendarDayView{})
		}
		for d := first; d.Month() == m; d = d.AddDate(0, 0, 1) {
			date := d.Format(time.DateOnly)
			day := views.CalendarDayView{Day: strconv.Itoa(d.Day()), Title: date}
			var classes []string
			if slices.Contains(weekend, weekdayNames[(int(d.Weekday())+6)%7]) {
				classes = append(classes, "we")
			}
			switch {
			case compare && in[date] && !after[date]:
				classes = append(classes, "removed")
				day.Title += " — removed by this edit"
			case compare && !in[date] && after[date]:
				classes = append(classes, "added")
				day.Title += " — added by this edit"
			case in[date]:
				classes = append(classes, "listed")
				day.Title += " — in the calendar"
			}
			if date == todayText {
				classes = append(classes, "today")
				day.Title += " (today)"
			}
			day.Class = strings.Join(classes, " ")
			week = append(week, day)
			if len(week) == 7 {
				mv.Weeks = append(mv.Weeks, week)
				week = make([]views.CalendarDayView, 0, 7)
			}
		}
		if len(week) > 0 {
			for len(week) < 7 {
				week = append(week, views.CalendarDayView{})
			}
			mv.Weeks = append(mv.Weeks, week)
		}
		if !compare || changed[m] {
			y.Months = append(y.Months, mv)
		}
	}
	return y
}

func monthOf(date string) time.Month {
	m, _ := strconv.Atoi(date[5:7])
	return time.Month(m)
}

// calendarEventSummary says in words what a change did.
func calendarEventSummary(e models.ObjectAuditEvent) string {
	var p struct {
		Changed   []string     `json:"changed"`
		Added     []string     `json:"dates_added"`
		Removed   []string     `json:"dates_removed"`
		Replanned []struct{}   `json:"replanned"`
		Dates     *json.Number `json:"dates"`
	}
	if json.Unmarshal(e.Payload, &p) != nil {
		return ""
	}
	if e.EventType != scheduling.EventCalendarUpdated {
		if p.Dates != nil {
			return p.Dates.String() + " dates"
		}
		return ""
	}
	parts := []string{"changed " + strings.Join(p.Changed, ", ")}
	if len(p.Added) > 0 {
		parts = append(parts, countWord(len(p.Added), "date added", "dates added"))
	}
	if len(p.Removed) > 0 {
		parts = append(parts, fmt.Sprintf("%d removed", len(p.Removed)))
	}
	parts = append(parts, countWord(len(p.Replanned), "schedule re-planned", "schedules re-planned"))
	return strings.Join(parts, "; ")
}

func orDashText(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// UpdateCalendar answers POST /waterline/calendars/{name}: with intent
// "impact", the page showing what the edit would change, nothing saved;
// else the edit, saved (re-planning the schedules using the calendar).
func (h *Console) UpdateCalendar(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	in, intent, err := calendarInput(c)
	if err != nil {
		return err
	}
	in.Name = name
	ctx := c.Request().Context()
	form := r.calendarForm(calendarURL(name), true, name, *in.Description, in.Dates, in.Weekend, nil)
	var val *scheduling.ValidationError
	if intent == "impact" {
		im, err := h.CalendarStore.CalendarImpact(ctx, r.ns, name, in)
		switch {
		case errors.As(err, &val):
			form.Errors = formErrors(val.Fields)
			return h.calendarPage(c, r, http.StatusUnprocessableEntity, name, &form, nil)
		case err != nil:
			return err
		}
		v := &views.CalendarImpactView{Window: "the next 366 days"}
		for _, s := range im.Schedules {
			// Each schedule's fires in its own zone (or as the time
			// setting says), as its page shows them.
			loc := r.zone(s.Timezone)
			sv := views.ScheduleImpactView{Schedule: views.Link{Label: s.ScheduleID, URL: r.url(scheduleURL(s.ScheduleID))}, Truncated: s.Truncated}
			for _, t := range s.Added {
				sv.Added = append(sv.Added, absMoment(t, loc))
			}
			for _, t := range s.Removed {
				sv.Removed = append(sv.Removed, absMoment(t, loc))
			}
			v.Schedules = append(v.Schedules, sv)
		}
		return h.calendarPage(c, r, http.StatusOK, name, &form, v)
	}
	ch, err := h.CalendarStore.UpdateCalendar(ctx, r.ns, name, in, r.cc(""))
	switch {
	case errors.As(err, &val):
		form.Errors = formErrors(val.Fields)
		return h.calendarPage(c, r, http.StatusUnprocessableEntity, name, &form, nil)
	case err != nil:
		return err
	}
	return r.redirect(r.url(calendarURL(name)), views.Flash{Kind: "ok",
		Message: "Calendar saved; " + countWord(len(ch.Replanned), "schedule re-planned.", "schedules re-planned.")})
}

// DeleteCalendar answers POST /waterline/calendars/{name}/delete; a
// calendar in use stays, and the flash names the schedules.
func (h *Console) DeleteCalendar(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	err = h.CalendarStore.DeleteCalendar(c.Request().Context(), r.ns, name, r.cc(""))
	var conf *scheduling.ConflictError
	switch {
	case errors.As(err, &conf):
		return r.redirect(r.url(calendarURL(name)), views.Flash{Kind: "error", Message: conf.Message})
	case err != nil:
		return err
	}
	return r.redirect(r.url(calendarsPath), views.Flash{Kind: "ok", Message: "Calendar " + name + " deleted."})
}
