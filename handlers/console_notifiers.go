package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/notify"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

const notifiersPath = consolePrefix + "/notifiers"

func notifierURL(name string) string { return notifiersPath + "/" + url.PathEscape(name) }

// notifierForm builds the form's view from values (a stored notifier, or
// what was just submitted).
func (r *request) notifierForm(action string, editing bool, name, target, format string, events []string, selector map[string]string, errs map[string]string) views.NotifierFormView {
	f := views.NotifierFormView{Action: r.url(action), Editing: editing, Name: name, URL: target, Format: format,
		Errors: errs, CSRF: csrfToken(r.c)}
	for _, e := range notify.Events {
		f.Events = append(f.Events, views.EventChoice{Name: e, Checked: slices.Contains(events, e)})
	}
	var lines []string
	for _, kv := range sortedPairs(selector) {
		lines = append(lines, kv.Key+"="+kv.Value)
	}
	f.Selector = strings.Join(lines, "\n")
	return f
}

// notifierInput reads the create/edit form. A selector line without "="
// is reported as a field error, like the service's own checks.
func notifierInput(c echo.Context) (scheduling.NotifierInput, map[string]string, error) {
	form, err := c.FormParams()
	if err != nil {
		return scheduling.NotifierInput{}, nil, &BadRequestError{Code: scheduling.CodeInvalidForm, Message: "the form could not be read"}
	}
	target, format := strings.TrimSpace(form.Get("url")), form.Get("format")
	in := scheduling.NotifierInput{Name: strings.TrimSpace(form.Get("name")), URL: &target, Format: &format,
		Events: form["events"], LabelSelector: map[string]string{}}
	if in.Events == nil {
		in.Events = []string{}
	}
	for line := range strings.SplitSeq(form.Get("label_selector"), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return in, map[string]string{"label_selector": fmt.Sprintf("line %q is not key=value", line)}, nil
		}
		in.LabelSelector[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return in, nil, nil
}

// Notifiers answers GET /waterline/notifiers.
func (h *Console) Notifiers(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	return h.notifiersPage(c, r, http.StatusOK, r.notifierForm(notifiersPath, false, "", "", notify.FormatJSON, []string{notify.EventRunFailed, notify.EventRunTimedOut}, nil, nil))
}

func (h *Console) notifiersPage(c echo.Context, r *request, status int, form views.NotifierFormView) error {
	list, err := h.NotifierStore.ListNotifiers(c.Request().Context(), r.ns)
	if err != nil {
		return err
	}
	health, err := h.NotifierStore.NotifierHealth(c.Request().Context(), list)
	if err != nil {
		return err
	}
	v := views.NotifiersView{Form: form}
	for _, n := range list {
		v.Rows = append(v.Rows, views.NotifierRowView{Name: n.Name, URL: r.url(notifierURL(n.Name)), Target: n.URL, Format: n.Format,
			Events: strings.Join(n.Events, ", "), Selector: sortedPairs(n.LabelSelector), TestURL: r.url(notifierURL(n.Name) + "/test"),
			Health: r.notifierHealth(health[n.ID])})
	}
	return Render(c, status, views.NotifiersPage(r.layout("Notifiers", "notifiers"), v))
}

// CreateNotifier answers POST /waterline/notifiers: the new notifier's
// page with its secret, shown this once (never through a redirect's
// cookie); or the form again with field errors (422).
func (h *Console) CreateNotifier(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	in, formErrs, err := notifierInput(c)
	if err != nil {
		return err
	}
	fail := func(errs map[string]string) error {
		return h.notifiersPage(c, r, http.StatusUnprocessableEntity,
			r.notifierForm(notifiersPath, false, in.Name, *in.URL, *in.Format, in.Events, in.LabelSelector, errs))
	}
	if formErrs != nil {
		return fail(formErrs)
	}
	res, err := h.NotifierStore.CreateNotifier(c.Request().Context(), r.ns, in, r.cc(""))
	var val *scheduling.ValidationError
	var conf *scheduling.ConflictError
	switch {
	case errors.As(err, &val):
		return fail(val.Fields)
	case errors.As(err, &conf):
		return fail(map[string]string{"name": conf.Message})
	case err != nil:
		return err
	}
	return h.notifierPage(c, r, http.StatusCreated, res.Notifier, res.Secret, nil)
}

// Notifier answers GET /waterline/notifiers/{name}.
func (h *Console) Notifier(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	n, err := h.NotifierStore.GetNotifier(c.Request().Context(), r.ns, c.Param("name"))
	if err != nil {
		return err
	}
	return h.notifierPage(c, r, http.StatusOK, n, "", nil)
}

func (h *Console) notifierPage(c echo.Context, r *request, status int, n *models.Notifier, secret string, form *views.NotifierFormView) error {
	page, err := h.NotifierStore.ListDeliveries(c.Request().Context(), r.ns, n.Name, c.QueryParam("cursor"), 0)
	if err != nil {
		return err
	}
	health, err := h.NotifierStore.NotifierHealth(c.Request().Context(), []models.Notifier{*n})
	if err != nil {
		return err
	}
	base := notifierURL(n.Name)
	v := views.NotifierView{Name: n.Name, NewSecret: secret, TestURL: r.url(base + "/test"), DeleteURL: r.url(base + "/delete"),
		RotateURL: r.url(base + "/rotate"), Health: r.notifierHealth(health[n.ID]), CSRF: csrfToken(r.c)}
	if v.Health.Dead > 0 {
		v.RedeliverURL = r.url(base + "/redeliver")
	}
	if form != nil {
		v.Form = *form
	} else {
		v.Form = r.notifierForm(base, true, n.Name, n.URL, n.Format, n.Events, n.LabelSelector, nil)
	}
	for _, d := range page.Deliveries {
		row := views.DeliveryRowView{ID: d.ID, Event: d.EventType, Status: d.Status, Attempts: strconv.Itoa(d.Attempts),
			HTTPStatus: "—", LastError: deref(d.LastError), Created: moment(d.CreatedAt, r.zone(""), r.now)}
		if d.LastStatusCode != nil {
			row.HTTPStatus = strconv.Itoa(*d.LastStatusCode)
		}
		if d.Status == models.DeliveryPending {
			row.NextAttempt = momentPtr(d.NextAttemptAt, r.zone(""), r.now)
		}
		if d.ScheduleID != nil {
			row.Schedule = views.Link{Label: *d.ScheduleID, URL: r.url(scheduleURL(*d.ScheduleID))}
		}
		if d.Status == models.DeliveryDead {
			row.RedeliverURL = r.url(base + "/deliveries/" + url.PathEscape(d.ID) + "/redeliver")
		}
		v.Deliveries = append(v.Deliveries, row)
	}
	if page.HasMore {
		v.Pager.NextURL = r.url(base, "cursor", page.NextCursor)
	}
	if c.QueryParam("cursor") != "" {
		v.Pager.FirstURL = r.url(base)
	}
	return Render(c, status, views.NotifierPage(r.layout("Notifier "+n.Name, "notifiers"), v))
}

// UpdateNotifier answers POST /waterline/notifiers/{name}.
func (h *Console) UpdateNotifier(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	in, formErrs, err := notifierInput(c)
	if err != nil {
		return err
	}
	in.Name = name
	if formErrs == nil {
		_, err = h.NotifierStore.UpdateNotifier(c.Request().Context(), r.ns, in, r.cc(""))
		var val *scheduling.ValidationError
		switch {
		case errors.As(err, &val):
			formErrs = val.Fields
		case err != nil:
			return err
		default:
			return r.redirect(r.url(notifierURL(name)), views.Flash{Kind: "ok", Message: "Notifier saved."})
		}
	}
	n, err := h.NotifierStore.GetNotifier(c.Request().Context(), r.ns, name)
	if err != nil {
		return err
	}
	form := r.notifierForm(notifierURL(name), true, name, *in.URL, *in.Format, in.Events, in.LabelSelector, formErrs)
	return h.notifierPage(c, r, http.StatusUnprocessableEntity, n, "", &form)
}

// RotateNotifierSecret answers POST /waterline/notifiers/{name}/rotate
// with the page showing the new secret once.
func (h *Console) RotateNotifierSecret(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	res, err := h.NotifierStore.UpdateNotifier(c.Request().Context(), r.ns, scheduling.NotifierInput{Name: c.Param("name"), RotateSecret: true}, r.cc(""))
	if err != nil {
		return err
	}
	return h.notifierPage(c, r, http.StatusOK, res.Notifier, res.Secret, nil)
}

// TestNotifier answers POST /waterline/notifiers/{name}/test: one attempt
// now, then back to the notifier's page, whose log shows the delivery.
func (h *Console) TestNotifier(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	actor, _ := c.Get(ActorKey).(string)
	d, err := h.NotifierStore.TestNotifier(c.Request().Context(), r.ns, name, actor)
	if err != nil {
		return err
	}
	status := "no answer"
	if d.LastStatusCode != nil {
		status = "HTTP " + strconv.Itoa(*d.LastStatusCode)
	}
	f := views.Flash{Kind: "ok", Message: fmt.Sprintf("Test event delivered to %s (%s).", name, status)}
	if d.Status != models.DeliveryDelivered {
		f = views.Flash{Kind: "error", Message: fmt.Sprintf("Test event to %s failed (%s): %s", name, status, deref(d.LastError))}
	}
	return r.redirect(r.url(notifierURL(name)), f)
}

// DeleteNotifier answers POST /waterline/notifiers/{name}/delete.
func (h *Console) DeleteNotifier(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	if err := h.NotifierStore.DeleteNotifier(c.Request().Context(), r.ns, name, r.cc("")); err != nil {
		return err
	}
	return r.redirect(r.url(notifiersPath), views.Flash{Kind: "ok", Message: "Notifier " + name + " deleted."})
}

// notifierHealth renders a notifier's health in the viewer's zone.
func (r *request) notifierHealth(h models.NotifierHealth) views.NotifierHealthView {
	return views.NotifierHealthView{State: h.State(), LastSuccess: momentPtr(h.LastSuccessAt, r.zone(""), r.now),
		FailingSince: momentPtr(h.FailingSince, r.zone(""), r.now), LastError: deref(h.LastError), Pending: h.Pending, Dead: h.Dead}
}

// RedeliverDead answers POST /waterline/notifiers/{name}/redeliver: the
// notifier's dead deliveries back to pending (at most
// scheduling.MaxRedeliver), then its page.
func (h *Console) RedeliverDead(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	n, more, err := h.NotifierStore.RedeliverDead(c.Request().Context(), r.ns, name, r.cc(""))
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("%s pending again.", countWord(n, "dead delivery is", "dead deliveries are"))
	if more {
		msg += fmt.Sprintf(" More are dead: redeliver again for the next %d.", scheduling.MaxRedeliver)
	}
	return r.redirect(r.url(notifierURL(name)), views.Flash{Kind: "ok", Message: msg})
}

// Redeliver answers POST /waterline/notifiers/{name}/deliveries/{id}/redeliver.
func (h *Console) Redeliver(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	name := c.Param("name")
	d, err := h.NotifierStore.Redeliver(c.Request().Context(), r.ns, name, c.Param("id"), r.cc(""))
	if err != nil {
		return err
	}
	return r.redirect(r.url(notifierURL(name)), views.Flash{Kind: "ok", Message: "Delivery " + d.ID + " is pending again."})
}
