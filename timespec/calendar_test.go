package timespec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

func mustCalendar(t testing.TB, name string, weekend []string, dates ...string) *Calendar {
	t.Helper()
	c, err := NewCalendar(name, dates, weekend)
	require.NoError(t, err)
	return c
}

func between(t testing.TB, c *CompiledSpec, from, to string) []string {
	t.Helper()
	out, err := c.Between(mustTime(t, from), mustTime(t, to), 10_000)
	require.NoError(t, err)
	return formatTimes(out)
}

func TestNewCalendarValidatesFields(t *testing.T) {
	t.Parallel()
	_, err := NewCalendar("x", []string{"2026-12-25", "2026-13-01", "25/12/2026"}, []string{"sat", "funday"})
	var verr *Error
	require.ErrorAs(t, err, &verr)
	require.Contains(t, verr.Fields, "dates[1]")
	require.Contains(t, verr.Fields, "dates[2]")
	require.Contains(t, verr.Fields, "weekend[1]")
	require.NotContains(t, verr.Fields, "dates[0]")

	_, err = NewCalendar("x", make([]string, MaxCalendarDates+1), nil)
	require.ErrorAs(t, err, &verr)
	require.Contains(t, verr.Fields["dates"], "at most 20000")

	c := mustCalendar(t, "x", nil, "2026-12-25", "2026-01-01", "2026-12-25")
	require.Equal(t, []string{"2026-01-01", "2026-12-25"}, c.Dates())
	require.Equal(t, []string{"sun", "sat"}, c.Weekend())
	require.Empty(t, mustCalendar(t, "x", []string{}).Weekend())
	require.Equal(t, c.Key(), mustCalendar(t, "x", []string{"sun", "sat"}, "2026-01-01", "2026-12-25").Key())
	require.NotEqual(t, c.Key(), mustCalendar(t, "x", nil, "2026-01-01").Key())
}

