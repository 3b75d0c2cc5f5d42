package handlers

import (
	"testing"
	"time"
)

// Durations read as an operator says them: two units at most, a zero
// smaller unit left out.
func TestDurationText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   time.Duration
		want string
	}{
		{120 * time.Millisecond, "120 ms"},
		{2300 * time.Millisecond, "2.3 s"},
		{time.Minute, "1 min"},
		{3*time.Minute + 4*time.Second, "3 min 4 s"},
		{3*time.Hour + 5*time.Minute, "3 h 5 min"},
		{2 * time.Hour, "2 h"},
		{42 * time.Hour, "1 d 18 h"},
		{72 * time.Hour, "3 d"},
		{-2300 * time.Millisecond, "−2.3 s"},
	} {
		if got := durationText(c.in); got != c.want {
			t.Errorf("durationText(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
