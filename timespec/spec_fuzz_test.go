package timespec

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorhill/cronexpr"
	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

// The pools FuzzNext builds expressions from: frequent values so that a fire
// usually falls inside the brute-force window, plus DST-prone hours (1, 2,
// 23, 0) and every special form. All are spelled so that cronexpr parses them
// the same way Tideline does, since cronexpr (evaluated in plain UTC, where it
// is correct) is the oracle for "does this wall time match".
var (
	fuzzMinutes = []string{"*", "0", "30", "*/15", "0,30", "*/7", "5-10", "45", "10,35", "59"}
	fuzzHours   = []struct {
		text string
		all  bool // selects all 24 hours, so the expression follows real time
	}{
		{"*", true}, {"2", false}, {"1", false}, {"2,3", false}, {"*/3", false},
		{"0-5", false}, {"1-3/2", false}, {"0-23", true}, {"0", false}, {"23", false},
	}
	fuzzDays     = []string{"*", "*", "*", "1", "L", "15W", "8-14", "*/10", "31", "LW"}
	fuzzMonths   = []string{"*", "*", "*", "3", "10,11", "3-4", "*/2", "9-11", "4"}
	fuzzWeekdays = []string{"*", "*", "*", "0", "1-5", "6#2", "5L", "sun", "0,6"}
	fuzzZones    = []string{
		"America/New_York", "Europe/London", "Australia/Sydney", "Asia/Kolkata", "Australia/Lord_Howe",
		"America/Santiago", "UTC", "Asia/Kathmandu", "America/St_Johns", "Pacific/Chatham", "Europe/Dublin",
	}
)

// fuzzWindow bounds the brute-force search: long enough for most pool
// combinations to fire, short enough to step minute by minute.
const fuzzWindow = 2 * 24 * time.Hour