func TestCompileCalendarFieldErrors(t *testing.T) {
	t.Parallel()
	hol := mustCalendar(t, "hol", nil, "2026-12-25")
	_, err := Compile(models.Spec{CronExpressions: []string{"0 9 * * *"}, ExcludeCalendars: []string{"hol", "nope", "hol"}, OnExcluded: "sideways"}, hol)
	var verr *Error
	require.ErrorAs(t, err, &verr)
	require.Contains(t, verr.Fields["exclude_calendars[1]"], `unknown calendar "nope"`)
	require.Contains(t, verr.Fields["exclude_calendars[2]"], "listed twice")
	require.Contains(t, verr.Fields, "on_excluded")
	require.NotContains(t, verr.Fields, "exclude_calendars[0]")

	// Without the calendars, a spec that lists one does not compile: a
	// path that forgets to pass them cannot fire on a holiday.
	_, err = Compile(models.Spec{CronExpressions: []string{"0 9 * * *"}, ExcludeCalendars: []string{"hol"}})
	require.ErrorAs(t, err, &verr)
	require.Contains(t, verr.Fields, "exclude_calendars[0]")

	every := mustCalendar(t, "every", []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"})
	_, err = Compile(models.Spec{CronExpressions: []string{"0 9 * * *"}, ExcludeCalendars: []string{"every"}, OnExcluded: OnExcludedNext}, every)
	require.ErrorAs(t, err, &verr)
	require.Contains(t, verr.Fields["on_excluded"], "no day is a business day")
}

func TestCompileCacheSeesCalendarContent(t *testing.T) {
	t.Parallel()
	spec := models.Spec{CronExpressions: []string{"0 9 * * *"}, ExcludeCalendars: []string{"cache-hol"}}
	a := mustCompile2(t, spec, mustCalendar(t, "cache-hol", nil, "2026-12-25"))
	b := mustCompile2(t, spec, mustCalendar(t, "cache-hol", nil, "2026-12-25"))
	require.Same(t, a, b, "same content, same compiled spec")
	c := mustCompile2(t, spec, mustCalendar(t, "cache-hol", nil, "2026-12-26"))
	require.NotSame(t, a, c)
	require.Equal(t, []string{"2026-12-24T09:00:00Z", "2026-12-26T09:00:00Z"}, between(t, a, "2026-12-24T00:00:00Z", "2026-12-27T00:00:00Z"))
	require.Equal(t, []string{"2026-12-24T09:00:00Z", "2026-12-25T09:00:00Z"}, between(t, c, "2026-12-24T00:00:00Z", "2026-12-27T00:00:00Z"))
}

func mustCompile2(t testing.TB, spec models.Spec, cals ...*Calendar) *CompiledSpec {
	t.Helper()
	c, err := Compile(spec, cals...)
	require.NoError(t, err)
	return c
}

func TestCalendarSkipAndMoves(t *testing.T) {
	t.Parallel()
	// 2026-12-25 is a Friday; the 26th and 27th a weekend.
	hol := mustCalendar(t, "us-bank-holidays", nil, "2026-12-25")
	spec := func(on string) models.Spec {
		return models.Spec{CronExpressions: []string{"0 9 * * *"}, Timezone: "America/New_York", ExcludeCalendars: []string{"us-bank-holidays"}, OnExcluded: on}
	}
	from, to := "2026-12-24T00:00:00Z", "2026-12-29T00:00:00Z"

	skip := mustCompile2(t, spec(""), hol)
	// A weekend day excludes nothing by itself.
	require.Equal(t, []string{"2026-12-24T14:00:00Z", "2026-12-26T14:00:00Z", "2026-12-27T14:00:00Z", "2026-12-28T14:00:00Z"}, between(t, skip, from, to))
	require.Equal(t, "At 09:00 every day (America/New_York), except days in us-bank-holidays", skip.Description())

	next := mustCompile2(t, spec(OnExcludedNext), hol)
	// Moved over the weekend onto Monday's own 09:00: it fires once.
	require.Equal(t, []string{"2026-12-24T14:00:00Z", "2026-12-26T14:00:00Z", "2026-12-27T14:00:00Z", "2026-12-28T14:00:00Z"}, between(t, next, from, to))

	prev := mustCompile2(t, spec(OnExcludedPrevious), hol)
	require.Equal(t, []string{"2026-12-24T14:00:00Z", "2026-12-26T14:00:00Z", "2026-12-27T14:00:00Z", "2026-12-28T14:00:00Z"}, between(t, prev, from, to))

	// Weekdays only: the Friday moves to Monday, where it meets Monday's own.
	weekdays := models.Spec{CronExpressions: []string{"0 9 * * 1-5"}, Timezone: "America/New_York", ExcludeCalendars: []string{"us-bank-holidays"}, OnExcluded: OnExcludedNext}
	items := mustCompile2(t, weekdays, hol).Explain(mustTime(t, from), 3)
	require.Equal(t, []Occurrence{
		{At: mustTime(t, "2026-12-24T14:00:00Z"), Status: StatusPlanned},
		{At: mustTime(t, "2026-12-28T14:00:00Z"), Status: StatusPlanned},
		{At: mustTime(t, "2026-12-29T14:00:00Z"), Status: StatusPlanned},
	}, items)
	// Fridays only: the moved one stands alone and says where it came from.
	fridays := weekdays
	fridays.CronExpressions = []string{"0 9 * * 5"}
	items = mustCompile2(t, fridays, hol).Explain(mustTime(t, from), 2)
	require.Equal(t, []Occurrence{
		{At: mustTime(t, "2026-12-28T14:00:00Z"), Status: StatusMoved, Calendar: "us-bank-holidays", MovedFrom: mustTime(t, "2026-12-25T14:00:00Z")},
		{At: mustTime(t, "2027-01-01T14:00:00Z"), Status: StatusPlanned},
	}, items)
	fridays.OnExcluded = OnExcludedPrevious
	items = mustCompile2(t, fridays, hol).Explain(mustTime(t, from), 1)
	require.Equal(t, []Occurrence{{At: mustTime(t, "2026-12-24T14:00:00Z"), Status: StatusMoved, Calendar: "us-bank-holidays", MovedFrom: mustTime(t, "2026-12-25T14:00:00Z")}}, items)
	// Skip lists the excluded one between the planned ones.
	fridays.OnExcluded = ""
	items = mustCompile2(t, fridays, hol).Explain(mustTime(t, from), 2)
	require.Equal(t, []Occurrence{
		{At: mustTime(t, "2026-12-25T14:00:00Z"), Status: StatusExcluded, Calendar: "us-bank-holidays"},
		{At: mustTime(t, "2027-01-01T14:00:00Z"), Status: StatusPlanned},
	}, items)
	next2, ok := mustCompile2(t, fridays, hol).Next(mustTime(t, from))
	require.True(t, ok)
	require.Equal(t, "2027-01-01T14:00:00Z", next2.Format(time.RFC3339))
}

// Moved occurrences across both DST transitions of three zones: a move keeps
// the wall time written, and a wall time a gap skips follows rule 1 (shifted
// later by the gap); a repeated one fires at its first pass. Weekends are
// empty so the transition Sundays are business days.
func TestCalendarMovesAcrossDST(t *testing.T) {
	t.Parallel()
	none := []string{}
	cases := []struct {
		name, zone, cron, on string
		dates                []string
		from, to             string
		want                 []string
	}{
		{"New York: moved onto the spring-forward day, 02:30 → 03:30 EDT, once with the day's own", "America/New_York", "30 2 * * *", OnExcludedNext,
			[]string{"2026-03-07"}, "2026-03-06T00:00:00Z", "2026-03-10T00:00:00Z",
			[]string{"2026-03-06T07:30:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z"}},
		{"New York: moved off the spring-forward day keeps 02:30, not 03:30", "America/New_York", "30 2 * * *", OnExcludedNext,
			[]string{"2026-03-08"}, "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z",
			[]string{"2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z"}},
		{"New York: moved back onto the spring-forward day", "America/New_York", "30 2 * * 1", OnExcludedPrevious,
			[]string{"2026-03-09"}, "2026-03-01T00:00:00Z", "2026-03-17T00:00:00Z",
			[]string{"2026-03-02T07:30:00Z", "2026-03-08T07:30:00Z", "2026-03-16T06:30:00Z"}},
		{"New York: moved onto the fall-back day fires at the first 01:30", "America/New_York", "30 1 * * 6", OnExcludedNext,
			[]string{"2026-10-31"}, "2026-10-30T00:00:00Z", "2026-11-08T00:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-07T06:30:00Z"}},
		{"New York: an hourly spec moved off the fall-back day fires the repeated hour once", "America/New_York", "30 * * * *", OnExcludedPrevious,
			[]string{"2026-11-01"}, "2026-10-31T04:00:00Z", "2026-10-31T08:00:00Z",
			[]string{"2026-10-31T04:30:00Z", "2026-10-31T05:30:00Z", "2026-10-31T06:30:00Z", "2026-10-31T07:30:00Z"}},
		{"London: moved onto the spring-forward day, 01:30 → 02:30 BST", "Europe/London", "30 1 * * 6", OnExcludedNext,
			[]string{"2026-03-28"}, "2026-03-27T00:00:00Z", "2026-04-05T00:00:00Z",
			[]string{"2026-03-29T01:30:00Z", "2026-04-04T00:30:00Z"}},
		{"London: moved back onto the fall-back day fires at the first 01:30", "Europe/London", "30 1 * * 1", OnExcludedPrevious,
			[]string{"2026-10-26"}, "2026-10-20T00:00:00Z", "2026-11-03T00:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-11-02T01:30:00Z"}},
		{"Sydney: moved back onto the spring-forward day, 02:30 → 03:30 AEDT", "Australia/Sydney", "30 2 * * 1", OnExcludedPrevious,
			[]string{"2026-10-05"}, "2026-09-30T00:00:00Z", "2026-10-13T00:00:00Z",
			[]string{"2026-10-03T16:30:00Z", "2026-10-11T15:30:00Z"}},
		{"Sydney: moved onto the fall-back day fires at the first 02:30 (AEDT)", "Australia/Sydney", "30 2 * * 6", OnExcludedNext,
			[]string{"2026-04-04"}, "2026-04-01T00:00:00Z", "2026-04-12T00:00:00Z",
			[]string{"2026-04-04T15:30:00Z", "2026-04-10T16:30:00Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cal := mustCalendar(t, "c", none, tc.dates...)
			c := mustCompile2(t, models.Spec{CronExpressions: []string{tc.cron}, Timezone: tc.zone, ExcludeCalendars: []string{"c"}, OnExcluded: tc.on}, cal)
			require.Equal(t, tc.want, between(t, c, tc.from, tc.to))
		})
	}
}

