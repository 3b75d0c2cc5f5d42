package scheduling

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Clock is where the domain reads the time. Production uses SystemClock;
// tests drive a fake so that no test sleeps.
type Clock interface {
	Now() time.Time
}

// SystemClock reads the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }

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
