package runner

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// tail keeps the last limit bytes written to it and counts the rest, so a
// command that prints gigabytes costs this process a bounded buffer.
type tail struct {
	limit int

	mu    sync.Mutex
	buf   []byte
	total int64
}

func newTail(limit int) *tail { return &tail{limit: limit} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.limit {
		t.buf = append(t.buf[:0], p[len(p)-t.limit:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	// Compact only when twice the limit is held: copying on every write
	// would make a chatty command cost quadratic time.
	if len(t.buf) > 2*t.limit {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.limit:]...)
	}
	return len(p), nil
}

// whole returns everything written when it fit, and whether it did.
func (t *tail) whole() ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total > int64(t.limit) {
		return nil, false
	}
	return append([]byte(nil), t.buf...), true
}

// last renders at most n bytes (n ≤ limit, and well above the marker's
// ~30 bytes) of the end of the output as
// text: when more was written, it starts with a marker saying how much was
// dropped, and the marker counts against n. It never starts inside a UTF-8
// sequence.
func (t *tail) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if t.total <= int64(n) {
		return string(b)
	}
	// The marker can only be shorter than this estimate: it names fewer
	// dropped bytes than the total.
	keep := max(n-len(truncatedMarker(t.total)), 0)
	b = b[len(b)-min(keep, len(b)):]
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return truncatedMarker(t.total-int64(len(b))) + string(b)
}

func truncatedMarker(dropped int64) string { return fmt.Sprintf("[… %d bytes truncated] ", dropped) }
