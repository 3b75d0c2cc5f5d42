// Package schedtest holds test doubles for the scheduling domain: a clock
// tests move by hand and a predictable random source.
package schedtest

import (
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/scheduling"
)

// Clock is a Clock that only moves when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Rand always draws the same value (clamped into range), so jitter is
// predictable: Rand{Value: 1 << 62} always draws the maximum.
type Rand struct{ Value int64 }

// Int64N returns min(Value, n-1).
func (r Rand) Int64N(n int64) int64 { return min(r.Value, n-1) }

// Service returns a service on db driven by clock, with zero jitter draws
// and a silent logger.
func Service(db *bun.DB, clock scheduling.Clock) *scheduling.Service {
	return scheduling.New(scheduling.Config{
		DB: db, Clock: clock, Rand: Rand{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}
