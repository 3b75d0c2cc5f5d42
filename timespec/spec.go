package timespec

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidelinehq/tideline/models"
)

// ErrTooManyOccurrences is returned by Between when the range holds more
// occurrences than the caller allows; the backfill use case maps it to
// backfill_too_large.
var ErrTooManyOccurrences = errors.New("too many occurrences")

// Unix seconds of 0001-01-01 and 9999-12-31T23:59:59Z: the instants Next works
// with. Clamping keeps interval arithmetic far from int64 overflow.
const (
	MinUnix = -62135596800
	MaxUnix = 253402300799
)

// CompiledSpec is a validated schedule spec that computes fire times. It is
// pure (no clock, no I/O) and safe for concurrent use.
//
// DST (CONTRACT §3), for cron expressions evaluated in the spec's timezone:
//   - a wall time skipped by a spring-forward gap fires once, shifted later by
//     the gap (02:30 in New York on 2026-03-08 fires at 03:30 EDT);
//   - a wall time repeated by a fall-back fires once, at its first occurrence,
//     unless the expression's hour field selects all 24 hours ("*", "*/1",
//     "0-23", @hourly): such an expression follows real elapsed time and fires
//     in both passes of the repeated hour;
//   - cron evaluation covers years up to 2099 (cronexpr's calendar); after
//     that a cron part never fires. Intervals have no such horizon.
//
// A compiled spec is shared: Compile returns the same one for the same
// spec content (see specCache), so nothing may change it after Compile.
type CompiledSpec struct {
	loc       *time.Location
	zone      string // the spec's timezone as written, for the description
	crons     []*cronPart
	intervals []intervalPart
	at        []int64 // one-off instants, Unix seconds, ascending, distinct

	// start and end bound every part, inclusive (CONTRACT §16); MinUnix
	// and MaxUnix when the spec sets none.
	start, end int64
	// startText and endText are the bounds as written, for the description.
	startText, endText string

	// cals are the calendars of spec.exclude_calendars, in spec order
	// (CONTRACT §16); move is on_excluded: 0 skip, -1 previous and 1 next
	// business day; weekend is the union of the calendars' weekend days.
	cals    []*Calendar
	move    int
	weekend int

	// The description is built on first use: the tick compiles a spec
	// per fire and never shows one.
	describe    sync.Once
	description string
	text        SpecText
}

// intervalPart fires at Unix epoch + offset + k·every, whole seconds.
type intervalPart struct {
	every, offset int64
}

// Compile validates spec and compiles it. Validation problems come back as
// an *Error whose field keys are relative to the spec ("cron_expressions[0]",
// "intervals[1].every", "timezone"); NeverFires marks a spec that is
// well-formed but can never fire. A spec compiled before (by content) is
// not compiled again: the result is pure, so the same one is returned.
//
// calendars are the calendars spec.exclude_calendars may name (more may be
// given; the unlisted ones are ignored). A listed name missing from them is
// an error on its field, so a path that forgets to pass them fails loudly
// rather than fire on a holiday. The cache key holds each listed calendar's
// content key, so a changed calendar compiles anew.
func Compile(spec models.Spec, calendars ...*Calendar) (*CompiledSpec, error) {
	if len(spec.CronExpressions)+len(spec.Intervals) > MaxSpecParts || len(spec.At) > MaxSpecAt || len(spec.ExcludeCalendars) > MaxSpecCalendars {
		return compile(spec, calendars) // refused by size; not worth a key
	}
	key := specKey(spec, calendars)
	if c, ok := specs.get(key); ok {
		return c, nil
	}
	c, err := compile(spec, calendars)
	if err == nil {
		specs.put(key, c)
	}
	return c, err
}

