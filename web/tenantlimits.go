package web

import (
	"net/http"
	"runtime"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/handlers"
)

// Per-principal concurrency limits (docs/SECURITY.md, "Tenant isolation"):
// what one token can hold of the server at once, so one misbehaving tenant
// cannot take what every namespace shares.
const (
	// DefaultMaxPollsPerPrincipal is --max-polls-per-principal: worker
	// polls (long or not) one token may have in flight. A fleet of workers
	// sharing a token needs one each; 1,000 of them were a way to slow
	// every namespace (issue 36).
	DefaultMaxPollsPerPrincipal = 64
	// MaxBackfillsPerPrincipal is how many backfills (dry runs included)
	// one token may run at once; a server-wide pool (backfillSlots) bounds
	// them all.
	MaxBackfillsPerPrincipal = 2
)

// backfillSlots is how many backfills the server computes at once: each
// writes up to a backfill's whole range in one transaction.
func backfillSlots() int { return max(2, runtime.GOMAXPROCS(0)) }

var errBackfillsBusy = echo.NewHTTPError(http.StatusServiceUnavailable, "too many backfills are being computed right now; retry in a moment")

// perPrincipal lets each principal have at most n requests in flight; the
// next is refused at once with 429 and Retry-After (the caller, not the
// server, is over its share).
func perPrincipal(n int, message string) echo.MiddlewareFunc {
	var (
		mu       sync.Mutex
		inFlight = map[string]int{}
	)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			name := auth.Local.Name
			if p, ok := c.Get(handlers.PrincipalKey).(*auth.Principal); ok {
				name = p.Name
			}
			mu.Lock()
			if inFlight[name] >= n {
				mu.Unlock()
				c.Response().Header().Set("Retry-After", "1")
				return echo.NewHTTPError(http.StatusTooManyRequests, message)
			}
			inFlight[name]++
			mu.Unlock()
			defer func() {
				mu.Lock()
				defer mu.Unlock()
				if inFlight[name]--; inFlight[name] == 0 {
					delete(inFlight, name)
				}
			}()
			return next(c)
		}
	}
}
