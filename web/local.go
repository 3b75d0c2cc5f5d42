package web

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// Local mode (no tokens) treats every request as the admin "local", so
// "only this machine can reach it" must hold for browsers too. A browser on
// this machine is the way in for any web page the user visits:
//   - DNS rebinding: a page on evil.example re-resolves its own name to
//     127.0.0.1 and then reads and writes Tideline as a same-origin page.
//     The browser still sends Host: evil.example, so only loopback Host
//     names are served.
//   - Cross-site requests: a form or a "simple" fetch (text/plain, no
//     preflight) from any site reaches 127.0.0.1. Browsers label those with
//     Sec-Fetch-Site and Origin, so a state change from anywhere but our
//     own origin is refused. Clients that send neither (curl, the CLI, the
//     SDKs) are not browsers driven by a web page and keep working.
//
// This is middleware, not part of the JSON decoder, so that it also covers
// the console's forms and bodies that are not JSON at all.

var (
	errLocalOnly       = echo.NewHTTPError(http.StatusForbidden, "local mode serves loopback clients only; configure tokens to allow remote access")
	errLocalHost       = echo.NewHTTPError(http.StatusMisdirectedRequest, "local mode answers only requests addressed to localhost, 127.0.0.0/8 or [::1] (a different Host is how DNS rebinding reaches this server)")
	errLocalCrossSite  = echo.NewHTTPError(http.StatusForbidden, "cross-site request refused: in local mode only pages served by Tideline itself may change state")
	errLocalForeignOrg = echo.NewHTTPError(http.StatusForbidden, "request from another origin refused: in local mode only pages served by Tideline itself may change state")
)

// localOnly guards every route of a local-mode server.
func localOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		switch {
		case !isLoopback(c):
			return errLocalOnly
		case !loopbackHost(r.Host):
			return errLocalHost
		}
		if isSafeMethod(r.Method) {
			return next(c)
		}
		if err := sameOrigin(r); err != nil {
			return err
		}
		return next(c)
	}
}

// sameOrigin refuses a state change a browser labelled as coming from
// another site or origin. Requests without either header pass: only
// browsers send them, and every current browser sends at least Origin on a
// cross-origin POST.
func sameOrigin(r *http.Request) error {
	switch r.Header.Get(echo.HeaderSecFetchSite) {
	case "", "same-origin", "none":
	default: // cross-site, same-site (another port of localhost is same-site)
		return errLocalCrossSite
	}
	origin := r.Header.Get(echo.HeaderOrigin)
	if origin == "" {
		return nil
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if !strings.EqualFold(origin, scheme+"://"+r.Host) {
		return errLocalForeignOrg
	}
	return nil
}

func isSafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions || m == http.MethodTrace
}

// isLoopback reports whether the TCP peer is this machine. It reads the
// connection's address, never a forwarded header a client could forge.
func isLoopback(c echo.Context) bool {
	host, _, err := net.SplitHostPort(c.Request().RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header names this machine: localhost,
// an address in 127.0.0.0/8 or [::1], with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}
