package timespec

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"PT30M", 30 * time.Minute},
		{"PT1H", time.Hour},
		{"P1D", 24 * time.Hour},
		{"P1W", 7 * 24 * time.Hour},
		{"PT1M30S", 90 * time.Second},
		{"PT1M", time.Minute}, // M after T is minutes, not months
		{"P1DT2H", 26 * time.Hour},
		{"P2W3D", 17 * 24 * time.Hour},
		{"PT0S", 0},
		{"PT1.5H", 90 * time.Minute},
		{"pt15m", 15 * time.Minute},
		{"  PT5M ", 5 * time.Minute},
		{"30 minutes", 30 * time.Minute},
		{"1 hour", time.Hour},
		{"1 day", 24 * time.Hour},
		{"2 weeks", 14 * 24 * time.Hour},
		{"90 seconds", 90 * time.Second},
		{"1 minute", time.Minute},
		{"1h30m", 90 * time.Minute},
		{"45s", 45 * time.Second},
		{"2d", 48 * time.Hour},
		{"1 hour 30 minutes", 90 * time.Minute},
		{"1 hour and 30 minutes", 90 * time.Minute},
		{"1 day, 2 hours", 26 * time.Hour},
		{"1.5 hours", 90 * time.Minute},
		{"15 Mins", 15 * time.Minute},
		{"1h 30m", 90 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseDuration(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseDurationErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string
	}{
		{"P1M", "months and years have no fixed length; use a cron expression"},
		{"P1Y", "months and years have no fixed length; use a cron expression"},
		{"P1Y2D", "months and years have no fixed length; use a cron expression"},
		{"1 month", "months and years have no fixed length; use a cron expression"},
		{"2 years", "months and years have no fixed length; use a cron expression"},
		{"", "duration is empty"},
		{"P", `"P" is not an ISO-8601 duration`},
		{"PT", `"PT" is not an ISO-8601 duration`},
		{"P1H", `"P1H" is not an ISO-8601 duration`},
		{"PT1M1H", `"PT1M1H" is not an ISO-8601 duration`},
		{"P1D1D", `"P1D1D" is not an ISO-8601 duration`},
		{"-PT5M", "negative"},
		{"-1h", "negative"},
		{"PT0.5S", "fraction of a second"},
		{"500ms", "fraction of a second"},
		{"5 fortnights", `unknown unit "fortnights"`},
		{"soon", `cannot read "soon" as a duration`},
		{"P99999W", "longer than 36500 days"},
		{"999999 hours", "longer than 36500 days"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			_, err := ParseDuration(tt.in)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestFormatISODuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "PT0S"},
		{time.Second, "PT1S"},
		{90 * time.Second, "PT1M30S"},
		{30 * time.Minute, "PT30M"},
		{time.Hour, "PT1H"},
		{90 * time.Minute, "PT1H30M"},
		{24 * time.Hour, "P1D"},
		{26 * time.Hour, "P1DT2H"},
		{8 * 24 * time.Hour, "P8D"},
		{7 * 24 * time.Hour, "P1W"},
		{14 * 24 * time.Hour, "P2W"},
		{1500 * time.Millisecond, "PT1.5S"},
		{-time.Hour, "-PT1H"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, FormatISODuration(tt.in))
		})
	}
}

// The CLI stores human input as FormatISODuration(ParseDuration(input)); the
// stored form must read back as the same duration.
func TestFormatISODurationRoundTrip(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"30 minutes", "1 hour", "1 day", "2 weeks", "90 seconds", "1h30m", "P1DT1S", "PT86399S", "10 days"} {
		d, err := ParseDuration(in)
		require.NoError(t, err, in)
		back, err := ParseDuration(FormatISODuration(d))
		require.NoError(t, err, in)
		require.Equal(t, d, back, "%s → %s", in, FormatISODuration(d))
	}
}

// fixedRand returns a chosen value and records the bound it was asked for.
type fixedRand struct {
	value int64
	asked []int64
}

func (r *fixedRand) Int64N(n int64) int64 {
	r.asked = append(r.asked, n)
	return r.value
}

func TestJitter(t *testing.T) {
	t.Parallel()
	r := &fixedRand{value: 7}
	require.Equal(t, 7*time.Second, Jitter(r, 10))
	require.Equal(t, []int64{11}, r.asked, "the upper bound is inclusive, so Int64N gets max+1")

	r = &fixedRand{value: 3}
	require.Zero(t, Jitter(r, 0))
	require.Zero(t, Jitter(r, -5))
	require.Empty(t, r.asked, "no jitter draws nothing")

	// With a real source every value lands in [0, max] and both ends occur.
	src := rand.New(rand.NewPCG(1, 2))
	seen := map[time.Duration]bool{}
	for range 2_000 {
		d := Jitter(src, 5)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, 5*time.Second)
		require.Zero(t, d%time.Second)
		seen[d] = true
	}
	require.Len(t, seen, 6, "expected every whole second 0..5, got %v", seen)
}
