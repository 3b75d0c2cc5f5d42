package web

import (
	"net/http"
	"runtime"

	"github.com/labstack/echo/v4"
)

// previewSlots bounds how many previews run at once across the API and the
// console. A preview is pure CPU (the spec and count bounds keep each one
// small), so more than a couple per core only queues work that a burst of
// callers can pile up; the rest are told to retry.
func previewSlots() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// errBusy answers work refused because its slots are taken: 503 with
// Retry-After, since the server, not this one client, is saturated.
var errBusy = echo.NewHTTPError(http.StatusServiceUnavailable, "too many previews are being computed right now; retry in a moment")

// concurrencyLimit lets at most n requests through at a time; the next one
// is refused at once rather than queued, so a flood cannot hold memory or
// goroutines waiting.
func concurrencyLimit(n int) echo.MiddlewareFunc { return slotLimit(n, errBusy) }

// slotLimit is concurrencyLimit answering busy when the slots are taken.
func slotLimit(n int, busy *echo.HTTPError) echo.MiddlewareFunc {
	slots := make(chan struct{}, n)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			select {
			case slots <- struct{}{}:
			default:
				c.Response().Header().Set("Retry-After", "1")
				return busy
			}
			defer func() { <-slots }()
			return next(c)
		}
	}
}
