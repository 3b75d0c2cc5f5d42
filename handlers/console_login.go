package handlers

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// SessionCookie is the console's session cookie.
const SessionCookie = "tideline_session"

// Login serves the console's sign-in and sign-out.
type Login struct {
	Store    *auth.Store
	Sessions *auth.Sessions
	Clock    scheduling.Clock
	Version  string
	// Secure reports whether cookies set on this request must be Secure.
	Secure func(c echo.Context) bool
}

// nextPath keeps redirects after login inside the console.
func nextPath(raw string) string {
	if p, ok := localPath(raw); ok {
		return p
	}
	return consolePrefix + "/schedules"
}

func (h *Login) page(c echo.Context, status int, next, message string) error {
	l := views.LayoutView{Title: "Sign in", Version: h.Version, CSRFToken: csrfToken(c)}
	return Render(c, status, views.LoginPage(l, views.LoginView{
		Action: consolePrefix + "/login", Next: nextPath(next), Error: message, CSRFToken: csrfToken(c),
	}))
}

// Form answers GET /waterline/login.
func (h *Login) Form(c echo.Context) error {
	if !h.Store.Enabled() {
		return c.Redirect(http.StatusSeeOther, consolePrefix+"/schedules") // local mode: nobody signs in
	}
	return h.page(c, http.StatusOK, c.QueryParam("next"), "")
}

// Submit answers POST /waterline/login: a valid token starts a session.
func (h *Login) Submit(c echo.Context) error {
	if !h.Store.Enabled() {
		return c.Redirect(http.StatusSeeOther, consolePrefix+"/schedules")
	}
	p, ok := h.Store.Authenticate(strings.TrimSpace(c.FormValue("token")))
	if !ok {
		return h.page(c, http.StatusUnauthorized, c.FormValue("next"), "That token is not valid.")
	}
	if p.Role == auth.RoleWorker {
		return h.page(c, http.StatusForbidden, c.FormValue("next"), "Worker tokens are for the worker protocol, not the console.")
	}
	// A fresh value at every login: a cookie planted before sign-in is
	// worthless afterwards (no session fixation).
	value, err := h.Sessions.Issue(p.Name, h.Clock.Now())
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{
		Name: SessionCookie, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: h.Secure(c), MaxAge: int(h.Sessions.TTL / time.Second),
	})
	return c.Redirect(http.StatusSeeOther, nextPath(c.FormValue("next")))
}

// Logout answers POST /waterline/logout.
func (h *Login) Logout(c echo.Context) error {
	c.SetCookie(&http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: h.Secure(c), MaxAge: -1})
	return c.Redirect(http.StatusSeeOther, consolePrefix+"/login")
}
