package web

import (
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// compress gzips the responses that are large and repeated — the console's
// htmx requests (the registry polls every 10 s: 379 KB of HTML, 21 KB
// gzipped), JSON API answers and static assets — for clients that accept
// it (issue 37 §7).
//
// A full console page (a top-level navigation) is not compressed: another
// site can make a signed-in browser load one, with a query string of its
// choosing reflected in a page that carries the CSRF token, and watch its
// compressed size (BREACH). An htmx request carries HX-Request, a header a
// cross-site page cannot set without a CORS preflight this server never
// grants, so only the console itself makes them.
func compress() echo.MiddlewareFunc {
	return middleware.GzipWithConfig(middleware.GzipConfig{
		Level:     5,
		MinLength: 1024,
		Skipper: func(c echo.Context) bool {
			r := c.Request()
			path := r.URL.Path
			switch {
			case r.Header.Get("HX-Request") == "true",
				strings.HasPrefix(path, "/static/"),
				strings.HasPrefix(path, "/api/"),
				strings.HasPrefix(path, "/waterline/api/"):
				return false
			}
			return true
		},
	})
}
