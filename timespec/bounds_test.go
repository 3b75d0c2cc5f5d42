package timespec

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestBoundsAreInclusiveAndEnd(t *testing.T) {
	t.Parallel()
	c, err := Compile(models.Spec{CronExpressions: []string{"0 6 * * *"}, Timezone: "America/New_York",
		StartAt: "2026-03-02T06:00:00-05:00", EndAt: "2026-03-04T06:00:00-05:00"})
	require.NoError(t, err)
	got, err := c.Between(utc("2026-01-01T00:00:00Z"), utc("2027-01-01T00:00:00Z"), 100)
	require.NoError(t, err)
	require.Equal(t, []time.Time{utc("2026-03-02T11:00:00Z"), utc("2026-03-03T11:00:00Z"), utc("2026-03-04T11:00:00Z")}, got)
	_, ok := c.Next(utc("2026-03-04T11:00:00Z"))
	require.False(t, ok, "after end_at the spec has ended")
	first, ok := c.Next(utc("2020-01-01T00:00:00Z"))
	require.True(t, ok)
	require.Equal(t, utc("2026-03-02T11:00:00Z"), first, "nothing before start_at")
	require.Empty(t, c.Preview(utc("2026-03-05T00:00:00Z"), 5))
}

func TestAtFiresOnceEachCombinedWithParts(t *testing.T) {
	t.Parallel()
	c, err := Compile(models.Spec{Intervals: []models.Interval{{Every: "P1D"}},
		At: []string{"2026-12-24T18:00:00-05:00", "2026-12-24T23:00:00Z", "2026-12-25T00:00:00Z", "2026-12-23T12:30:00Z"}})
	require.NoError(t, err)
	got, err := c.Between(utc("2026-12-23T00:00:00Z"), utc("2026-12-26T00:00:00Z"), 100)
	require.NoError(t, err)
	// 18:00 EST and 23:00Z are one instant; 2026-12-25T00:00Z is also the interval's: each listed once.
	require.Equal(t, []time.Time{utc("2026-12-23T00:00:00Z"), utc("2026-12-23T12:30:00Z"), utc("2026-12-24T00:00:00Z"),
		utc("2026-12-24T23:00:00Z"), utc("2026-12-25T00:00:00Z")}, got)
}

func TestOnlyPastAtHasEnded(t *testing.T) {
	t.Parallel()
	c, err := Compile(models.Spec{At: []string{"2020-01-01T00:00:00Z"}})
	require.NoError(t, err, "a spec of past at times is valid: it has ended")
	_, ok := c.Next(utc("2021-01-01T00:00:00Z"))
	require.False(t, ok)
	at, ok := c.Next(utc("2019-01-01T00:00:00Z"))
	require.True(t, ok)
	require.Equal(t, utc("2020-01-01T00:00:00Z"), at)
	require.Equal(t, "Once at 2020-01-01T00:00:00Z", c.Description())
}

func TestBoundsAndAtValidation(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxSpecAt+1)
	for i := range many {
		many[i] = time.Unix(int64(i)*60, 0).UTC().Format(time.RFC3339)
	}
	tests := []struct {
		name     string
		spec     models.Spec
		field    string
		contains string
	}{
		{"start not RFC 3339", models.Spec{CronExpressions: []string{"0 0 * * *"}, StartAt: "2026-03-01"}, "start_at", "is not an RFC 3339 time"},
		{"end not RFC 3339", models.Spec{CronExpressions: []string{"0 0 * * *"}, EndAt: "tomorrow"}, "end_at", "is not an RFC 3339 time"},
		{"end before start", models.Spec{CronExpressions: []string{"0 0 * * *"}, StartAt: "2026-03-02T00:00:00Z", EndAt: "2026-03-01T00:00:00Z"}, "end_at", "is before start_at"},
		{"bad at names its index", models.Spec{At: []string{"2026-01-01T00:00:00Z", "soon"}}, "at[1]", `"soon" is not an RFC 3339 time`},
		{"fractional at", models.Spec{At: []string{"2026-01-01T00:00:00.5Z"}}, "at[0]", "whole seconds"},
		{"too many at", models.Spec{At: many}, "at", fmt.Sprintf("at most %d at times", MaxSpecAt)},
		{"long at", models.Spec{At: []string{strings.Repeat("9", MaxSpecPartLength+1)}}, "at[0]", "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.spec)
			var se *Error
			require.ErrorAs(t, err, &se)
			require.False(t, se.NeverFires)
			require.Contains(t, se.Fields[tc.field], tc.contains, "fields: %v", se.Fields)
		})
	}
}