func compile(spec models.Spec, calendars []*Calendar) (*CompiledSpec, error) {
	verr := &Error{}
	if len(spec.CronExpressions) == 0 && len(spec.Intervals) == 0 && len(spec.At) == 0 {
		verr.add("cron_expressions", "add at least one cron expression, interval or at time")
		return nil, verr
	}
	if checkSpecSize(verr, spec) {
		return nil, verr
	}

	loc, why := loadZone(spec.Timezone)
	if why != "" {
		verr.add("timezone", why)
	}

	c := &CompiledSpec{loc: loc, zone: spec.Timezone, start: MinUnix, end: MaxUnix}
	compileBounds(c, spec, verr)
	var never []string
	for i, source := range spec.CronExpressions {
		field := fmt.Sprintf("cron_expressions[%d]", i)
		part, why := compileCron(source)
		if why != "" {
			verr.add(field, why)
			continue
		}
		if !part.firesAtAll() {
			verr.add(field, fmt.Sprintf("%q never fires: no calendar date matches its day-of-month, month and day-of-week fields", source))
			never = append(never, field)
			continue
		}
		c.crons = append(c.crons, part)
	}
	for i, iv := range spec.Intervals {
		part, ok := compileInterval(iv, fmt.Sprintf("intervals[%d]", i), verr)
		if ok {
			c.intervals = append(c.intervals, part)
		}
	}
	compileAt(c, spec.At, verr)
	compileCalendars(c, spec.ExcludeCalendars, spec.OnExcluded, calendars, verr)
	if len(verr.Fields) > 0 {
		if len(never) == len(verr.Fields) {
			verr.NeverFires = true
		}
		return nil, verr
	}
	return c, nil
}

// Bounds on one spec. Every path that turns user input into fire times
// (create, update, API and console previews, the tick) compiles through
// Compile, so this is the one place a spec's cost is capped: without it a
// viewer's preview of 76,000 expressions took seconds and hundreds of MB.
// Real schedules use a handful of parts; 64 leaves ample room.
const (
	MaxSpecParts      = 64   // cron expressions and intervals together
	MaxSpecPartLength = 256  // characters in one expression, every, offset or timezone
	MaxSpecAt         = 1000 // one-off instants in spec.at (CONTRACT §16)
)

// checkSpecSize files the size problems of spec in verr, before any part is
// parsed, and reports whether there were any.
func checkSpecSize(verr *Error, spec models.Spec) bool {
	if n := len(spec.CronExpressions) + len(spec.Intervals); n > MaxSpecParts {
		verr.add("cron_expressions", fmt.Sprintf("a spec may have at most %d cron expressions and intervals together (this one has %d)", MaxSpecParts, n))
		return true
	}
	if n := len(spec.At); n > MaxSpecAt {
		verr.add("at", fmt.Sprintf("a spec may have at most %d at times (this one has %d)", MaxSpecAt, n))
		return true
	}
	tooLong := func(field, value string) {
		if utf8.RuneCountInString(value) > MaxSpecPartLength {
			verr.add(field, fmt.Sprintf("is longer than %d characters", MaxSpecPartLength))
		}
	}
	for i, source := range spec.CronExpressions {
		tooLong(fmt.Sprintf("cron_expressions[%d]", i), source)
	}
	for i, iv := range spec.Intervals {
		tooLong(fmt.Sprintf("intervals[%d].every", i), iv.Every)
		tooLong(fmt.Sprintf("intervals[%d].offset", i), iv.Offset)
	}
	for i, at := range spec.At {
		tooLong(fmt.Sprintf("at[%d]", i), at)
	}
	for i, name := range spec.ExcludeCalendars {
		tooLong(fmt.Sprintf("exclude_calendars[%d]", i), name)
	}
	tooLong("on_excluded", spec.OnExcluded)
	tooLong("timezone", spec.Timezone)
	tooLong("start_at", spec.StartAt)
	tooLong("end_at", spec.EndAt)
	return len(verr.Fields) > 0
}

// zones holds the locations loaded so far, by name.
var zones sync.Map

// loadZone resolves an IANA name; empty means UTC.
func loadZone(name string) (*time.Location, string) {
	switch name {
	case "", "UTC":
		return time.UTC, ""
	case "Local":
		return time.UTC, `"Local" depends on the server's settings; use an IANA name such as America/New_York`
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), ""
	}
	// time.LoadLocation reads and parses the zone file on every call.
	// Only names that load are kept, so the map holds at most the few
	// hundred IANA zones, whatever names clients send.
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC, fmt.Sprintf("unknown timezone %q; use an IANA name such as America/New_York or UTC", name)
	}
	zones.Store(name, loc)
	return loc, ""
}

