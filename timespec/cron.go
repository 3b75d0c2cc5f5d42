package timespec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorhill/cronexpr"
)

// maxCronScan bounds the wall-clock candidates one Next call may inspect. A
// minutely expression needs at most about twice the largest DST jump in
// minutes (a whole skipped day, as Samoa did in 2011, is 2·1440), so reaching
// the bound means something is wrong, not that the schedule is busy.
const maxCronScan = 10_000

// cronMacros are the @-shorthands CONTRACT §3 accepts, spelled as 5-field cron so
// that they go through the same validation, evaluation and description.
var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// cronFieldSpec describes one of the five positions of a cron expression.
type cronFieldSpec struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	minuteSpec = cronFieldSpec{name: "minute", min: 0, max: 59}
	hourSpec   = cronFieldSpec{name: "hour", min: 0, max: 23}
	domSpec    = cronFieldSpec{name: "day-of-month", min: 1, max: 31}
	monthSpec  = cronFieldSpec{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4,
		"may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8,
		"sep": 9, "september": 9, "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
	}}
	// Day-of-week accepts 7 for Sunday, as Vixie cron does; it is folded to 0.
	dowSpec = cronFieldSpec{name: "day-of-week", min: 0, max: 7, names: map[string]int{
		"sun": 0, "sunday": 0, "mon": 1, "monday": 1, "tue": 2, "tuesday": 2, "wed": 3, "wednesday": 3,
		"thu": 4, "thursday": 4, "fri": 5, "friday": 5, "sat": 6, "saturday": 6,
	}}
)

type cronEntryKind int

const (
	entryAll            cronEntryKind = iota // * or ?
	entryValue                               // 5
	entryRange                               // 1-5, 1-5/2, */15, 5/15
	entryLastDay                             // L (day-of-month)
	entryLastWeekday                         // LW (day-of-month)
	entryNearestWeekday                      // 15W (day-of-month)
	entryLastDayOfWeek                       // 5L (day-of-week): last Friday of the month
	entryNthDayOfWeek                        // 5#3 (day-of-week): third Friday of the month
)

// cronEntry is one comma-separated item of a field, kept structured so the
// describer can say "every 15 minutes" instead of listing four numbers.
type cronEntry struct {
	kind     cronEntryKind
	lo, hi   int
	step     int
	fromStar bool // "*/15" rather than "0-59/15"
	nth      int  // for entryNthDayOfWeek
}

type cronField struct {
	entries  []cronEntry
	wildcard bool  // exactly "*" or "?": unrestricted, which matters for the day-of-month/day-of-week OR rule
	values   []int // sorted distinct plain values selected by the field (specials excluded)
}

// cronExpr is a validated 5-field expression.
type cronExpr struct {
	source                        string // as the user typed it
	minute, hour, dom, month, dow cronField
}

// normalized spells the expression for cronexpr with explicit value lists, so
// that cronexpr never sees the inputs it mishandles (reversed ranges yield an
// empty list and an index panic; "5-7" in day-of-week yields nothing because 7
// is folded to 0 before the range is expanded).
func (e *cronExpr) normalized() string {
	return strings.Join([]string{
		e.minute.normalized(), e.hour.normalized(), e.dom.normalized(), e.month.normalized(), e.dow.normalized(),
	}, " ")
}

func (f cronField) normalized() string {
	if f.wildcard {
		return "*"
	}
	parts := make([]string, 0, len(f.values)+len(f.entries))
	for _, v := range f.values {
		parts = append(parts, strconv.Itoa(v))
	}
	for _, en := range f.entries {
		switch en.kind {
		case entryLastDay:
			parts = append(parts, "L")
		case entryLastWeekday:
			parts = append(parts, "LW")
		case entryNearestWeekday:
			parts = append(parts, strconv.Itoa(en.lo)+"W")
		case entryLastDayOfWeek:
			parts = append(parts, strconv.Itoa(en.lo)+"L")
		case entryNthDayOfWeek:
			parts = append(parts, fmt.Sprintf("%d#%d", en.lo, en.nth))
		}
	}
	return strings.Join(parts, ",")
}

