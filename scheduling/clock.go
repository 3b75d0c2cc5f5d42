package scheduling

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Clock is where the domain reads the time and waits for it: the loop's
// periods and the workers' long polls wait on its timers, so a test moves
// them by moving the clock (schedtest.Clock) and never sleeps. Production
// uses SystemClock.
type Clock interface {
	Now() time.Time
	// NewTimer is time.NewTimer on this clock: its channel receives once d
	// has passed by the clock.
	NewTimer(d time.Duration) Timer
}

// Timer is a time.Timer of a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// SystemClock reads the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a real timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }

// sleep waits for d by clock, or until ctx ends; it reports whether ctx is
// still live.
func sleep(ctx context.Context, clock Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// ids makes ULIDs stamped with the injected clock. The entropy source is
// monotonic within a millisecond, so IDs made in one process sort in order.
type ids struct {
	mu      sync.Mutex
	entropy *ulid.MonotonicEntropy
}

func newIDs() *ids {
	return &ids{entropy: ulid.Monotonic(cryptoReader{}, 0)}
}

func (g *ids) newAt(t time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return ulid.MustNew(ulid.Timestamp(t), g.entropy).String()
}

// FormatTime renders an instant the way Tideline's JSON and audit payloads
// do: RFC 3339 in UTC with microseconds.
func FormatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

// utcMicro normalises an instant for storage: UTC, microsecond precision
// (what PostgreSQL keeps), so values read back compare equal.
func utcMicro(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

func ptrTime(t time.Time) *time.Time { return &t }

// cryptoReader feeds ULID entropy from the operating system.
type cryptoReader struct{}

func (cryptoReader) Read(p []byte) (int, error) { return rand.Read(p) }
