package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/views"
)

// ErrorPage renders a console error (404, 403, 500…) inside the layout:
// banner, namespace, user and navigation stay, so the viewer keeps their
// bearings. signedIn says the caller is known (a session, or local mode);
// for anyone else the layout offers no namespaces and no settings. A 404
// about a schedule names the other namespaces the viewer may see that hold
// a schedule with that ID (wrong namespace is the usual reason).
func (h *Console) ErrorPage(c echo.Context, status int, v views.ErrorView, signedIn bool) error {
	r, err := h.begin(c)
	if err != nil {
		// The namespace asked for is itself the error (absent, or not
		// this viewer's): frame the page in the one they would get.
		r = &request{h: h, c: c, now: h.now(), ns: rememberedNamespace(c)}
		if h.Namespace != "" {
			r.ns = h.Namespace
		}
	}
	r.anonymous = !signedIn
	l := r.layout("Error", "")
	l.Title = "Error"
	if r.anonymous {
		l.Namespace, l.TimeURL, l.ShowNotifiers = "", "", false
	}
	v.Status = status
	if id := c.Param("schedule_id"); status == http.StatusNotFound && id != "" && !r.anonymous {
		v.Elsewhere = r.elsewhere(id)
	}
	if strings.HasPrefix(c.Request().URL.Path, runsPath) {
		v.BackURL, v.BackLabel = r.url(runsPath), "Back to runs"
	} else {
		v.BackURL, v.BackLabel = r.url(registryPath), "Back to schedules"
	}
	return Render(c, status, views.ErrorPage(l, v))
}

// elsewhere links the schedule id in the other namespaces the viewer may
// see (the switcher's list, so never one they may not) that hold it.
func (r *request) elsewhere(id string) []views.Link {
	if r.h.Directory == nil {
		return nil
	}
	var others []string
	for _, ns := range r.namespaces() {
		if ns != r.ns && checkNamespace(r.c, ns) == nil {
			others = append(others, ns)
		}
	}
	holding, err := r.h.Directory.NamespacesHolding(r.c.Request().Context(), id, others)
	if err != nil {
		return nil // a hint, not worth failing the error page for
	}
	links := make([]views.Link, 0, len(holding))
	for _, ns := range holding {
		links = append(links, views.Link{Label: ns, URL: scheduleURL(id) + "?namespace=" + url.QueryEscape(ns)})
	}
	return links
}
