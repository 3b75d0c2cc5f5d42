package handlers

import (
	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/scheduling"
)

// nsQuery is what one request says about its namespace. Every surface (the
// API, the worker protocol, the console) resolves it with resolveNamespace,
// so the precedence, the validation and the 404 for a namespace the caller
// may not see are written once.
type nsQuery struct {
	// named is the namespace the caller asked for (X-Namespace, ?namespace=
	// or the body); it is validated (422) when given.
	named string
	// strict makes naming another namespace than a fixed server's a 404
	// (the worker protocol: a worker polling the wrong namespace must know);
	// otherwise a fixed server ignores the name.
	strict bool
	// remembered is the console's last choice (a cookie): used when valid
	// and visible to the caller, ignored otherwise (edited by hand, or a
	// namespace since taken away), never an error.
	remembered string
	// anyBound lets a caller bound to several namespaces, none of them the
	// default, land in its first one instead of a 404 (the console's front
	// door; an API client must say which one it means).
	anyBound bool
}

// resolveNamespace picks the request's namespace: the server's fixed one
// when configured, else the named one, else the remembered one, else
// "default" (or the caller's only namespace). A namespace the caller may not
// see is 404, never 403 (CONTRACT §1).
func resolveNamespace(c echo.Context, fixed string, q nsQuery) (string, error) {
	var ns string
	switch {
	case fixed != "":
		if q.strict && q.named != "" && q.named != fixed {
			return "", namespaceNotFound(q.named)
		}
		ns = fixed
	case q.named != "":
		ns = q.named
	default:
		ns = defaultNamespace(c)
		if p := PrincipalFrom(c); q.anyBound && p != nil && checkNamespace(c, ns) != nil && len(p.Namespaces) > 0 {
			ns = p.Namespaces[0]
		}
		if q.remembered != "" && scheduling.ValidNamespace(q.remembered) && checkNamespace(c, q.remembered) == nil {
			ns = q.remembered
		}
	}
	if err := scheduling.CheckNamespace(ns); err != nil {
		return "", err
	}
	if err := checkNamespace(c, ns); err != nil {
		return "", err
	}
	return ns, nil
}

// apiNamespace is the namespace of a JSON API request: X-Namespace, else
// ?namespace=.
func apiNamespace(c echo.Context, fixed string) (string, error) {
	named := c.Request().Header.Get("X-Namespace")
	if named == "" {
		named = c.QueryParam("namespace")
	}
	return resolveNamespace(c, fixed, nsQuery{named: named})
}
