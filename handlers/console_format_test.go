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

// Retry attempts come seconds apart: their times keep the seconds unless
// they fall on a whole minute a whole number of minutes after the moment
// before.
func TestAttemptMomentKeepsSecondsWhenTheyMatter(t *testing.T) {
	t.Parallel()
	at := func(h, m, s int) time.Time { return time.Date(2026, 7, 16, h, m, s, 0, time.UTC) }
	for _, tc := range []struct {
		t, prev time.Time
		want    string
	}{
		{at(12, 0, 10), at(12, 0, 0), "2026-07-16 12:00:10 UTC"}, // 10 s later
		{at(12, 1, 0), at(12, 0, 30), "2026-07-16 12:01:00 UTC"}, // 30 s later, on the minute
		{at(12, 5, 0), at(12, 0, 0), "2026-07-16 12:05 UTC"},     // five whole minutes
		{at(12, 5, 0), time.Time{}, "2026-07-16 12:05 UTC"},      // the first attempt, on the minute
		{at(12, 5, 7), time.Time{}, "2026-07-16 12:05:07 UTC"},
	} {
		if got := attemptMoment(tc.t, tc.prev, time.UTC, tc.t).Text; got != tc.want {
			t.Errorf("attemptMoment(%s after %s) = %q, want %q", tc.t, tc.prev, got, tc.want)
		}
	}
}
