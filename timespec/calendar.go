package timespec

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/models"
)

// Calendar bounds (CONTRACT §16).
const (
	MaxCalendarDates = 20000 // dates in one calendar
	MaxSpecCalendars = 16    // calendars one spec may list in exclude_calendars
)

// What a spec does with an occurrence whose local date a listed calendar
// holds (spec.on_excluded).
const (
	OnExcludedSkip         = "skip"
	OnExcludedPrevious     = "previous_business_day"
	OnExcludedNext         = "next_business_day"
	defaultWeekendBits     = 1<<time.Saturday | 1<<time.Sunday
	allWeekdays        int = 1<<7 - 1
)

// Statuses of a previewed occurrence.
const (
	StatusPlanned  = "planned"
	StatusExcluded = "excluded"
	StatusMoved    = "moved"
)

var weekdayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Calendar is a named set of local dates compiled for lookup: the days a
// spec that lists it does not fire on, and the weekend days its business-day
// moves step over. It is immutable; Compile keys its cache on Key, so a
// changed calendar compiles specs anew.
type Calendar struct {
	name    string
	days    []int32 // civil days since 1970-01-01, ascending, distinct
	weekend int     // bit per time.Weekday
	key     string
}

// NewCalendar validates and compiles a calendar's dates (YYYY-MM-DD) and
// weekend days ("sat", "sun", …; nil means Saturday and Sunday, an empty
// non-nil list means none). Problems come back as an *Error whose field keys
// are "dates[3]", "weekend[0]", "dates".
func NewCalendar(name string, dates, weekend []string) (*Calendar, error) {
	verr := &Error{}
	if len(dates) > MaxCalendarDates {
		verr.add("dates", fmt.Sprintf("a calendar may hold at most %d dates (this one has %d)", MaxCalendarDates, len(dates)))
		return nil, verr
	}
	days := make([]int32, 0, len(dates))
	for i, text := range dates {
		d, why := ParseDate(text)
		if why != "" {
			verr.add(fmt.Sprintf("dates[%d]", i), why)
			continue
		}
		days = append(days, d)
	}
	slices.Sort(days)
	days = slices.Compact(days)
	bits := defaultWeekendBits
	if weekend != nil {
		bits = 0
		if len(weekend) > 7 {
			verr.add("weekend", "a week has seven days; list each weekend day once")
		}
		for i, name := range weekend {
			if i >= 7 {
				break
			}
			day, ok := parseWeekday(name)
			if !ok {
				verr.add(fmt.Sprintf("weekend[%d]", i), fmt.Sprintf("%q is not a weekday; use sun, mon, tue, wed, thu, fri or sat", name))
				continue
			}
			bits |= 1 << day
		}
	}
	if len(verr.Fields) > 0 {
		return nil, verr
	}
	c := &Calendar{name: name, days: days, weekend: bits}
	c.key = c.fingerprint()
	return c, nil
}

// ParseDate reads one YYYY-MM-DD date into a civil day number; why is the
// message for its field when it cannot.
func ParseDate(text string) (int32, string) {
	t, err := time.Parse(time.DateOnly, strings.TrimSpace(text))
	if err != nil || len(strings.TrimSpace(text)) != len(time.DateOnly) {
		return 0, fmt.Sprintf("%q is not a date; write YYYY-MM-DD, e.g. 2026-12-25", text)
	}
	return int32(floorDiv(t.Unix(), 86400)), ""
}

// FormatDay is the YYYY-MM-DD form of a civil day number.
func FormatDay(d int32) string {
	return time.Unix(int64(d)*86400, 0).UTC().Format(time.DateOnly)
}

func parseWeekday(name string) (time.Weekday, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	for i, w := range weekdayNames {
		if n == w || (len(n) > 3 && strings.HasPrefix(strings.ToLower(time.Weekday(i).String()), n)) {
			return time.Weekday(i), true
		}
	}
	return 0, false
}

// Name is the calendar's name.
func (c *Calendar) Name() string { return c.name }