// followsRealTime reports whether the expression fires in every hour. Such an
// expression is about elapsed time ("every 15 minutes"), so on a fall-back night
// it also fires in the repeated hour; one that names hours ("at 01:30") means
// a wall-clock time and fires once. Any spelling of "all 24 hours" counts —
// "*", "*/1", "0-23", @hourly — because the meaning, not the text, decides.
func (e *cronExpr) followsRealTime() bool {
	return len(e.hour.values) == 24
}

// parseCron validates one expression. The returned message is meant for the
// person who typed it: it quotes the expression and names the field and item.
func parseCron(source string) (*cronExpr, string) {
	text := strings.TrimSpace(source)
	if text == "" {
		return nil, "cron expression is empty; write 5 fields (minute hour day-of-month month day-of-week), e.g. \"0 2 * * *\""
	}
	if strings.HasPrefix(text, "@") {
		word := strings.ToLower(strings.Fields(text)[0])
		switch {
		case word == "@every":
			return nil, fmt.Sprintf("%q: @every is not supported in cron expressions; add an interval instead (e.g. every PT5M)", source)
		case word == "@reboot":
			return nil, fmt.Sprintf("%q: @reboot is not supported; a schedule fires at times, not when the server starts", source)
		}
		expanded, ok := cronMacros[word]
		if !ok {
			return nil, fmt.Sprintf("%q: unknown macro %s; use @yearly, @annually, @monthly, @weekly, @daily or @hourly", source, word)
		}
		if len(strings.Fields(text)) > 1 {
			return nil, fmt.Sprintf("%q: %s takes no further fields", source, word)
		}
		text = expanded
	}
	fields := strings.Fields(text)
	if len(fields) != 5 {
		word := "fields"
		if len(fields) == 1 {
			word = "field"
		}
		return nil, fmt.Sprintf("%q has %d %s; Tideline accepts standard 5-field cron (minute hour day-of-month month day-of-week)", source, len(fields), word)
	}
	e := &cronExpr{source: source}
	specs := []cronFieldSpec{minuteSpec, hourSpec, domSpec, monthSpec, dowSpec}
	targets := []*cronField{&e.minute, &e.hour, &e.dom, &e.month, &e.dow}
	for i, raw := range fields {
		f, why := parseCronField(raw, specs[i])
		if why != "" {
			return nil, fmt.Sprintf("%q: %s field %q: %s", source, specs[i].name, raw, why)
		}
		*targets[i] = f
	}
	return e, ""
}

func parseCronField(raw string, spec cronFieldSpec) (cronField, string) {
	text := strings.ToLower(raw)
	if text == "*" || text == "?" {
		if text == "?" && spec.name != domSpec.name && spec.name != dowSpec.name {
			return cronField{}, "? is only allowed in the day-of-month and day-of-week fields; use *"
		}
		f := cronField{wildcard: true, entries: []cronEntry{{kind: entryAll, lo: spec.min, hi: spec.max, step: 1}}}
		f.values = expandValues(f.entries, spec)
		return f, ""
	}
	for _, r := range text {
		if !strings.ContainsRune("0123456789abcdefghijklmnopqrstuvwxyz*?/,-#", r) {
			return cronField{}, fmt.Sprintf("unexpected character %q", r)
		}
	}
	var f cronField
	for item := range strings.SplitSeq(text, ",") {
		if item == "" {
			return cronField{}, "empty item in the comma-separated list"
		}
		en, why := parseCronEntry(item, spec)
		if why != "" {
			return cronField{}, why
		}
		f.entries = append(f.entries, en)
	}
	f.values = expandValues(f.entries, spec)
	return f, ""
}

