package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// The create and edit pages (GET/POST); reading the form, its errors, its
// preview and its changes are in console_form_*.go.

func (r *request) newFormView(values views.ScheduleFormValues) views.ScheduleFormView {
	return views.ScheduleFormView{Action: r.url(registryPath), PreviewURL: r.url(registryPath + "/preview"),
		CancelURL: r.url(registryPath), Values: values, Errors: map[string]string{}, Zones: zoneNames()}
}

// NewSchedule answers GET /waterline/schedules/new.
func (h *Console) NewSchedule(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	v := r.newFormView(views.ScheduleFormValues{Timezone: "UTC", Fields: scheduling.TextsOf(scheduling.Blank())})
	return ok(c, views.ScheduleFormPage(r.layout("New schedule", "schedules"), v))
}

// CreateSchedule answers POST /waterline/schedules.
func (h *Console) CreateSchedule(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	f := readScheduleForm(c)
	v := r.newFormView(f.values)
	in := f.createInput(r.ns)
	if len(f.errs) > 0 {
		// The service judges what could be read, writing nothing, so that
		// one round trip shows every problem at once.
		_, err := h.Changes.PlanCreate(c.Request().Context(), in)
		f.alsoServiceErrors(err)
		return r.formAgain(http.StatusUnprocessableEntity, v, f)
	}
	sch, err := h.Changes.Create(c.Request().Context(), in, r.cc(""))
	if status, handled := f.serviceError(err); handled {
		return r.formAgain(status, v, f)
	} else if err != nil {
		return err
	}
	msg := "Created " + sch.ScheduleID + "."
	if sch.Status == models.StatusPaused {
		msg = "Created " + sch.ScheduleID + " (paused)."
	}
	return r.redirect(r.url(scheduleURL(sch.ScheduleID)), views.Flash{Kind: "ok", Message: msg})
}

// formAgain re-renders the form with what was posted and the errors.
func (r *request) formAgain(status int, v views.ScheduleFormView, f *scheduleForm) error {
	v.Errors = f.errs
	if p, _ := r.preview(f); p.Description != "" || len(p.FieldErrors) > 0 || p.Error != "" {
		v.Preview = &p
	}
	title := "New schedule"
	if v.Editing {
		title = "Edit " + v.Values.ScheduleID
	}
	return Render(r.c, status, views.ScheduleFormPage(r.layout(title, "schedules"), v))
}

// editable loads a schedule the edit form may change.
func (r *request) editable(id string) (*models.Schedule, error) {
	s, err := r.h.Schedules.Get(r.c.Request().Context(), r.ns, id)
	if err != nil {
		return nil, err
	}
	if s.Status == models.StatusDeleted {
		return nil, &scheduling.ConflictError{Code: scheduling.CodeScheduleDeleted, Message: fmt.Sprintf("schedule %q is deleted and cannot be updated", id)}
	}
	return s, nil
}

func (r *request) editFormView(s *models.Schedule, values views.ScheduleFormValues) views.ScheduleFormView {
	base := scheduleURL(s.ScheduleID)
	values.ScheduleID = s.ScheduleID // read-only in the form; never taken from the post
	return views.ScheduleFormView{Editing: true, Action: r.url(base + "/edit"),
		PreviewURL: r.url(registryPath+"/preview", "schedule_id", s.ScheduleID),
		CancelURL:  r.url(base), Values: values, Errors: map[string]string{}, Zones: zoneNames()}
}

// EditSchedule answers GET /waterline/schedules/{id}/edit.
func (h *Console) EditSchedule(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	s, err := r.editable(c.Param("schedule_id"))
	if err != nil {
		return err
	}
	v := r.editFormView(s, valuesOf(s))
	if p, valid := r.preview(parseScheduleForm(v.Values)); valid {
		v.Preview = &p
	}
	layout := r.layout("Edit "+s.ScheduleID, "schedules")
	if managedByApply(s) && layout.Flash == nil {
		// The next `schedule apply` of its file would undo an edit made here.
		layout.Flash = &views.Flash{Kind: "error", Message: "Managed by apply: " + s.ScheduleID +
			" is kept in a schedules file (label " + apijson.ManagedByLabel + "=" + apijson.ManagedByApply +
			"); the next 'tideline schedule apply' undoes edits made here. Change the file instead."}
	}
	return ok(c, views.ScheduleFormPage(layout, v))
}

// UpdateSchedule answers POST /waterline/schedules/{id}/edit: it saves the
// fields that differ from the schedule and says which.
func (h *Console) UpdateSchedule(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	s, err := r.editable(c.Param("schedule_id"))
	if err != nil {
		return err
	}
	f := readScheduleForm(c)
	f.values.ScheduleID = s.ScheduleID
	v := r.editFormView(s, f.values)
	v.Changes = f.changes(s)
	if len(f.errs) > 0 {
		_, err := h.Changes.PlanUpdate(c.Request().Context(), r.ns, s.ScheduleID, f.update(v.Changes))
		f.alsoServiceErrors(err)
		return r.formAgain(http.StatusUnprocessableEntity, v, f)
	}
	detail := r.url(scheduleURL(s.ScheduleID))
	if len(v.Changes) == 0 {
		return r.redirect(detail, views.Flash{Kind: "ok", Message: "Nothing to save: the form matches " + s.ScheduleID + "."})
	}
	_, err = h.Changes.Update(c.Request().Context(), r.ns, s.ScheduleID, f.update(v.Changes), r.cc(""))
	if status, handled := f.serviceError(err); handled {
		return r.formAgain(status, v, f)
	} else if err != nil {
		return err
	}
	fields := make([]string, 0, len(v.Changes))
	for _, ch := range v.Changes {
		fields = append(fields, ch.Field)
	}
	return r.redirect(detail, views.Flash{Kind: "ok", Message: fmt.Sprintf("Saved %s: changed %s.", s.ScheduleID, strings.Join(fields, ", "))})
}
