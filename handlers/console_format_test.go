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

// Timeouts are whole seconds: under a minute they stay seconds, above it
// they read like every other duration, and an unset one is empty.
func TestSecondsText(t *testing.T) {
	t.Parallel()
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		in   *int64
		want string
	}{
		{nil, ""},
		{n(30), "30 s"},
		{n(3600), "1 h"},
		{n(5400), "1 h 30 min"},
		{n(86400 * 2), "2 d"},
	} {
		if got := secondsText(c.in); got != c.want {
			t.Errorf("secondsText(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