// FuzzNext checks the invariants of Next for generated expressions, zones and
// instants against a brute-force oracle built only on Go's tz database:
// Next(after) > after; it is the first instant after `after` at which the
// expression fires under CONTRACT §3 (so nothing is skipped); and Next of that is
// later still. Run longer with: go test ./timespec -fuzz FuzzNext -run '^$'
func FuzzNext(f *testing.F) {
	for i := range 48 {
		f.Add(uint8(i), uint8(i/2), uint8(i/3), uint8(i/5), uint8(i/7), uint8(i), int64(i)*7_777_777, i%3 != 0)
	}
	// Each zone around its transitions with the expressions most likely to break.
	for z := range fuzzZones {
		for _, m := range []uint8{0, 3, 9} {
			for _, h := range []uint8{0, 1, 2} {
				f.Add(m, h, uint8(0), uint8(0), uint8(0), uint8(z), int64(z*1000+int(m)*10+int(h))*3_600, true)
			}
		}
	}
	f.Fuzz(func(t *testing.T, mi, hi, di, moi, dwi, zi uint8, at int64, nearTransition bool) {
		hour := fuzzHours[int(hi)%len(fuzzHours)]
		expr := fmt.Sprintf("%s %s %s %s %s", fuzzMinutes[int(mi)%len(fuzzMinutes)], hour.text,
			fuzzDays[int(di)%len(fuzzDays)], fuzzMonths[int(moi)%len(fuzzMonths)], fuzzWeekdays[int(dwi)%len(fuzzWeekdays)])
		zone := fuzzZones[int(zi)%len(fuzzZones)]
		loc, err := time.LoadLocation(zone)
		require.NoError(t, err)
		after := fuzzInstant(loc, at, nearTransition)

		o := newFireOracle(t, expr, hour.all, loc)
		spec, err := Compile(models.Spec{CronExpressions: []string{expr}, Timezone: zone})
		var verr *Error
		if errors.As(err, &verr) && verr.NeverFires {
			// Some combinations (31 April) match no date; cronexpr must agree.
			require.True(t, o.expr.Next(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero(), expr)
			return
		}
		require.NoError(t, err, expr)

		next, ok := spec.Next(after)
		want, wantOK := o.firstAfter(after, after.Add(fuzzWindow))
		if wantOK {
			require.True(t, ok, "%q in %s after %s: Next says never, oracle says %s", expr, zone, after, want)
			require.Equal(t, want.Format(time.RFC3339), next.Format(time.RFC3339),
				"%q in %s after %s (local %s)", expr, zone, after, after.In(loc))
		} else if ok {
			require.True(t, next.After(after.Add(fuzzWindow)),
				"%q in %s after %s: Next %s is in the window but the oracle found no fire", expr, zone, after, next)
		}
		if !ok {
			return
		}
		require.True(t, next.After(after), "Next must be strictly after")
		require.Zero(t, next.Nanosecond(), "fires are whole seconds")
		require.True(t, o.fires(next), "%q in %s: %s (local %s) is not a fire", expr, zone, next, next.In(loc))
		if again, ok := spec.Next(next); ok {
			require.True(t, again.After(next), "%q in %s: Next(%s) = %s does not advance", expr, zone, next, again)
		}
	})
}

// fuzzInstant maps fuzz input to an instant in 2000–2059 (or near one of the
// zone's transitions then), with a random second so `after` is rarely on a fire.
func fuzzInstant(loc *time.Location, at int64, nearTransition bool) time.Time {
	const start, span = 946_684_800, 60 * 365 * 86_400 // 2000-01-01, ~60 years
	sec := start + (at%span+span)%span
	t := time.Unix(sec, 0).In(loc)
	if nearTransition {
		if _, end := t.ZoneBounds(); !end.IsZero() && end.Year() < 2100 {
			shift := (at%21_600+21_600)%21_600 - 10_800 // within 3h either side
			t = end.Add(time.Duration(shift) * time.Second)
		}
	}
	return t.UTC()
}

// fireOracle decides by brute force whether an instant is a fire time.
type fireOracle struct {
	expr   *cronexpr.Expression
	follow bool
	loc    *time.Location
}

func newFireOracle(t *testing.T, expr string, follow bool, loc *time.Location) *fireOracle {
	e, err := cronexpr.Parse(expr)
	require.NoError(t, err)
	return &fireOracle{expr: e, follow: follow, loc: loc}
}

// firstAfter steps real time minute by minute. Every zone in the pool has
// whole-minute offsets, so wall-clock minutes start on UTC minutes.
func (o *fireOracle) firstAfter(after, end time.Time) (time.Time, bool) {
	for m := after.Truncate(time.Minute).Add(time.Minute); !m.After(end); m = m.Add(time.Minute) {
		if o.fires(m) {
			return m, true
		}
	}
	return time.Time{}, false
}

// fires applies CONTRACT §3 literally to instant m:
//   - its wall time matches and this is its first occurrence (or any
//     occurrence, for an expression that follows real time); or
//   - it is where a matching wall time that does not exist (a spring-forward
//     gap) lands when read with the offset in force before the gap.
func (o *fireOracle) fires(m time.Time) bool {
	local := m.In(o.loc)
	wall := wallAsUTC(local)
	_, offset := local.Zone()
	start, _ := local.ZoneBounds()
	// Transitions only matter within a few hours of the period's start.
	recent := !start.IsZero() && m.Sub(start) < 3*time.Hour
	if o.matches(wall) && (o.follow || !recent || !o.seenEarlier(m, wall)) {
		return true
	}
	if !recent {
		return false
	}
	for d := 15 * time.Minute; d <= 3*time.Hour; d += 15 * time.Minute {
		_, before := m.Add(-d).In(o.loc).Zone()
		if before >= offset {
			continue
		}
		skipped := m.Add(time.Duration(before) * time.Second).UTC() // wall time read with the pre-gap offset
		if o.matches(skipped) && !o.exists(skipped, []int{before, offset}) {
			return true
		}
	}
	return false
}

func (o *fireOracle) matches(wall time.Time) bool {
	return o.expr.Next(wall.Add(-time.Second)).Equal(wall)
}

// seenEarlier reports whether the same wall time occurred shortly before m.
func (o *fireOracle) seenEarlier(m, wall time.Time) bool {
	for d := 15 * time.Minute; d <= 3*time.Hour; d += 15 * time.Minute {
		if wallAsUTC(m.Add(-d).In(o.loc)).Equal(wall) {
			return true
		}
	}
	return false
}

// exists reports whether some instant has this wall time under one of the offsets.
func (o *fireOracle) exists(wall time.Time, offsets []int) bool {
	for _, off := range offsets {
		if wallAsUTC(wall.Add(-time.Duration(off) * time.Second).In(o.loc)).Equal(wall) {
			return true
		}
	}
	return false
}

func wallAsUTC(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}
