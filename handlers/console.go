package handlers

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// Console serves the operator console (CONTRACT §8) under /waterline. Like the
// JSON API it only adapts requests: every rule lives in the service, and the
// handlers turn its results into the view models of views/.
//
// Each area depends on its own small interface of the service
// (console_services.go); NewConsole wires one service into all of them.
type Console struct {
	Schedules     ScheduleReader
	Changes       ScheduleWriter
	RunStore      RunKeeper
	NotifierStore NotifierKeeper
	Directory     NamespaceDirectory
	VersionStore  VersionKeeper
	BackfillStore BackfillKeeper
	CalendarStore CalendarKeeper
	Version       string
	// Namespace, when set, is the only namespace this server serves.
	Namespace string
	// Clock is "now" for relative times, previews and backfill defaults.
	Clock scheduling.Clock
}

// NewConsole is the console over one service, which serves every area. A
// nil service (tests of the server's plumbing) leaves every area nil, so
// the pages that can render without one (errors, the layout) still do.
func NewConsole(svc *scheduling.Service, version, namespace string, clock scheduling.Clock) *Console {
	h := &Console{Version: version, Namespace: namespace, Clock: clock}
	if svc != nil {
		h.Schedules, h.Changes, h.RunStore, h.NotifierStore, h.Directory, h.VersionStore, h.BackfillStore = svc, svc, svc, svc, svc, svc, svc
		h.CalendarStore = svc
	}
	return h
}

// Cookies of the console; both are scoped to /waterline.
const (
	namespaceCookie = "tideline_ns"
	flashCookie     = "tideline_flash"
	consolePrefix   = "/waterline"
)

// SecureCookiesKey is the echo context key of a bool: whether cookies set on
// this request must be Secure (served over TLS, directly or behind a
// trusted proxy).
const SecureCookiesKey = "tideline.secure_cookies"

// SetCookie sets a console cookie with the attributes all of them share:
// HttpOnly, SameSite=Lax, and Secure whenever the session cookie is, so no
// cookie of ours travels in clear text next to a protected session.
func SetCookie(c echo.Context, ck *http.Cookie) {
	ck.HttpOnly = true
	ck.SameSite = http.SameSiteLaxMode
	ck.Secure, _ = c.Get(SecureCookiesKey).(bool)
	c.SetCookie(ck)
}

// csrfToken is the token web's CSRF middleware stores under "csrf", or ""
// while that middleware is off. Every form renders it as _csrf.
func csrfToken(c echo.Context) string {
	token, _ := c.Get("csrf").(string)
	return token
}

// isHX reports whether htmx sent the request (it then wants a fragment).
func isHX(c echo.Context) bool { return c.Request().Header.Get("HX-Request") == "true" }

// request is one console request: its namespace and the clock reading every
// relative time on the page is computed from.
type request struct {
	h   *Console
	c   echo.Context
	ns  string
	now time.Time
	// nsInURL says the namespace came from ?namespace=; the URLs the page
	// builds carry it on, so that the forms act in the namespace shown.
	nsInURL bool
	// timePref is the viewer's time setting (timeCookie): "" shows times in
	// each schedule's zone, "utc" in UTC, "local" in the browser's zone
	// (rendered in UTC, converted by console.js; UTC without JavaScript).
	timePref string
	// anonymous marks an error page shown before anyone was authenticated:
	// its layout lists no namespaces.
	anonymous bool
}

// timeCookie keeps the viewer's time setting across pages.
const timeCookie = "tideline_time"

// timePrefs are the time settings, value and label, in the header's order.
var timePrefs = []views.KV{{Key: "", Value: "Schedule's zone"}, {Key: "utc", Value: "UTC"}, {Key: "local", Value: "Browser local"}}

// zone is where a page shows times that belong to the named zone, after
// the viewer's time setting.
func (r *request) zone(name string) *time.Location {
	if r.timePref == "utc" || r.timePref == "local" {
		return time.UTC
	}
	return zoneOf(name)
}

