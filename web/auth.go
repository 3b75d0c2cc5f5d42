package web

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/handlers"
	"github.com/tidelinehq/tideline/scheduling"
)

// Auth configures authentication. With no tokens in Store the server runs
// in local mode: it serves loopback clients only, all as admin.
type Auth struct {
	Store    *auth.Store
	Sessions *auth.Sessions
	// SecureCookies marks cookies Secure (the server itself speaks TLS).
	SecureCookies bool
	// TrustProxy honours X-Forwarded-Proto: https for Secure cookies.
	TrustProxy bool
}

// secure reports whether cookies set on this request must be Secure.
func (a Auth) secure(c echo.Context) bool {
	return a.SecureCookies || c.Request().TLS != nil ||
		(a.TrustProxy && strings.EqualFold(c.Request().Header.Get("X-Forwarded-Proto"), "https"))
}

// LocalModeBanner is shown on every console page in local mode.
const LocalModeBanner = "Local mode — no authentication. Only this machine can reach Tideline; add tokens (--tokens-file) to serve others."

type guard struct {
	Auth
	clock scheduling.Clock
}

func (g *guard) local() bool { return !g.Store.Enabled() }

func setPrincipal(c echo.Context, p *auth.Principal) {
	c.Set(handlers.PrincipalKey, p)
	c.Set(handlers.ActorKey, p.Name)
}

// api authenticates bearer tokens and checks the route's permission:
// 401 without a valid token, 403 when the role lacks perm.
func (g *guard) api(perm auth.Permission) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if g.local() { // localOnly has vetted the peer, the Host and the origin
				setPrincipal(c, auth.Local)
				return next(c)
			}
			token, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
			p, found := g.Store.Authenticate(strings.TrimSpace(token))
			if !ok || !found {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="tideline"`)
				return echo.NewHTTPError(http.StatusUnauthorized, "a valid bearer token is required")
			}
			if !p.Can(perm) {
				return echo.NewHTTPError(http.StatusForbidden, "role "+p.Role+" may not "+perm.String())
			}
			setPrincipal(c, p)
			return next(c)
		}
	}
}

// console authenticates the session cookie (or local mode) and checks the
// route's permission. Anonymous visitors are sent to the login page.
func (g *guard) console(perm auth.Permission) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if g.local() { // localOnly has vetted the peer, the Host and the origin
				setPrincipal(c, auth.Local)
				c.Set(handlers.BannerKey, LocalModeBanner)
				return next(c)
			}
			p := g.sessionPrincipal(c)
			if p == nil {
				login := "/waterline/login?next=" + url.QueryEscape(c.Request().URL.RequestURI())
				if c.Request().Header.Get("HX-Request") == "true" {
					c.Response().Header().Set("HX-Redirect", login)
					return c.NoContent(http.StatusUnauthorized)
				}
				if c.Request().Method != http.MethodGet {
					return echo.NewHTTPError(http.StatusUnauthorized, "your session has ended; sign in again")
				}
				return c.Redirect(http.StatusSeeOther, login)
			}
			if !p.Can(perm) {
				return echo.NewHTTPError(http.StatusForbidden, "role "+p.Role+" may not "+perm.String())
			}
			setPrincipal(c, p)
			return next(c)
		}
	}
}

// sessionPrincipal resolves the session cookie to a configured principal.
func (g *guard) sessionPrincipal(c echo.Context) *auth.Principal {
	cookie, err := c.Cookie(handlers.SessionCookie)
	if err != nil || g.Sessions == nil {
		return nil
	}
	name, err := g.Sessions.Verify(cookie.Value, g.clock.Now())
	if err != nil {
		return nil
	}
	p, ok := g.Store.Lookup(name)
	if !ok {
		return nil
	}
	return p
}

// csrf requires the CSRF token on every state-changing console request:
// the _csrf cookie must match the _csrf form field or X-CSRF-Token header.
func csrf(a Auth) echo.MiddlewareFunc {
	return middleware.CSRFWithConfig(middleware.CSRFConfig{
		TokenLookup:    "header:X-CSRF-Token,form:_csrf",
		CookieName:     "_csrf",
		CookiePath:     "/waterline",
		CookieHTTPOnly: true,
		CookieSameSite: http.SameSiteLaxMode,
		CookieSecure:   a.SecureCookies,
		ContextKey:     "csrf",
		ErrorHandler: func(err error, c echo.Context) error {
			return echo.NewHTTPError(http.StatusForbidden, "the form expired or came from another site (CSRF token missing or wrong); reload the page and try again")
		},
	})
}

// loginRateLimit slows token guessing: 10 attempts per minute per client
// address (the connection's, see NewServer's IP extractor), bursts of 5.
func loginRateLimit() echo.MiddlewareFunc {
	store := middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
		Rate: rate.Limit(10.0 / 60.0), Burst: 5, ExpiresIn: 10 * time.Minute,
	})
	return middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: store,
		DenyHandler: func(c echo.Context, _ string, _ error) error {
			return echo.NewHTTPError(http.StatusTooManyRequests, "too many sign-in attempts; wait a minute")
		},
	})
}
