package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// preview is the live preview of the form's spec.
func (r *request) preview(f *scheduleForm) (views.SpecPreviewView, bool) {
	if len(f.spec.CronExpressions) == 0 && len(f.spec.Intervals) == 0 && len(f.spec.At) == 0 {
		if msg := f.errs["intervals"]; msg != "" {
			return views.SpecPreviewView{FieldErrors: map[string]string{"intervals": msg}}, false
		}
		return views.SpecPreviewView{}, true
	}
	p, err := r.h.Changes.PreviewSpec(r.c.Request().Context(), r.ns, f.spec, r.now, 10)
	if err != nil {
		var val *scheduling.ValidationError
		if !errors.As(err, &val) {
			return views.SpecPreviewView{Error: "cannot preview this spec"}, false
		}
		mapped := &scheduleForm{errs: map[string]string{}, spec: f.spec, cronLines: f.cronLines, ivLines: f.ivLines, atLines: f.atLines}
		mapped.mapErrors(val)
		if msg := f.errs["intervals"]; msg != "" {
			mapped.addErr("intervals", msg)
		}
		return views.SpecPreviewView{FieldErrors: mapped.errs}, false
	}
	desc, tz := p.Text.Sentence(), p.Text.Zone
	v := views.SpecPreviewView{Description: desc, Timezone: tz}
	loc := r.zone(tz)
	for _, t := range p.FireTimes {
		v.FireTimes = append(v.FireTimes, moment(t, loc, r.now))
	}
	const wall = "Mon 2006-01-02 15:04"
	// A fire a calendar moved says so beside its time.
	movedFrom := map[int64]string{}
	for _, e := range p.Excluded {
		if !e.MovedTo.IsZero() {
			movedFrom[e.MovedTo.Unix()] = "moved from " + e.At.In(loc).Format("Mon 01-02")
		}
	}
	if len(movedFrom) > 0 {
		v.FireNotes = make([]string, len(p.FireTimes))
		for i, t := range p.FireTimes {
			v.FireNotes[i] = movedFrom[t.Unix()]
		}
	}
	for _, e := range p.Excluded {
		if e.MovedTo.IsZero() {
			v.CalendarNotes = append(v.CalendarNotes, fmt.Sprintf("%s does not fire: a date of %s", e.At.In(loc).Format(wall), e.Calendar))
		} else {
			v.CalendarNotes = append(v.CalendarNotes, fmt.Sprintf("%s moved to %s (%s)", e.At.In(loc).Format(wall), e.MovedTo.In(loc).Format(wall), e.Calendar))
		}
	}
	if msg := f.errs["intervals"]; msg != "" {
		v.FieldErrors = map[string]string{"intervals": msg}
		return v, false
	}
	return v, true
}

// Preview answers POST /waterline/schedules/preview with the SpecPreview
// fragment (422 when the spec has errors). With ?schedule_id= (the edit
// form) it also lists what saving would change.
func (h *Console) Preview(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	f := readScheduleForm(c)
	v, valid := r.preview(f)
	v.Live = true
	if id := c.QueryParam("schedule_id"); id != "" {
		if s, err := h.Schedules.Get(c.Request().Context(), r.ns, id); err == nil {
			v.Changes = f.changes(s)
		}
	}
	status := http.StatusOK
	if !valid {
		status = http.StatusUnprocessableEntity
	}
	return Render(c, status, views.SpecPreview(v))
}
