package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

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
	// TrustProxy honours X-Forwarded-Proto: https for Secure cookies, and
	// X-Forwarded-For for client addresses, from TrustedProxies only.
	TrustProxy bool
	// TrustedProxies are the peers TrustProxy believes (nil:
	// DefaultTrustedProxies).
	TrustedProxies []netip.Prefix
}

func (a Auth) proxies() []netip.Prefix {
	if a.TrustedProxies == nil {
		return DefaultTrustedProxies
	}
	return a.TrustedProxies
}

// secure reports whether cookies set on this request must be Secure.
func (a Auth) secure(c echo.Context) bool {
	return a.SecureCookies || c.Request().TLS != nil ||
		(a.TrustProxy && trustedPeer(c.Request(), a.proxies()) && strings.EqualFold(c.Request().Header.Get("X-Forwarded-Proto"), "https"))
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

// bearerToken reads "Authorization: Bearer <token>". The scheme is
// case-insensitive (RFC 9110 §11.1), so "bearer" works too.
func bearerToken(c echo.Context) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(c.Request().Header.Get(echo.HeaderAuthorization)), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
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
			token, ok := bearerToken(c)
			p, found := g.Store.Authenticate(token)
			if !ok || !found {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="tideline"`)
				return echo.NewHTTPError(http.StatusUnauthorized, "a valid bearer token is required")
			}
			if !p.Can(perm) {
				return forbidden(p.Role, perm)
			}
			setPrincipal(c, p)
			return next(c)
		}
	}
}

// forbidden is the 403 of a role without perm, in words an operator reads
// on the console's error page as well as in an API error.
func forbidden(role string, perm auth.Permission) error {
	return echo.NewHTTPError(http.StatusForbidden, "Your role ("+role+") cannot do this: "+perm.Needs()+".")
}

// console checks the route's permission for the session that
// consoleSession found (or local mode). Anonymous visitors are sent to the
// login page.
func (g *guard) console(perm auth.Permission) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if g.local() { // localOnly has vetted the peer, the Host and the origin
				setPrincipal(c, auth.Local)
				c.Set(handlers.BannerKey, LocalModeBanner)
				return next(c)
			}
			s := sessionFrom(c)
			if s == nil {
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
			if !s.Principal.Can(perm) {
				return forbidden(s.Principal.Role, perm)
			}
			setPrincipal(c, s.Principal)
			return next(c)
		}
	}
}

const sessionKey = "tideline.session"

func sessionFrom(c echo.Context) *auth.Session {
	s, _ := c.Get(sessionKey).(*auth.Session)
	return s
}

// consoleSession runs first on every console request: it says whether
// cookies must be Secure, and resolves the session cookie (one database
// read) for the CSRF check and the route guards after it.
func (g *guard) consoleSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(handlers.SecureCookiesKey, g.secure(c))
		if g.local() {
			return next(c)
		}
		ck, err := c.Cookie(handlers.SessionCookie)
		if err != nil || ck.Value == "" {
			return next(c)
		}
		s, err := g.Sessions.Resolve(c.Request().Context(), ck.Value, g.Store, g.clock.Now())
		switch {
		case err == nil:
			c.Set(sessionKey, s)
		case err != auth.ErrSession:
			return err // the store failed: a 500, not a silent sign-out
		}
		return next(c)
	}
}

var errCSRF = echo.NewHTTPError(http.StatusForbidden, "the form expired or came from another site (CSRF token missing or wrong); reload the page and try again")

// csrf requires, on every state-changing console request, a token bound to
// who is asking: derived from the session's secret ID (so a _csrf cookie
// tossed in from a sibling domain proves nothing), from the server's key in
// local mode, and from a pre-session cookie on the login form. Browsers
// that label a post cross-site or same-site (another subdomain or port,
// where cookie tossing comes from) are refused before the token is read.
func (g *guard) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token := g.Sessions.CSRFToken(g.csrfBinding(c))
		c.Set("csrf", token) // handlers render it into every form (handlers.csrfToken)
		if isSafeMethod(c.Request().Method) {
			return next(c)
		}
		switch c.Request().Header.Get(echo.HeaderSecFetchSite) {
		case "cross-site", "same-site":
			return errCSRF
		}
		got := c.Request().Header.Get("X-CSRF-Token")
		if got == "" {
			got = c.FormValue("_csrf")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return errCSRF
		}
		return next(c)
	}
}

// preSessionCookie carries the random value the login form's CSRF token is
// bound to before anyone has signed in.
const preSessionCookie = "_csrf"

func (g *guard) csrfBinding(c echo.Context) string {
	if g.local() {
		return "local" // no session exists; localOnly keeps other sites out
	}
	if s := sessionFrom(c); s != nil {
		return "session\x00" + s.ID
	}
	// Planting this cookie gains an attacker at most a login as himself
	// (and browsers refuse that cross-site post on Sec-Fetch-Site).
	if ck, err := c.Cookie(preSessionCookie); err == nil && len(ck.Value) >= 16 && len(ck.Value) <= 64 {
		return "anonymous\x00" + ck.Value
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	v := base64.RawURLEncoding.EncodeToString(b)
	handlers.SetCookie(c, &http.Cookie{Name: preSessionCookie, Value: v, Path: "/waterline"})
	return "anonymous\x00" + v
}

// unboundOnly lets through principals bound to no namespace: the route
// shows data of every namespace at once.
func unboundOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p, ok := c.Get(handlers.PrincipalKey).(*auth.Principal); ok && !p.AllNamespaces() {
			return echo.NewHTTPError(http.StatusForbidden, "metrics cover every namespace; a token bound to namespaces may not read them")
		}
		return next(c)
	}
}
