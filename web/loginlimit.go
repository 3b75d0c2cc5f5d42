package web

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/tidelinehq/tideline/scheduling"
)

// Console sign-in limits (docs/SECURITY.md, "Tenant isolation"). Failed
// attempts are counted per client address and across all clients; nothing
// the client chooses (the token it types) picks the budget, so nobody can
// lock another user out by typing the start of their token (issue 36: the
// limit counted per token prefix). A successful sign-in costs nothing.
const (
	loginPerAddressPerMinute = 10
	loginPerAddressBurst     = 5
	loginGlobalPerMinute     = 120
	loginGlobalBurst         = 60
	// loginAddressesTracked bounds the per-address table; past it, idle
	// entries are swept, and if none is idle new addresses share one
	// budget (stricter, never looser).
	loginAddressesTracked = 100_000
	loginIdleAfter        = 10 * time.Minute
)

type loginLimiter struct {
	clock  scheduling.Clock
	mu     sync.Mutex
	global *rate.Limiter
	byAddr map[string]*addressBudget
}

type addressBudget struct {
	lim  *rate.Limiter
	seen time.Time
}

func newLoginLimiter(clock scheduling.Clock) *loginLimiter {
	return &loginLimiter{
		clock:  clock,
		global: rate.NewLimiter(rate.Limit(loginGlobalPerMinute/60.0), loginGlobalBurst),
		byAddr: map[string]*addressBudget{},
	}
}

// reserve takes one attempt from the address's budget and the global one;
// ok is false (and nothing is taken) when either is spent, with how long
// until the next attempt would be allowed.
func (l *loginLimiter) reserve(addr string, now time.Time) (refund func(), wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.byAddr[addr]
	if b == nil {
		if len(l.byAddr) >= loginAddressesTracked {
			l.sweep(now)
		}
		if len(l.byAddr) >= loginAddressesTracked {
			addr = "overflow"
			b = l.byAddr[addr]
		}
		if b == nil {
			b = &addressBudget{lim: rate.NewLimiter(rate.Limit(loginPerAddressPerMinute/60.0), loginPerAddressBurst)}
			l.byAddr[addr] = b
		}
	}
	b.seen = now
	mine, all := b.lim.ReserveN(now, 1), l.global.ReserveN(now, 1)
	if d := max(mine.DelayFrom(now), all.DelayFrom(now)); d > 0 {
		mine.CancelAt(now)
		all.CancelAt(now)
		return nil, d, false
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		mine.CancelAt(now)
		all.CancelAt(now)
	}, 0, true
}

func (l *loginLimiter) sweep(now time.Time) {
	for addr, b := range l.byAddr {
		if now.Sub(b.seen) > loginIdleAfter {
			delete(l.byAddr, addr)
		}
	}
}

// middleware guards POST /waterline/login: a spent budget is 429 with
// Retry-After; an attempt that signs in (303) is given back.
func (l *loginLimiter) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		now := l.clock.Now()
		refund, wait, ok := l.reserve(c.RealIP(), now)
		if !ok {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait.Round(time.Second)/time.Second)+1))
			return echo.NewHTTPError(http.StatusTooManyRequests, "too many failed sign-in attempts; wait a minute")
		}
		err := next(c)
		if err == nil && c.Response().Status == http.StatusSeeOther && c.Request().Method == http.MethodPost {
			refund()
		}
		return err
	}
}