// The invariants of a calendar-aware Next, over random specs × calendars ×
// zones × modes, against an oracle built from the calendar-less spec: every
// raw occurrence, excluded or moved to its business day at its own wall
// time (WallOf), deduplicated. Next never returns a listed date, a moved
// fire lands on a business day, and Next strictly advances.
func TestCalendarProperties(t *testing.T) {
	t.Parallel()
	crons := []string{"0 9 * * *", "30 2 * * *", "30 1 * * *", "0 9 * * 1-5", "15 */6 * * *", "0 0 * * *", "45 23 * * 5", "0 12 1 * *", "*/30 1-3 * * *"}
	intervals := []string{"PT7H", "P1D", "PT90M", "P3D"}
	zones := []string{"UTC", "America/New_York", "Europe/London", "Australia/Sydney", "Asia/Kolkata", "Australia/Lord_Howe", "America/Santiago"}
	modes := []string{"", OnExcludedNext, OnExcludedPrevious}
	weekends := [][]string{nil, {}, {"fri", "sat"}, {"sun"}}
	rng := rand.New(rand.NewPCG(31, 16))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 150 {
		spec := models.Spec{Timezone: zones[rng.IntN(len(zones))], OnExcluded: modes[rng.IntN(len(modes))]}
		if rng.IntN(3) > 0 {
			spec.CronExpressions = []string{crons[rng.IntN(len(crons))]}
		}
		if len(spec.CronExpressions) == 0 || rng.IntN(3) == 0 {
			spec.Intervals = []models.Interval{{Every: intervals[rng.IntN(len(intervals))]}}
		}
		var cals []*Calendar
		for k := range 1 + rng.IntN(2) {
			var dates []string
			for range 5 + rng.IntN(60) {
				dates = append(dates, base.AddDate(0, 0, rng.IntN(365)).Format(time.DateOnly))
			}
			// A run of listed days, across a DST change now and then.
			run := base.AddDate(0, 0, rng.IntN(365))
			for d := range 1 + rng.IntN(6) {
				dates = append(dates, run.AddDate(0, 0, d).Format(time.DateOnly))
			}
			name := fmt.Sprintf("c%d", k)
			cals = append(cals, mustCalendar(t, name, weekends[rng.IntN(len(weekends))], dates...))
			spec.ExcludeCalendars = append(spec.ExcludeCalendars, name)
		}
		c, err := Compile(spec, cals...)
		require.NoError(t, err, "case %d %+v", i, spec)
		raw := mustCompile(t, models.Spec{CronExpressions: spec.CronExpressions, Intervals: spec.Intervals, Timezone: spec.Timezone})

		from := base.AddDate(0, 0, 20)
		to := base.AddDate(0, 0, 330)
		got, err := c.Between(from, to, 100_000)
		require.NoError(t, err)
		want := oracle(t, c, raw, from, to)
		require.Equal(t, formatTimes(want), formatTimes(got), "case %d: %+v", i, spec)

		// Next strictly advances and agrees with Between, from instants that
		// are not fires too.
		at := from.Add(-time.Second)
		for k, g := range got {
			n, ok := c.Next(at)
			require.True(t, ok)
			require.True(t, n.After(at), "case %d: Next(%s) = %s", i, at, n)
			require.Equal(t, g, n, "case %d step %d", i, k)
			probe := at.Add(time.Duration(rng.Int64N(int64(n.Sub(at))+1)) - time.Second)
			if pn, ok := c.Next(probe); ok {
				require.True(t, pn.After(probe))
				require.False(t, pn.After(n) && probe.Before(n), "case %d: Next(%s) = %s skips %s", i, probe, pn, n)
			}
			at = n
		}
		for _, o := range c.Explain(from, 200) {
			day := dayOf(newZoneCursor(c.loc), o.At.Unix())
			switch o.Status {
			case StatusExcluded:
				_, ex := c.excluded(day)
				require.True(t, ex)
			case StatusMoved:
				require.True(t, c.business(day), "case %d: moved to %s, not a business day", i, o.At)
				fallthrough
			default:
				_, ex := c.excluded(day)
				require.False(t, ex, "case %d: %s fires on a listed date", i, o.At)
			}
		}
	}
}