func TestBoundsAndAtDescribed(t *testing.T) {
	t.Parallel()
	c, err := Compile(models.Spec{CronExpressions: []string{"0 6 * * 1-5"}, Timezone: "America/New_York",
		StartAt: "2026-03-01T00:00:00-05:00", EndAt: "2026-03-31T23:59:59-04:00", At: []string{"2026-12-24T23:00:00Z"}})
	require.NoError(t, err)
	require.Equal(t, "At 06:00 on Monday through Friday (America/New_York); Once at 2026-12-24T23:00:00Z; "+
		"from 2026-03-01T00:00:00-05:00 until 2026-03-31T23:59:59-04:00", c.Description())
}

func TestCacheKeepsBoundsApart(t *testing.T) {
	t.Parallel()
	base := models.Spec{CronExpressions: []string{"0 0 * * *"}}
	a, err := Compile(base)
	require.NoError(t, err)
	bounded := base
	bounded.EndAt = "2026-01-01T00:00:00Z"
	b, err := Compile(bounded)
	require.NoError(t, err)
	require.NotSame(t, a, b)
	_, ok := b.Next(utc("2026-01-02T00:00:00Z"))
	require.False(t, ok)
	withAt := base
	withAt.At = []string{"2026-01-01T00:00:30Z"}
	w, err := Compile(withAt)
	require.NoError(t, err)
	require.NotSame(t, a, w)
}

// TestBoundedNextProperty: for random specs, bounds and at lists, Next
// strictly advances, stays within [start_at, end_at], and enumerates
// exactly the unbounded spec's occurrences inside the bounds plus the at
// times.
func TestBoundedNextProperty(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(31))
	crons := []string{"0 6 * * *", "*/17 * * * *", "30 2 * * *", "0 9 * * 1-5", "15 1 1 * *"}
	zones := []string{"UTC", "America/New_York", "Europe/London", "Australia/Sydney"}
	base := utc("2026-01-01T00:00:00Z")
	for i := 0; i < 200; i++ {
		spec := models.Spec{Timezone: zones[rng.Intn(len(zones))]}
		if rng.Intn(3) > 0 {
			spec.CronExpressions = []string{crons[rng.Intn(len(crons))]}
		}
		var ats []time.Time
		for j := rng.Intn(5); j > 0; j-- {
			at := base.Add(time.Duration(rng.Int63n(int64(60 * 24 * time.Hour)))).Truncate(time.Second)
			ats = append(ats, at)
			spec.At = append(spec.At, at.Format(time.RFC3339))
		}
		if len(spec.CronExpressions) == 0 && len(spec.At) == 0 {
			spec.Intervals = []models.Interval{{Every: "PT7H"}}
		}
		unbounded, err := Compile(spec)
		require.NoError(t, err)
		start := base.Add(time.Duration(rng.Int63n(int64(30 * 24 * time.Hour)))).Truncate(time.Second)
		end := start.Add(time.Duration(rng.Int63n(int64(30 * 24 * time.Hour)))).Truncate(time.Second)
		spec.StartAt, spec.EndAt = start.Format(time.RFC3339), end.Format(time.RFC3339)
		bounded, err := Compile(spec)
		require.NoError(t, err)

		all, err := unbounded.Between(base, base.Add(90*24*time.Hour), 100000)
		require.NoError(t, err)
		var want []time.Time
		for _, at := range all {
			if !at.Before(start) && !at.After(end) {
				want = append(want, at)
			}
		}
		var got []time.Time
		cursor := base.Add(-time.Second)
		for {
			next, ok := bounded.Next(cursor)
			if !ok {
				break
			}
			require.True(t, next.After(cursor), "spec %+v: Next(%s) = %s does not advance", spec, cursor, next)
			require.False(t, next.Before(start) || next.After(end), "spec %+v: %s outside bounds", spec, next)
			got = append(got, next)
			cursor = next
		}
		for _, at := range ats {
			if !at.Before(start) && !at.After(end) {
				require.Contains(t, got, at, "spec %+v: at time missing", spec)
			}
		}
		require.True(t, sort.SliceIsSorted(got, func(i, j int) bool { return got[i].Before(got[j]) }))
		require.Equal(t, want, got, "spec %+v", spec)
	}
}