// SetTime answers GET /waterline/time?pref=&return_to=: it keeps the time
// setting in a cookie and goes back (a plain form, so it works without JS).
func (h *Console) SetTime(c echo.Context) error {
	pref := c.QueryParam("pref")
	known := false
	for _, p := range timePrefs {
		known = known || p.Key == pref
	}
	if !known {
		return scheduling.NewValidationError("pref", "must be empty (the schedule's zone), utc or local")
	}
	SetCookie(c, &http.Cookie{Name: timeCookie, Value: pref, Path: consolePrefix, MaxAge: 365 * 24 * 3600})
	back, ok := localPath(c.QueryParam("return_to"))
	if !ok {
		back = registryPath
	}
	return c.Redirect(http.StatusSeeOther, back)
}

func (h *Console) begin(c echo.Context) (*request, error) {
	r := &request{h: h, c: c, now: h.now()}
	if ck, err := c.Cookie(timeCookie); err == nil && (ck.Value == "utc" || ck.Value == "local") {
		r.timePref = ck.Value
	}
	var err error
	named := c.QueryParam("namespace")
	if r.ns, err = resolveNamespace(c, h.Namespace, nsQuery{named: named, remembered: switcherChoice(c), anyBound: true}); err != nil {
		return nil, err
	}
	r.nsInURL = h.Namespace == "" && named != ""
	return r, nil
}

// rememberedNamespace is the namespace of a request that names none: the
// switcher's cookie, else "default" (or the viewer's first namespace).
func rememberedNamespace(c echo.Context) string {
	ns, err := resolveNamespace(c, "", nsQuery{remembered: switcherChoice(c), anyBound: true})
	if err != nil {
		// Not even the default is this viewer's (bound to none): frame
		// the page in "default"; it shows nothing of theirs anyway.
		return defaultNamespace(c)
	}
	return ns
}

// switcherChoice is the namespace the switcher's cookie remembers ("" for
// none); the resolver decides whether it still applies.
func switcherChoice(c echo.Context) string {
	if ck, err := c.Cookie(namespaceCookie); err == nil {
		return ck.Value
	}
	return ""
}

// canOperate and canAdmin are the viewer's role (CONTRACT §9): actions it may
// not take are not shown. Without authentication everything is allowed.
func (r *request) canOperate() bool { return Can(r.c, auth.Operate) }
func (r *request) canAdmin() bool   { return Can(r.c, auth.Admin) }

func (h *Console) now() time.Time {
	if h.Clock == nil {
		return time.Now()
	}
	return h.Clock.Now()
}