func parseCronEntry(item string, spec cronFieldSpec) (cronEntry, string) {
	switch spec.name {
	case domSpec.name:
		switch {
		case item == "l":
			return cronEntry{kind: entryLastDay}, ""
		case item == "lw":
			return cronEntry{kind: entryLastWeekday}, ""
		case strings.HasSuffix(item, "w"):
			v, why := spec.value(strings.TrimSuffix(item, "w"))
			if why != "" {
				return cronEntry{}, "in " + strconv.Quote(item) + ": " + why + " (W means the weekday nearest a day, e.g. 15W)"
			}
			return cronEntry{kind: entryNearestWeekday, lo: v}, ""
		}
	case dowSpec.name:
		switch {
		case item == "l":
			return cronEntry{}, "L in the day-of-week field needs a day before it, e.g. 5L for the last Friday of the month"
		case strings.HasSuffix(item, "l"):
			v, why := spec.value(strings.TrimSuffix(item, "l"))
			if why != "" {
				return cronEntry{}, "in " + strconv.Quote(item) + ": " + why + " (5L means the last Friday of the month)"
			}
			return cronEntry{kind: entryLastDayOfWeek, lo: v % 7}, ""
		case strings.Contains(item, "#"):
			day, nth, _ := strings.Cut(item, "#")
			v, why := spec.value(day)
			if why != "" {
				return cronEntry{}, "in " + strconv.Quote(item) + ": " + why + " (5#3 means the third Friday of the month)"
			}
			n, err := strconv.Atoi(nth)
			if err != nil || n < 1 || n > 5 {
				return cronEntry{}, fmt.Sprintf("in %q: the number after # must be 1 to 5 (which occurrence in the month)", item)
			}
			return cronEntry{kind: entryNthDayOfWeek, lo: v % 7, nth: n}, ""
		}
	}

	base, stepText, hasStep := strings.Cut(item, "/")
	step := 1
	if hasStep {
		n, err := strconv.Atoi(stepText)
		span := spec.max - spec.min
		if spec.name == dowSpec.name {
			span = 6 // 7 is only another name for Sunday
		}
		if err != nil || n < 1 || n > span {
			return cronEntry{}, fmt.Sprintf("step %q in %q must be a whole number from 1 to %d", stepText, item, span)
		}
		step = n
	}
	if base == "*" || base == "?" {
		if !hasStep {
			return cronEntry{}, fmt.Sprintf("%q cannot be combined with other items; use it alone", base)
		}
		hi := spec.max
		if spec.name == dowSpec.name {
			hi = 6
		}
		return cronEntry{kind: entryRange, lo: spec.min, hi: hi, step: step, fromStar: true}, ""
	}
	if strings.ContainsAny(base, "*?") {
		return cronEntry{}, fmt.Sprintf("cannot read %q; * stands alone or as */n", item)
	}
	loText, hiText, isRange := strings.Cut(base, "-")
	lo, why := spec.value(loText)
	if why != "" {
		return cronEntry{}, why
	}
	if !isRange {
		if hasStep {
			// "5/15" means from 5 to the end of the range every 15, as in Quartz and cronexpr.
			hi := spec.max
			if spec.name == dowSpec.name {
				hi = 6
			}
			return cronEntry{kind: entryRange, lo: lo, hi: hi, step: step}, ""
		}
		return cronEntry{kind: entryValue, lo: lo}, ""
	}
	hi, why := spec.value(hiText)
	if why != "" {
		return cronEntry{}, why
	}
	if spec.name == dowSpec.name && hi == 0 && lo > 0 {
		hi = 7 // "fri-sun" means Friday through Sunday
	}
	if lo > hi {
		return cronEntry{}, fmt.Sprintf("range %q runs backwards; write it from low to high or split it (e.g. %d-%d,%d-%d)",
			base, lo, spec.max, spec.min, hi)
	}
	return cronEntry{kind: entryRange, lo: lo, hi: hi, step: step}, ""
}

// value reads one number or name and checks its range.
func (s cronFieldSpec) value(text string) (int, string) {
	if text == "" {
		return 0, "a number is missing"
	}
	if v, ok := s.names[text]; ok {
		return v, ""
	}
	if strings.Trim(text, "0123456789") != "" {
		if s.names != nil {
			return 0, fmt.Sprintf("cannot read %q; use a number from %d to %d or a name such as %s", text, s.min, s.max, s.example())
		}
		return 0, fmt.Sprintf("cannot read %q; use a number from %d to %d", text, s.min, s.max)
	}
	v, err := strconv.Atoi(text)
	if err != nil || v < s.min || v > s.max {
		return 0, fmt.Sprintf("%s is outside %d-%d", text, s.min, s.max)
	}
	return v, ""
}

