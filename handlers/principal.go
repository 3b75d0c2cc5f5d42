package handlers

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/scheduling"
)

// PrincipalKey is the echo context key under which authentication stores
// the caller (*auth.Principal).
const PrincipalKey = "tideline.principal"

// BannerKey is the echo context key of a notice shown on every console page
// (local mode).
const BannerKey = "tideline.banner"

// PrincipalFrom returns the authenticated caller, or nil when the route is
// not authenticated (tests that build handlers without the middleware).
func PrincipalFrom(c echo.Context) *auth.Principal {
	p, _ := c.Get(PrincipalKey).(*auth.Principal)
	return p
}

// Can reports whether the caller may do perm; without authentication
// (handler tests) everything is allowed.
func Can(c echo.Context, perm auth.Permission) bool {
	p := PrincipalFrom(c)
	return p == nil || p.Can(perm)
}

// checkNamespace hides namespaces the caller is not bound to: they are
// answered exactly like a namespace that does not exist (404, never 403).
func checkNamespace(c echo.Context, ns string) error {
	if p := PrincipalFrom(c); p != nil && !p.Allows(ns) {
		return namespaceNotFound(ns)
	}
	return nil
}

func namespaceNotFound(ns string) error {
	return &scheduling.NotFoundError{Code: scheduling.CodeNotFound, Message: fmt.Sprintf("namespace %q not found", ns)}
}

// defaultNamespace is "default", or the one namespace a bound caller has.
func defaultNamespace(c echo.Context) string {
	if p := PrincipalFrom(c); p != nil && len(p.Namespaces) == 1 && p.Namespaces[0] != "*" {
		return p.Namespaces[0]
	}
	return scheduling.DefaultNamespace
}