func compileInterval(iv models.Interval, field string, verr *Error) (intervalPart, bool) {
	ok := true
	every, err := parseSpecDuration(iv.Every)
	switch {
	case strings.TrimSpace(iv.Every) == "":
		verr.add(field+".every", "every is required, e.g. PT1H")
		ok = false
	case err != nil:
		verr.add(field+".every", err.Error())
		ok = false
	case every <= 0:
		verr.add(field+".every", fmt.Sprintf("%s is zero; every must be at least one second", iv.Every))
		ok = false
	}
	var offset time.Duration
	if strings.TrimSpace(iv.Offset) != "" {
		offset, err = parseSpecDuration(iv.Offset)
		if err != nil {
			verr.add(field+".offset", err.Error())
			ok = false
		} else if ok && offset >= every {
			verr.add(field+".offset", fmt.Sprintf("offset %s must be shorter than every (%s)", iv.Offset, iv.Every))
			ok = false
		}
	}
	return intervalPart{every: int64(every / time.Second), offset: int64(offset / time.Second)}, ok
}

// parseSpecDuration accepts only the ISO-8601 form CONTRACT §3 stores; for a human
// form it names the ISO spelling, so the fix is obvious.
func parseSpecDuration(s string) (time.Duration, error) {
	text := strings.TrimSpace(s)
	if strings.HasPrefix(text, "P") || strings.HasPrefix(text, "p") || strings.HasPrefix(text, "-") {
		return ParseDuration(text)
	}
	if d, err := ParseDuration(text); err == nil {
		return 0, fmt.Errorf("%q is not an ISO-8601 duration; write %s", s, FormatISODuration(d))
	}
	return 0, fmt.Errorf("%q is not an ISO-8601 duration; use fixed units such as PT30M, PT1H, P1D or P1W", s)
}

func (p intervalPart) next(after int64) int64 {
	return p.offset + (floorDiv(after-p.offset, p.every)+1)*p.every
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Next returns the earliest fire of any part strictly after `after`, in UTC
// and whole seconds; false means the spec never fires again.
func (c *CompiledSpec) Next(after time.Time) (time.Time, bool) {
	at, ok := c.next(newZoneCursor(c.loc), after.Unix())
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(at, 0).UTC(), true
}

// next works in Unix seconds: fires are whole seconds, so "strictly after t"
// equals "strictly after floor(t)", and the sub-second part can be dropped.
// A spec without calendars (nearly all of them) takes the first branch only.
func (c *CompiledSpec) next(z *zoneCursor, after int64) (int64, bool) {
	if len(c.cals) == 0 {
		at, _, ok := c.nextRaw(z, after, false)
		return at, ok
	}
	o, ok := c.nextEffective(z, after)
	return o.at, ok
}

// nextRaw is the spec's next occurrence before any calendar applies; with
// wantWall it also returns the wall seconds the occurrence stands for (see
// cronPart.nextWithWall), which only a calendar move needs.
func (c *CompiledSpec) nextRaw(z *zoneCursor, after int64, wantWall bool) (int64, int64, bool) {
	if after >= c.end {
		return 0, 0, false
	}
	after = max(after, MinUnix)
	if c.start > MinUnix {
		// Nothing fires before start_at: search from the second before it.
		after = max(after, c.start-1)
	}
	var best, wall int64
	found, cronWall := false, false
	for _, p := range c.crons {
		if wantWall {
			if at, w, ok := p.nextWithWall(z, after); ok && (!found || at < best) {
				best, wall, found, cronWall = at, w, true, true
			}
		} else if at, ok := p.next(z, after); ok && (!found || at < best) {
			best, found = at, true
		}
	}
	for _, p := range c.intervals {
		if at := p.next(after); !found || at < best {
			best, found, cronWall = at, true, false
		}
	}
	if i := sort.Search(len(c.at), func(i int) bool { return c.at[i] > after }); i < len(c.at) && (!found || c.at[i] < best) {
		best, found, cronWall = c.at[i], true, false
	}
	// Instants past 9999-12-31 have no RFC 3339 form (and no real use);
	// past end_at the spec has ended.
	if found && best > c.end {
		return 0, 0, false
	}
	if found && wantWall && !cronWall {
		wall = best + z.at(best).offset
	}
	return best, wall, found
}

// Between lists the canonical occurrences in [from, to), ascending, with an
// instant produced by several parts listed once. More than limit occurrences
// is an ErrTooManyOccurrences error, detected at occurrence limit+1 rather than
// after building the whole list. An empty or reversed range lists nothing.
func (c *CompiledSpec) Between(from, to time.Time, limit int) ([]time.Time, error) {
	out := []time.Time{}
	if !from.Before(to) {
		return out, nil
	}
	z := newZoneCursor(c.loc)
	// Fires are whole seconds, so the first one at or after `from` is the
	// first one strictly after the second before ceil(from).
	cursor := from.Unix() - 1
	if from.Nanosecond() > 0 {
		cursor++
	}
	for {
		at, ok := c.next(z, cursor)
		if !ok {
			return out, nil
		}
		t := time.Unix(at, 0).UTC()
		if !t.Before(to) {
			return out, nil
		}
		if len(out) >= limit {
			return nil, fmt.Errorf("list occurrences: more than %d between %s and %s: %w",
				limit, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), ErrTooManyOccurrences)
		}
		out = append(out, t)
		cursor = at
	}
}

