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

// Clock is a Clock that only moves when told to. Its timers fire when Set
// or Advance moves it to or past their deadline, so a loop or a long poll
// on it waits until the test moves time.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
	parked *sync.Cond // signalled whenever a timer is added
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock {
	c := &Clock{now: t}
	c.parked = sync.NewCond(&c.mu)
	return c
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t, firing the timers due by then.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.fireDue()
}

// Advance moves the clock forward by d, firing the timers due by then.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.fireDue()
}

// NewTimer returns a timer that fires once the clock reaches now + d (at
// once when d <= 0).
func (c *Clock) NewTimer(d time.Duration) scheduling.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	c.fireDue()
	c.parked.Broadcast()
	return t
}

// WaitTimers blocks until at least n timers are waiting: the goroutines
// that own them have parked, so moving the clock now reaches each of them
// (a move made before they park would be measured from the new time).
func (c *Clock) WaitTimers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		c.parked.Wait()
	}
}

func (c *Clock) fireDue() {
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.ch <- c.now // buffered, and each timer fires once
	}
	clear(c.timers[len(kept):])
	c.timers = kept
}

type timer struct {
	c  *Clock
	at time.Time
	ch chan time.Time
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, w := range t.c.timers {
		if w == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
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