// url builds a console URL: path plus the non-empty query pairs (key,
// value, key, value…), and the namespace when it came from the query.
func (r *request) url(path string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if r.nsInURL {
		q.Set("namespace", r.ns)
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func scheduleURL(id string) string { return consolePrefix + "/schedules/" + url.PathEscape(id) }

// urlNamespace is the namespace to carry in forms, when it came from the URL.
func (r *request) urlNamespace() string {
	if r.nsInURL {
		return r.ns
	}
	return ""
}

func runURL(id string) string { return consolePrefix + "/runs/" + url.PathEscape(id) }

// layout is the page frame; it takes (and clears) the pending flash message.
func (r *request) layout(title, nav string) views.LayoutView {
	l := views.LayoutView{
		Title: pageTitle(r.c, title), Version: r.h.Version, Nav: nav, Namespace: r.ns,
		CSRFToken: csrfToken(r.c), Flash: takeFlash(r.c), ShowNotifiers: r.canAdmin(),
		TimePref: r.timePref, TimePrefs: timePrefs, TimeURL: consolePrefix + "/time", ReturnTo: r.c.Request().URL.RequestURI(),
	}
	if actor, ok := r.c.Get(ActorKey).(string); ok {
		l.User = actor
	}
	l.Banner, _ = r.c.Get(BannerKey).(string)
	if p := PrincipalFrom(r.c); p != nil && p != auth.Local {
		l.LogoutURL = consolePrefix + "/logout"
	}
	l.Namespaces, l.NamespaceURL = r.namespaces(), consolePrefix+"/namespace"
	// The main links keep a namespace that came from the URL, so that it
	// stays the page's namespace from one section to the next.
	l.HomeURL, l.SchedulesURL, l.RunsURL, l.NotifiersURL = r.url(consolePrefix), r.url(registryPath), r.url(runsPath), r.url(consolePrefix+"/notifiers")
	l.BackfillsURL = r.url(backfillsPath)
	l.CalendarsURL = r.url(calendarsPath)
	return l
}

// --- page titles (issue 21 §10) ---

// pageTitles name every console page in one word ("Schedules · Tideline"),
// by route, then what it is about (pageTitle): a tab reads the same
// whichever handler renders the page.
var pageTitles = map[string]string{
	"GET " + registryPath:                             "Schedules",
	"POST " + registryPath:                            "Create", // the create form again, with its errors
	"GET " + registryPath + "/new":                    "Create",
	"GET " + registryPath + "/:schedule_id":           "Schedule",
	"GET " + registryPath + "/:schedule_id/edit":      "Edit",
	"POST " + registryPath + "/:schedule_id/edit":     "Edit",
	"GET " + registryPath + "/:schedule_id/delete":    "Delete",
	"POST " + registryPath + "/:schedule_id/delete":   "Delete",
	"GET " + registryPath + "/:schedule_id/backfill":  "Backfill",
	"POST " + registryPath + "/:schedule_id/backfill": "Backfill",
	"GET " + registryPath + "/:schedule_id/history":   "History",
	"GET " + runsPath:                                 "Runs",
	"GET " + runsPath + "/:run_id":                    "Run",
	"GET " + consolePrefix + "/notifiers":             "Notifiers",
	"POST " + consolePrefix + "/notifiers":            "Notifiers",
	"GET " + consolePrefix + "/notifiers/:name":       "Notifier",
	"POST " + consolePrefix + "/notifiers/:name":      "Notifier",
	"GET " + consolePrefix + "/calendars":             "Calendars",
	"POST " + consolePrefix + "/calendars":            "Calendars",
	"GET " + consolePrefix + "/calendars/:name":       "Calendar",
	"POST " + consolePrefix + "/calendars/:name":      "Calendar",
	"GET " + consolePrefix + "/login":                 "Sign-in",
	"POST " + consolePrefix + "/login":                "Sign-in",
}

// pageTitle is the route's word followed by the schedule, run or notifier
// the route names ("Schedule nightly-x", "Run 01K…"), so tabs of two
// schedules tell apart; or the handler's title for a route the table does
// not know.
func pageTitle(c echo.Context, fallback string) string {
	t, ok := pageTitles[c.Request().Method+" "+c.Path()]
	if !ok {
		return fallback
	}
	for _, param := range []string{"schedule_id", "run_id", "name"} {
		if id := c.Param(param); id != "" {
			return t + " " + id
		}
	}
	return t
}

// --- namespace switcher (issue 21 §4) ---

// namespaces are what the header's switcher offers: the namespaces a
// bound viewer is bound to, or, for local mode and unbound viewers, the
// namespaces that hold live schedules (Service.Namespaces, read from
// their status counts, bounded to scheduling.MaxNamespaces) plus the
// current one and "default". A server
// pinned to one namespace, and a viewer who may see one, get none.
func (r *request) namespaces() []string {
	if r.h.Namespace != "" || r.anonymous {
		return nil
	}
	p := PrincipalFrom(r.c)
	if p != nil && !p.AllNamespaces() {
		return p.Namespaces
	}
	var list []string
	if r.h.Directory != nil { // nil in tests of the server's plumbing
		if found, err := r.h.Directory.Namespaces(r.c.Request().Context()); err == nil {
			list = found // else the page still renders; the switcher offers what it knows
		}
	}
	for _, ns := range []string{r.ns, "default"} {
		if ns != "" && !slices.Contains(list, ns) {
			list = append(list, ns)
		}
	}
	slices.Sort(list)
	return list
}

func (r *request) cc(reason string) *scheduling.CommandContext {
	return commandContext(r.c, "ui", reason)
}

// Home answers GET /waterline: the registry is what an operator opens the
// console for (its chips are the overview), so the landing page is a
// redirect there, keeping ?namespace=.
func (h *Console) Home(c echo.Context) error {
	r, err := h.begin(c)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, r.url(registryPath))
}

// SwitchNamespace answers GET /waterline/namespace?namespace=…&return_to=…
// (the header's switcher, a plain GET form): it remembers the choice in a
// cookie and opens the list the viewer was in (runs, else the registry) in
// that namespace; a schedule or run page would rarely exist in the other.
func (h *Console) SwitchNamespace(c echo.Context) error {
	ns := c.QueryParam("namespace")
	if h.Namespace == "" {
		if !scheduling.ValidNamespace(ns) {
			return scheduling.NewValidationError("namespace", scheduling.NamespaceRule)
		}
		if err := checkNamespace(c, ns); err != nil {
			return err
		}
		SetCookie(c, &http.Cookie{Name: namespaceCookie, Value: ns, Path: consolePrefix, MaxAge: 365 * 24 * 3600})
	}
	if back, ok := localPath(c.QueryParam("return_to")); ok && (back == runsPath || strings.HasPrefix(back, runsPath+"?") || strings.HasPrefix(back, runsPath+"/")) {
		return c.Redirect(http.StatusSeeOther, runsPath)
	}
	return c.Redirect(http.StatusSeeOther, registryPath)
}

// The flash message lives for one redirect in a short-lived cookie: the
// next page render shows it and clears it. No server-side session needed.

// maxFlashMessage keeps the flash cookie far below browsers' 4 KB per
// cookie: a message is a summary (see Bulk), never a full report.
const maxFlashMessage = 1000

func setFlash(c echo.Context, f views.Flash) {
	if r := []rune(f.Message); len(r) > maxFlashMessage {
		f.Message = string(r[:maxFlashMessage-1]) + "…"
	}
	body, err := json.Marshal(f)
	if err != nil {
		return
	}
	SetCookie(c, &http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString(body), Path: consolePrefix, MaxAge: 60})
}