// Key identifies the calendar's content: two calendars with the same name,
// dates and weekend have the same key.
func (c *Calendar) Key() string { return c.key }

// Dates are the calendar's dates, ascending, each once, as YYYY-MM-DD.
func (c *Calendar) Dates() []string {
	out := make([]string, len(c.days))
	for i, d := range c.days {
		out[i] = FormatDay(d)
	}
	return out
}

// Weekend names the weekend days, Sunday first ("sat", "sun" → ["sun", "sat"]
// in week order; the service stores them as written).
func (c *Calendar) Weekend() []string {
	out := []string{}
	for i, w := range weekdayNames {
		if c.weekend&(1<<i) != 0 {
			out = append(out, w)
		}
	}
	return out
}

// Holds reports whether the calendar lists civil day d.
func (c *Calendar) Holds(d int32) bool {
	_, ok := slices.BinarySearch(c.days, d)
	return ok
}

func (c *Calendar) fingerprint() string {
	h := sha256.New()
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(len(c.name)))
	h.Write(buf[:])
	h.Write([]byte(c.name))
	binary.LittleEndian.PutUint64(buf[:], uint64(c.weekend))
	h.Write(buf[:])
	for _, d := range c.days {
		binary.LittleEndian.PutUint32(buf[:4], uint32(d))
		h.Write(buf[:4])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// compileCalendars reads exclude_calendars and on_excluded into c, looking
// each name up among the calendars Compile was given.
func compileCalendars(c *CompiledSpec, names []string, onExcluded string, given []*Calendar, verr *Error) {
	switch strings.TrimSpace(onExcluded) {
	case "", OnExcludedSkip:
	case OnExcludedPrevious:
		c.move = -1
	case OnExcludedNext:
		c.move = 1
	default:
		verr.add("on_excluded", fmt.Sprintf("%q is not skip, previous_business_day or next_business_day", onExcluded))
	}
	if len(names) > MaxSpecCalendars {
		verr.add("exclude_calendars", fmt.Sprintf("a spec may list at most %d calendars (this one lists %d)", MaxSpecCalendars, len(names)))
		return
	}
	seen := map[string]bool{}
	for i, name := range names {
		field := fmt.Sprintf("exclude_calendars[%d]", i)
		if seen[name] {
			verr.add(field, fmt.Sprintf("calendar %q is listed twice", name))
			continue
		}
		seen[name] = true
		var found *Calendar
		for _, cal := range given {
			if cal != nil && cal.name == name {
				found = cal
				break
			}
		}
		if found == nil {
			verr.add(field, fmt.Sprintf("unknown calendar %q; create it first (tideline calendar add %s)", name, name))
			continue
		}
		c.cals = append(c.cals, found)
		c.weekend |= found.weekend
	}
	if c.move != 0 && len(c.cals) > 0 && c.weekend == allWeekdays {
		verr.add("on_excluded", "the listed calendars' weekends cover every day of the week, so no day is a business day to move to")
	}
}

// excluded returns the first listed calendar holding civil day d.
func (c *CompiledSpec) excluded(d int32) (*Calendar, bool) {
	for _, cal := range c.cals {
		if cal.Holds(d) {
			return cal, true
		}
	}
	return nil, false
}

// business: not a weekend day of any listed calendar, and in none of them.
func (c *CompiledSpec) business(d int32) bool {
	if c.weekend&(1<<weekdayOf(d)) != 0 {
		return false
	}
	_, ex := c.excluded(d)
	return !ex
}

// weekdayOf civil day d (1970-01-01 was a Thursday).
func weekdayOf(d int32) int {
	return int(((int64(d)+4)%7 + 7) % 7)
}

// dayOf is the local civil day of instant t.
func dayOf(z *zoneCursor, t int64) int32 {
	return int32(floorDiv(t+z.at(t).offset, 86400))
}

// wallInstant resolves wall seconds by the DST rules (§3): a time in a gap
// shifts later by the gap, a repeated time is its first pass.
func wallInstant(z *zoneCursor, ws int64) int64 {
	first, _, _ := z.resolve(ws)
	return first
}

// dayStart is the first instant of civil day d in the zone.
func dayStart(z *zoneCursor, d int32) int64 { return wallInstant(z, int64(d)*86400) }

// occurrence is one fire a calendar-aware spec makes: at, and the raw
// occurrence it stands for (from == at unless moved), with the calendar
// that moved it.
type occurrence struct {
	at, from int64
	cal      *Calendar
}

// maxCalendarScan bounds the days one calendar-aware Next looks at: a run of
// excluded days is at most every date of every listed calendar.
const maxCalendarScan = MaxSpecCalendars*MaxCalendarDates + 1000

// nextEffective is next for a spec that lists calendars.
func (c *CompiledSpec) nextEffective(z *zoneCursor, after int64) (occurrence, bool) {
	if after >= c.end {
		return occurrence{}, false
	}
	after = max(after, MinUnix)
	if c.move == 0 {
		// skip: drop the occurrences of listed dates, a whole day at a time.
		cursor := after
		for range maxCalendarScan {
			r, _, ok := c.nextRaw(z, cursor, false)
			if !ok {
				return occurrence{}, false
			}
			d := dayOf(z, r)
			if _, ex := c.excluded(d); !ex {
				return occurrence{at: r, from: r}, true
			}
			cursor = max(r, dayStart(z, d+1)-1)
		}
		return occurrence{}, false
	}

	// Moves: walk the local days from after's on. A day's fires are its own
	// occurrences (unless a calendar lists it) and, on a business day, those
	// of the listed days moved onto it, so the first day with a fire later
	// than after holds the answer.
	x := dayOf(z, max(after, c.start-1))
	pending := !c.business(x) // next_business_day: moves from before x may still land ahead
	for range maxCalendarScan {
		if o, ok := c.dayBest(z, x, after); ok {
			return o, true
		}
		_, exX := c.excluded(x)
		if c.business(x) {
			pending = false
		} else if exX {
			if r, _, ok := c.nextRaw(z, dayStart(z, x)-1, false); ok && r < dayStart(z, x+1) {
				pending = true
			}
		}
		cand, have := int32(0), false
		if r, _, ok := c.nextRaw(z, max(after, dayStart(z, x+1)-1), false); ok {
			d := dayOf(z, r)
			cand, have = d, true
			// previous_business_day: the fires of the listed days of the
			// run of non-business days holding d land on the business day
			// before the run, which comes first. For next_business_day the
			// day itself is visited (a listed one holds nothing but makes
			// its moves pending), as a weekend day between it and its
			// target keeps its own fires.
			if c.move < 0 && !c.business(d) {
				if b, ok := c.stepBusiness(d, c.move); ok {
					cand = b
				} else {
					have = false
				}
			}
		}
		if c.move > 0 && pending {
			if b, ok := c.stepBusiness(x, 1); ok && (!have || b < cand) {
				cand, have = b, true
			}
		}
		if !have {
			return occurrence{}, false
		}
		x = max(cand, x+1)
	}
	return occurrence{}, false
}

// stepBusiness is the first business day after d (dir 1) or before it (-1).
func (c *CompiledSpec) stepBusiness(d int32, dir int) (int32, bool) {
	for range maxCalendarScan {
		d += int32(dir)
		if c.business(d) {
			return d, true
		}
	}
	return 0, false
}

// dayBest is the earliest fire on civil day x later than after: x's own first
// occurrence after after, unless x is listed, and on a business day the
// occurrences of the listed days whose move lands on x (the days before x back
// to the previous business day for next_business_day, those after x for
// previous_business_day), each at its own wall time on x.
func (c *CompiledSpec) dayBest(z *zoneCursor, x int32, after int64) (occurrence, bool) {
	start, end := dayStart(z, x), dayStart(z, x+1)
	if end-1 <= after {
		return occurrence{}, false
	}
	var best occurrence
	found := false
	if _, ex := c.excluded(x); !ex {
		if r, _, ok := c.nextRaw(z, max(after, start-1), false); ok && r < end {
			best, found = occurrence{at: r, from: r}, true
		}
	}
	if !c.business(x) {
		return best, found
	}
	// On a day without a transition wall time maps to instants in order, so
	// a source day's first mapped fire after after is its best; on a DST day
	// look a little further (transitions are at most a few hours).
	uniform := end-start == 86400 && z.at(start).offset == z.at(end-1).offset
	const dstSlack = 3 * 3600
	fromTod := int64(0)
	if after >= start {
		fromTod = max(0, after+z.at(after).offset-int64(x)*86400-dstSlack)
	}
	s := x
	for range maxCalendarScan {
		s -= int32(c.move)
		if c.business(s) {
			break
		}
		cal, ex := c.excluded(s)
		if !ex {
			continue // a weekend day: its own fires stand, and the run goes on
		}
		sEnd := dayStart(z, s+1)
		cursor := wallInstant(z, int64(s)*86400+fromTod) - 1
		stopTod := int64(86400)
		for range 200_000 {
			r, w, ok := c.nextRaw(z, cursor, true)
			if !ok || r >= sEnd {
				break
			}
			cursor = r
			tod := floorMod(w, 86400)
			if tod > stopTod {
				break
			}
			e := wallInstant(z, int64(x)*86400+tod)
			if e <= after || e < c.start || e > c.end {
				continue
			}
			if !found || e < best.at {
				best, found = occurrence{at: e, from: r, cal: cal}, true
			}
			if uniform {
				break
			}
			stopTod = min(stopTod, tod+dstSlack)
		}
	}
	return best, found
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// Occurrence is one previewed fire with what a calendar did to it: planned
// (fires as the spec says), excluded (a listed calendar holds its date and
// on_excluded is skip; it does not fire) or moved (fires at At instead of
// MovedFrom).
type Occurrence struct {
	At        time.Time
	Status    string
	Calendar  string    // the calendar that excluded or moved it
	MovedFrom time.Time // zero unless moved
}

// Explain lists up to n occurrences strictly after `after` with their
// status: the fires Preview returns, and in skip mode the excluded
// occurrences between them.
func (c *CompiledSpec) Explain(after time.Time, n int) []Occurrence {
	out := make([]Occurrence, 0, min(max(n, 0), 1000))
	z := newZoneCursor(c.loc)
	cursor := after.Unix()
	for len(out) < n {
		if len(c.cals) == 0 {
			at, ok := c.next(z, cursor)
			if !ok {
				break
			}
			out = append(out, Occurrence{At: time.Unix(at, 0).UTC(), Status: StatusPlanned})
			cursor = at
			continue
		}
		if c.move == 0 {
			r, _, ok := c.nextRaw(z, cursor, false)
			if !ok {
				break
			}
			o := Occurrence{At: time.Unix(r, 0).UTC(), Status: StatusPlanned}
			if cal, ex := c.excluded(dayOf(z, r)); ex {
				o.Status, o.Calendar = StatusExcluded, cal.name
			}
			out = append(out, o)
			cursor = r
			continue
		}
		e, ok := c.nextEffective(z, cursor)
		if !ok {
			break
		}
		o := Occurrence{At: time.Unix(e.at, 0).UTC(), Status: StatusPlanned}
		if e.from != e.at {
			o.Status, o.Calendar, o.MovedFrom = StatusMoved, e.cal.name, time.Unix(e.from, 0).UTC()
		}
		out = append(out, o)
		cursor = e.at
	}
	return out
}

// CompileForText compiles spec for its description and zone only: the
// calendars it lists stand in empty, so the description names them and no
// calendar is read. Its times ignore the calendars; never fire from it.
func CompileForText(spec models.Spec) (*CompiledSpec, error) {
	var stand []*Calendar
	for _, name := range spec.ExcludeCalendars {
		stand = append(stand, &Calendar{name: name, weekend: defaultWeekendBits, key: "text-only"})
	}
	return Compile(spec, stand...)
}

// Calendars names the calendars the spec lists, in its order.
func (c *CompiledSpec) Calendars() []string {
	out := make([]string, len(c.cals))
	for i, cal := range c.cals {
		out[i] = cal.name
	}
	return out
}

// ExcludedBy says which listed calendar holds the local date of instant t
// (empty when none does): the ledger's "excluded" fate.
func (c *CompiledSpec) ExcludedBy(t time.Time) string {
	if len(c.cals) == 0 {
		return ""
	}
	if cal, ex := c.excluded(dayOf(newZoneCursor(c.loc), t.Unix())); ex {
		return cal.name
	}
	return ""
}

// describeCalendars is the describer's clause: "except days in
// us-bank-holidays", "(moved to the next business day)".
func describeCalendars(c *CompiledSpec) string {
	if len(c.cals) == 0 {
		return ""
	}
	s := "except days in " + strings.Join(c.Calendars(), ", ")
	switch c.move {
	case -1:
		s += " (moved to the previous business day)"
	case 1:
		s += " (moved to the next business day)"
	}
	return s
}

// Excluded is an occurrence of the spec that a listed calendar took away
// from its time: skipped (MovedTo zero) or moved to MovedTo.
type Excluded struct {
	At       time.Time
	Calendar string
	MovedTo  time.Time
}

// ExcludedBetween lists up to limit occurrences in [from, to) whose local
// date a listed calendar holds, with where each was moved (the ledger's
// excluded and moved fates). It walks only the listed dates.
func (c *CompiledSpec) ExcludedBetween(from, to time.Time, limit int) []Excluded {
	out := []Excluded{}
	if len(c.cals) == 0 || !from.Before(to) {
		return out
	}
	z := newZoneCursor(c.loc)
	cursor := from.Unix() - 1
	if from.Nanosecond() > 0 {
		cursor++
	}
	end := to.Unix()
	for range maxCalendarScan {
		if len(out) >= limit {
			break
		}
		r, w, ok := c.nextRaw(z, cursor, true)
		if !ok || r >= end {
			break
		}
		d := dayOf(z, r)
		cal, ex := c.excluded(d)
		if !ex {
			nd, ok := c.nextListedDay(d + 1)
			if !ok {
				break
			}
			cursor = max(r, dayStart(z, nd)-1)
			continue
		}
		e := Excluded{At: time.Unix(r, 0).UTC(), Calendar: cal.name}
		if c.move != 0 {
			if target, ok := c.stepBusiness(d, c.move); ok {
				if at := wallInstant(z, int64(target)*86400+floorMod(w, 86400)); at >= c.start && at <= c.end {
					e.MovedTo = time.Unix(at, 0).UTC()
				}
			}
		}
		out = append(out, e)
		cursor = r
	}
	return out
}

// nextListedDay is the first civil day at or after d that a listed
// calendar holds.
func (c *CompiledSpec) nextListedDay(d int32) (int32, bool) {
	best, found := int32(0), false
	for _, cal := range c.cals {
		i, _ := slices.BinarySearch(cal.days, d)
		if i < len(cal.days) && (!found || cal.days[i] < best) {
			best, found = cal.days[i], true
		}
	}
	return best, found
}

// MovedFrom says whether the fire at t is an occurrence a calendar moved
// there, and from when and by which calendar.
func (c *CompiledSpec) MovedFrom(t time.Time) (from time.Time, calendar string, moved bool) {
	if len(c.cals) == 0 || c.move == 0 {
		return time.Time{}, "", false
	}
	o, ok := c.nextEffective(newZoneCursor(c.loc), t.Unix()-1)
	if !ok || o.at != t.Unix() || o.from == o.at {
		return time.Time{}, "", false
	}
	return time.Unix(o.from, 0).UTC(), o.cal.name, true
}
