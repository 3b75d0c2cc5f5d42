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
}

// nextPath keeps redirects after login inside the console.
func nextPath(raw string) string {
	if p, ok := localPath(raw); ok {
		return p
	}
	return consolePrefix + "/schedules"
}

func (h *Login) page(c echo.Context, status int, next, message string) error {
	l := views.LayoutView{Title: pageTitle(c, "Sign-in"), Version: h.Version, CSRFToken: csrfToken(c)}
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
	// A fresh session at every login: a cookie planted before sign-in is
	// worthless afterwards (no session fixation).
	value, err := h.Sessions.Start(c.Request().Context(), p, h.Clock.Now())
	if err != nil {
		return err
	}
	SetCookie(c, &http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: int(h.Sessions.TTL / time.Second)})
	return c.Redirect(http.StatusSeeOther, nextPath(c.FormValue("next")))
}

// Logout answers POST /waterline/logout: the session ends in the database,
// so the cookie is dead on every replica even if it was copied.
func (h *Login) Logout(c echo.Context) error {
	if ck, err := c.Cookie(SessionCookie); err == nil && h.Store.Enabled() {
		if err := h.Sessions.End(c.Request().Context(), ck.Value); err != nil {
			return err
		}
	}
	SetCookie(c, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1})
	return c.Redirect(http.StatusSeeOther, consolePrefix+"/login")
}