func takeFlash(c echo.Context) *views.Flash {
	ck, err := c.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	SetCookie(c, &http.Cookie{Name: flashCookie, Value: "", Path: consolePrefix, MaxAge: -1})
	body, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return nil
	}
	var f views.Flash
	if json.Unmarshal(body, &f) != nil || f.Message == "" {
		return nil
	}
	if f.Kind != "ok" {
		f.Kind = "error"
	}
	if _, local := localPath(f.LinkURL); !local {
		f.LinkURL, f.LinkLabel = "", ""
	}
	return &f
}

// localPath accepts only console paths (/waterline/…), so that return_to
// and flash links can never send the browser to another site.
func localPath(raw string) (string, bool) {
	if raw == "" || strings.ContainsAny(raw, "\\\r\n") || strings.HasPrefix(raw, "//") {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "", false
	}
	// Judge the path a browser would resolve ("/waterline/../x" is "/x").
	clean := path.Clean(u.Path)
	if clean != consolePrefix && !strings.HasPrefix(clean, consolePrefix+"/") || strings.HasPrefix(clean, consolePrefix+"/api/") {
		return "", false
	}
	return u.RequestURI(), true
}

// returnTo is where a no-JS post goes back to: the posted return_to, else
// the page the form was on (Referer), else fallback.
func (r *request) returnTo(fallback string) string {
	if p, ok := localPath(r.c.FormValue("return_to")); ok {
		return p
	}
	if ref, err := url.Parse(r.c.Request().Referer()); err == nil && ref.Host == r.c.Request().Host {
		if p, ok := localPath(ref.RequestURI()); ok {
			return p
		}
	}
	return fallback
}

// redirect ends a no-JS post: 303 to target with a flash message.
func (r *request) redirect(target string, f views.Flash) error {
	setFlash(r.c, f)
	return r.c.Redirect(http.StatusSeeOther, target)
}

// refusal is the message of an error the user can act on (a conflict such
// as "already paused", or a validation error); other errors are not.
func refusal(err error) (string, int, bool) {
	var conf *scheduling.ConflictError
	var val *scheduling.ValidationError
	switch {
	case errors.As(err, &conf):
		return conf.Message, http.StatusConflict, true
	case errors.As(err, &val):
		return validationText(val), http.StatusUnprocessableEntity, true
	}
	return "", 0, false
}

func validationText(v *scheduling.ValidationError) string {
	parts := make([]string, 0, len(v.Fields))
	for _, kv := range sortedPairs(v.Fields) {
		parts = append(parts, kv.Key+": "+kv.Value)
	}
	return strings.Join(parts, "; ")
}