// Preview returns up to n canonical fire times strictly after `after`; fewer
// when the spec stops firing.
func (c *CompiledSpec) Preview(after time.Time, n int) []time.Time {
	out := make([]time.Time, 0, min(max(n, 0), 1000)) // n is caller input: grow past a sane preallocation
	z := newZoneCursor(c.loc)
	cursor := after.Unix()
	for len(out) < n {
		at, ok := c.next(z, cursor)
		if !ok {
			break
		}
		out = append(out, time.Unix(at, 0).UTC())
		cursor = at
	}
	return out
}

// Description is a human summary, e.g. "At 02:30 every day (America/New_York)".
func (c *CompiledSpec) Description() string {
	c.described()
	return c.description
}

// Text is the description in parts, with the zone apart, for a view that
// names the zone once.
func (c *CompiledSpec) Text() SpecText {
	c.described()
	return c.text
}

func (c *CompiledSpec) described() {
	c.describe.Do(func() {
		c.text = describeSpec(c)
		c.description = c.text.String()
	})
}

// Location is the zone cron expressions are evaluated in (UTC when the spec
// names none).
func (c *CompiledSpec) Location() *time.Location { return c.loc }

// parseInstant reads one RFC 3339 instant of a spec (start_at, end_at, an
// at time) into Unix seconds; why is the field's message when it cannot.
// Fires are whole seconds (§3), so a fraction is refused rather than
// rounded: a silently moved instant would fire at a time nobody wrote.
func parseInstant(text string) (unix int64, why string) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(text))
	if err != nil {
		return 0, fmt.Sprintf("%q is not an RFC 3339 time; write e.g. 2026-12-24T18:00:00-05:00", text)
	}
	if t.Nanosecond() != 0 {
		return 0, fmt.Sprintf("%q has a fraction of a second; fire times are whole seconds", text)
	}
	u := t.Unix()
	if u < MinUnix || u > MaxUnix {
		return 0, fmt.Sprintf("%q is outside years 0001-9999", text)
	}
	return u, ""
}

// compileBounds reads start_at and end_at into c.
func compileBounds(c *CompiledSpec, spec models.Spec, verr *Error) {
	okStart, okEnd := false, false
	if strings.TrimSpace(spec.StartAt) != "" {
		u, why := parseInstant(spec.StartAt)
		if why != "" {
			verr.add("start_at", why)
		} else {
			c.start, c.startText, okStart = u, spec.StartAt, true
		}
	}
	if strings.TrimSpace(spec.EndAt) != "" {
		u, why := parseInstant(spec.EndAt)
		if why != "" {
			verr.add("end_at", why)
		} else {
			c.end, c.endText, okEnd = u, spec.EndAt, true
		}
	}
	if okStart && okEnd && c.end < c.start {
		verr.add("end_at", fmt.Sprintf("end_at %s is before start_at %s", spec.EndAt, spec.StartAt))
	}
}

// compileAt reads the one-off instants into c.at, sorted, each once.
func compileAt(c *CompiledSpec, at []string, verr *Error) {
	out := make([]int64, 0, len(at))
	for i, text := range at {
		u, why := parseInstant(text)
		if why != "" {
			verr.add(fmt.Sprintf("at[%d]", i), why)
			continue
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	c.at = out[:0]
	for i, u := range out {
		if i == 0 || u != out[i-1] {
			c.at = append(c.at, u)
		}
	}
}