// oracle lists the fires of c in [from, to) the slow way: every raw
// occurrence within a margin, kept, dropped or moved day by day.
func oracle(t *testing.T, c, raw *CompiledSpec, from, to time.Time) []time.Time {
	t.Helper()
	all, err := raw.Between(from.AddDate(0, 0, -30), to.AddDate(0, 0, 30), 1_000_000)
	require.NoError(t, err)
	z := newZoneCursor(c.loc)
	set := map[int64]bool{}
	for _, r := range all {
		d := dayOf(z, r.Unix())
		if _, ex := c.excluded(d); !ex {
			set[r.Unix()] = true
			continue
		}
		if c.move == 0 {
			continue
		}
		target := d
		for {
			target += int32(c.move)
			if c.business(target) {
				break
			}
		}
		wall, _, _ := raw.WallOf(r)
		tod := floorMod(wall.Unix(), 86400)
		set[wallInstant(z, int64(target)*86400+tod)] = true
	}
	var out []time.Time
	for u := range set {
		if tt := time.Unix(u, 0).UTC(); !tt.Before(from) && tt.Before(to) {
			out = append(out, tt)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	if out == nil {
		out = []time.Time{}
	}
	return out
}

// A spec listing one 20,000-date calendar, against BenchmarkNextCron's spec
// without one (docs/PERFORMANCE.md).
func BenchmarkNextCalendar(b *testing.B) {
	for _, on := range []string{OnExcludedSkip, OnExcludedNext} {
		b.Run(on, func(b *testing.B) {
			dates := make([]string, 0, MaxCalendarDates)
			start := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range MaxCalendarDates {
				dates = append(dates, start.AddDate(0, 0, i*3).Format(time.DateOnly)) // every third day, 1990–2154
			}
			cal := mustCalendar(b, "big", nil, dates...)
			benchmarkNext(b, models.Spec{CronExpressions: []string{"*/5 9-17 * * 1-5"}, ExcludeCalendars: []string{"big"}, OnExcluded: on}, cal)
		})
	}
}

func TestExcludedBetweenAndMovedFrom(t *testing.T) {
	t.Parallel()
	hol := mustCalendar(t, "hol", nil, "2026-12-25", "2027-01-01")
	spec := models.Spec{CronExpressions: []string{"0 9 * * 5"}, ExcludeCalendars: []string{"hol"}}
	skip := mustCompile2(t, spec, hol)
	got := skip.ExcludedBetween(mustTime(t, "2026-12-01T00:00:00Z"), mustTime(t, "2027-02-01T00:00:00Z"), 10)
	require.Equal(t, []Excluded{
		{At: mustTime(t, "2026-12-25T09:00:00Z"), Calendar: "hol"},
		{At: mustTime(t, "2027-01-01T09:00:00Z"), Calendar: "hol"},
	}, got)
	spec.OnExcluded = OnExcludedNext
	next := mustCompile2(t, spec, hol)
	got = next.ExcludedBetween(mustTime(t, "2026-12-01T00:00:00Z"), mustTime(t, "2027-02-01T00:00:00Z"), 1)
	require.Equal(t, []Excluded{{At: mustTime(t, "2026-12-25T09:00:00Z"), Calendar: "hol", MovedTo: mustTime(t, "2026-12-28T09:00:00Z")}}, got)
	from, cal, moved := next.MovedFrom(mustTime(t, "2026-12-28T09:00:00Z"))
	require.True(t, moved)
	require.Equal(t, "hol", cal)
	require.Equal(t, mustTime(t, "2026-12-25T09:00:00Z"), from)
	_, _, moved = next.MovedFrom(mustTime(t, "2026-12-18T09:00:00Z"))
	require.False(t, moved)
}