func (s cronFieldSpec) example() string {
	if s.name == monthSpec.name {
		return "jan"
	}
	return "mon"
}

// expandValues lists the plain values a field selects, with day-of-week 7
// folded to 0 (both are Sunday).
func expandValues(entries []cronEntry, spec cronFieldSpec) []int {
	var out []int
	for _, en := range entries {
		switch en.kind {
		case entryAll, entryRange:
			for v := en.lo; v <= en.hi; v += en.step {
				out = append(out, v)
			}
		case entryValue:
			out = append(out, en.lo)
		}
	}
	if spec.name == dowSpec.name {
		for i, v := range out {
			out[i] = v % 7
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// cronPart is one compiled cron expression of a spec.
type cronPart struct {
	expr   *cronExpr
	follow bool

	// cronexpr.Expression caches per-month state while computing Next, so one
	// expression must not be evaluated by two goroutines at once; matchDay is
	// guarded by the same lock.
	mu   sync.Mutex
	eval *cronexpr.Expression
	// matchDay is 00:00 (wall seconds) of the last day cronexpr returned a
	// match on. cronexpr rebuilds its day tables with maps on every call —
	// several microseconds for an expression with restricted days — so later
	// times on a known matching day come from the hour and minute lists.
	matchDay int64
}

func compileCron(source string) (*cronPart, string) {
	e, why := parseCron(source)
	if why != "" {
		return nil, why
	}
	eval, err := cronexpr.Parse(e.normalized())
	if err != nil {
		// parseCron only lets through what cronexpr understands, so this is a
		// bug here rather than a user mistake; still say something useful.
		return nil, fmt.Sprintf("%q: cannot compile: %v", source, err)
	}
	return &cronPart{expr: e, follow: e.followsRealTime(), eval: eval, matchDay: math.MinInt64}, ""
}

// nextWall returns the first matching wall time strictly after w (both wall
// seconds); false when none exists before cronexpr's calendar ends. The
// caller holds c.mu.
func (c *cronPart) nextWall(w int64) (int64, bool) {
	const day = 86_400
	if start := floorDiv(w, day) * day; start == c.matchDay {
		if t, ok := c.nextTimeOfDay(w - start); ok {
			return start + t, true
		}
	}
	next := c.eval.Next(time.Unix(w, 0).UTC())
	if next.IsZero() {
		return 0, false
	}
	ws := next.Unix()
	c.matchDay = floorDiv(ws, day) * day
	return ws, true
}

// nextTimeOfDay returns the first hour:minute of the expression strictly
// after sec seconds into a day.
func (c *cronPart) nextTimeOfDay(sec int64) (int64, bool) {
	hours, minutes := c.expr.hour.values, c.expr.minute.values
	h0 := int(sec / 3600)
	i, _ := slices.BinarySearch(hours, h0)
	for ; i < len(hours); i++ {
		j := 0
		if hours[i] == h0 {
			// m·60 > sec mod 3600 exactly when m > (sec mod 3600) / 60.
			j, _ = slices.BinarySearch(minutes, int(sec%3600/60)+1)
		}
		if j < len(minutes) {
			return int64(hours[i])*3600 + int64(minutes[j])*60, true
		}
	}
	return 0, false
}

// firesAtAll reports whether any calendar date matches the day, month and
// weekday fields. cronexpr's calendar ends in 2099, so this looks from 1970 on:
// every real pattern (the rarest, a fifth weekday in February, recurs every 28
// years at worst) shows up in that window.
func (c *cronPart) firesAtAll() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.eval.Next(time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC)).IsZero()
}

// next returns the first fire strictly after `after` (Unix seconds).
//
// cronexpr cannot be trusted with a DST zone (it returns the same or an
// earlier time across a transition), so it only ever sees "wall seconds": the
// civil time of the zone written as if it were UTC, where every day has 24
// hours. Each wall-clock match is then mapped to real instants by zoneCursor.resolve,
// which applies CONTRACT §3: a time in a spring-forward gap is shifted later by the
// gap, a repeated time fires at its first occurrence (and at both when the
// expression follows real time).
//
// That mapping is not monotonic near a transition — in a 30-minute gap, 02:10
// shifts to 02:40 while 02:35 is real — so the scan keeps the earliest instant
// found and stops only once no later wall time can map below it.
func (c *cronPart) next(z *zoneCursor, after int64) (int64, bool) {
	at, _, ok := c.nextWithWall(z, after)
	return at, ok
}

// nextWithWall is next that also returns the wall seconds the fire stands
// for: a time shifted by a spring-forward gap keeps the wall time written
// (02:30, not 03:30), which is the time a calendar move keeps (CONTRACT §16).
func (c *cronPart) nextWithWall(z *zoneCursor, after int64) (int64, int64, bool) {
	// A match maps to instant = wall - offset for some offset in force near
	// `after`; to see every match later than `after`, the scan must start at
	// after + the smallest offset that can apply. That is normally the current
	// one, except just after a spring-forward (gap times map with the earlier,
	// smaller offset) and in the first pass of a fall-back hour (its second
	// pass maps with the later, smaller offset). Elsewhere the current offset
	// is exact, which keeps the common case at a single candidate.
	cur := z.at(after)
	low := cur.offset
	if prev, ok := z.before(cur); ok && prev.offset < cur.offset && after < cur.start+(cur.offset-prev.offset) {
		low = prev.offset
	}
	if nxt, ok := z.after(cur); ok && nxt.offset < cur.offset && after >= cur.end-(cur.offset-nxt.offset) {
		low = min(low, nxt.offset)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	ws := after + low
	var best, bestWall, stop int64
	found := false
	for range maxCronScan {
		var ok bool
		if ws, ok = c.nextWall(ws); !ok {
			break // no match before cronexpr's calendar ends (2099)
		}
		first, second, repeated := z.resolve(ws)
		for i, at := range []int64{first, second} {
			if i == 1 && !(repeated && c.follow) {
				break
			}
			if at > after && (!found || at < best) {
				best, bestWall, found = at, ws, true
				stop = best + z.maxOffsetNear(best)
			}
		}
		// A later wall time w maps to w - offset with offset at most
		// maxOffsetNear(best), so once w reaches best + that, nothing earlier
		// than best can follow.
		if found && ws >= stop {
			break
		}
	}
	return best, bestWall, found
}

// zonePeriod is a stretch of time during which a zone keeps one UTC offset.
// Bounds are Unix seconds; math.MinInt64/MaxInt64 mean "unbounded".
type zonePeriod struct {
	start, end int64
	offset     int64
}

func (p zonePeriod) contains(t int64) bool { return t >= p.start && t < p.end }

// zoneCursor answers offset questions about one zone, remembering the few
// periods a Next call (or a Between walk) touches so that each is looked up
// once. It is not shared between goroutines.
type zoneCursor struct {
	loc   *time.Location
	cache [4]zonePeriod
	n     int
}

func newZoneCursor(loc *time.Location) *zoneCursor { return &zoneCursor{loc: loc} }

// at returns the period containing instant t.
func (z *zoneCursor) at(t int64) zonePeriod {
	for i := range z.n {
		if z.cache[i].contains(t) {
			return z.cache[i]
		}
	}
	lt := time.Unix(t, 0).In(z.loc)
	_, off := lt.Zone()
	start, end := lt.ZoneBounds()
	p := zonePeriod{start: math.MinInt64, end: math.MaxInt64, offset: int64(off)}
	if !start.IsZero() {
		p.start = start.Unix()
	}
	if !end.IsZero() {
		p.end = end.Unix()
	}
	if z.n < len(z.cache) {
		z.cache[z.n] = p
		z.n++
	} else {
		copy(z.cache[:], z.cache[1:])
		z.cache[len(z.cache)-1] = p
	}
	return p
}

func (z *zoneCursor) before(p zonePeriod) (zonePeriod, bool) {
	if p.start == math.MinInt64 {
		return zonePeriod{}, false
	}
	return z.at(p.start - 1), true
}

func (z *zoneCursor) after(p zonePeriod) (zonePeriod, bool) {
	if p.end == math.MaxInt64 {
		return zonePeriod{}, false
	}
	return z.at(p.end), true
}

// maxOffsetNear is the largest offset that can map a wall time to an instant
// at or before t: the offset in force at t, or the previous one when t is
// within the first pass of a fall-back (its size) after the transition.
func (z *zoneCursor) maxOffsetNear(t int64) int64 {
	cur := z.at(t)
	if prev, ok := z.before(cur); ok && prev.offset > cur.offset && t-cur.start < prev.offset-cur.offset {
		return prev.offset
	}
	return cur.offset
}

// resolve maps wall seconds to real instants. A wall time that exists once
// gives (t, 0, false); one repeated by a fall-back gives (first, second, true);
// one skipped by a spring-forward gives the instant shifted later by the gap
// — the wall time read with the offset in force before the jump (02:30 in New
// York on 2026-03-08 → 03:30 EDT), as Java and PostgreSQL do. Go's time.Date
// would pick 01:30 EST instead, which is why this does not use it.
func (z *zoneCursor) resolve(ws int64) (first, second int64, repeated bool) {
	// The instant is ws minus some offset; the period of a first guess and its
	// neighbours hold every candidate, as transitions are months apart.
	guess := z.at(ws - z.at(ws).offset)
	periods := [3]zonePeriod{}
	n := 0
	if p, ok := z.before(guess); ok {
		periods[n] = p
		n++
	}
	periods[n] = guess
	n++
	if p, ok := z.after(guess); ok {
		periods[n] = p
		n++
	}
	var found [2]int64
	k := 0
	for _, p := range periods[:n] {
		if t := ws - p.offset; p.contains(t) && k < 2 && (k == 0 || found[0] != t) {
			found[k] = t
			k++
		}
	}
	switch k {
	case 2:
		return found[0], found[1], true
	case 1:
		return found[0], 0, false
	}
	for i := 0; i+1 < n; i++ {
		a, b := periods[i], periods[i+1]
		if a.offset < b.offset && ws-a.offset >= a.end && ws-b.offset < b.start {
			return ws - a.offset, 0, false
		}
	}
	// Unreachable for real zones (it needs two transitions closer together
	// than their size); fall back to the guess rather than lose the fire.
	return ws - guess.offset, 0, false
}

// matchesWall reports whether the expression matches wall seconds w.
func (c *cronPart) matchesWall(w int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.nextWall(w - 1)
	return ok && at == w
}

// WallOf says which wall-clock time of the spec's zone an occurrence stands
// for (CONTRACT §3): normally its own local time; for a cron time skipped by a
// spring-forward gap, the skipped wall time and the gap it was shifted by;
// repeated is true for the second pass of a fall-back hour. The occurrence
// ledger shows these so that "why 03:30?" answers itself.
func (c *CompiledSpec) WallOf(t time.Time) (wall time.Time, shift time.Duration, repeated bool) {
	z := newZoneCursor(c.loc)
	at := t.Unix()
	cur := z.at(at)
	lw := at + cur.offset
	wall = time.Unix(lw, 0).UTC()
	if prev, ok := z.before(cur); ok && prev.offset > cur.offset && at-cur.start < prev.offset-cur.offset {
		repeated = true // the same wall time passed once already, before the fall-back
	}
	if len(c.crons) == 0 {
		return wall, 0, repeated
	}
	for _, p := range c.crons {
		if p.matchesWall(lw) {
			return wall, 0, repeated
		}
	}
	if prev, ok := z.before(cur); ok && prev.offset < cur.offset && at-cur.start < cur.offset-prev.offset {
		gap := cur.offset - prev.offset
		for _, p := range c.crons {
			if p.matchesWall(lw - gap) {
				return time.Unix(lw-gap, 0).UTC(), time.Duration(gap) * time.Second, false
			}
		}
	}
	return wall, 0, repeated
}
