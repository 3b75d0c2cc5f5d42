package timespec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The describer turns a spec into the sentence shown next to a schedule
// ("At 02:30 every day (America/New_York)"). No maintained Go library for this
// is available to the project, and the grammar it needs is small: five
// fields, a few entry shapes, and intervals.

var monthNames = [...]string{"", "January", "February", "March", "April", "May", "June", "July", "August",
	"September", "October", "November", "December"}

var nthWords = [...]string{"", "first", "second", "third", "fourth", "fifth"}

// SpecText is a spec described: its parts in spec order, and the zone the
// cron parts' wall times are in. String is the API's spec_description, the
// zone after each cron part; Sentence leaves the zone to the caller (the
// console shows it once, or converts the times to another zone).
type SpecText struct {
	Parts []SpecPart
	Zone  string
	// Bounds is the spec's start_at/end_at as a clause ("from
	// 2026-03-01T00:00:00Z until 2026-03-31T23:59:59Z"), empty when unbounded.
	Bounds string
	// Except is the calendars clause ("except days in us-bank-holidays"),
	// empty when the spec lists none.
	Except string
}

// SpecPart is one cron expression or interval described; Zoned says its
// times are wall times in the spec's zone (a cron part), not epoch-aligned.
type SpecPart struct {
	Text  string
	Zoned bool
}

// String joins the parts, each cron part naming the zone:
// "At 02:30 every day (America/New_York); Every 15 minutes".
func (t SpecText) String() string {
	parts := make([]string, len(t.Parts))
	for i, p := range t.Parts {
		parts[i] = p.Text
		if p.Zoned {
			parts[i] += " (" + t.Zone + ")"
		}
	}
	return t.bounded(strings.Join(parts, "; "))
}

func (t SpecText) bounded(s string) string {
	if t.Except != "" {
		s += ", " + t.Except
	}
	if t.Bounds == "" {
		return s
	}
	return s + "; " + t.Bounds
}

// Sentence joins the parts without the zone.
func (t SpecText) Sentence() string {
	parts := make([]string, len(t.Parts))
	for i, p := range t.Parts {
		parts[i] = p.Text
	}
	return t.bounded(strings.Join(parts, "; "))
}

// describeSpec describes the parts in spec order.
func describeSpec(c *CompiledSpec) SpecText {
	t := SpecText{Zone: c.zone, Parts: make([]SpecPart, 0, len(c.crons)+len(c.intervals))}
	if t.Zone == "" {
		t.Zone = "UTC"
	}
	for _, p := range c.crons {
		t.Parts = append(t.Parts, SpecPart{Text: describeCron(p.expr), Zoned: true})
	}
	for _, p := range c.intervals {
		t.Parts = append(t.Parts, SpecPart{Text: describeInterval(p)})
	}
	if len(c.at) > 0 {
		t.Parts = append(t.Parts, SpecPart{Text: describeAt(c.at)})
	}
	t.Except = describeCalendars(c)
	switch {
	case c.startText != "" && c.endText != "":
		t.Bounds = "from " + c.startText + " until " + c.endText
	case c.startText != "":
		t.Bounds = "from " + c.startText
	case c.endText != "":
		t.Bounds = "until " + c.endText
	}
	return t
}

// describeAt names the one-off instants in UTC (they are instants, not
// wall times, so no zone applies); past three it gives the count and range.
func describeAt(at []int64) string {
	utc := func(u int64) string { return time.Unix(u, 0).UTC().Format(time.RFC3339) }
	if len(at) == 1 {
		return "Once at " + utc(at[0])
	}
	if len(at) <= 3 {
		texts := make([]string, len(at))
		for i, u := range at {
			texts[i] = utc(u)
		}
		return "Once at each of " + strings.Join(texts, ", ")
	}
	return fmt.Sprintf("Once at each of %d times from %s to %s", len(at), utc(at[0]), utc(at[len(at)-1]))
}

func describeInterval(p intervalPart) string {
	every := time.Duration(p.every) * time.Second
	s := "Every " + humanDuration(every)
	if strings.HasPrefix(s, "Every 1 ") && !strings.Contains(s, " and ") {
		s = "Every " + strings.TrimPrefix(s, "Every 1 ") // "Every hour", not "Every 1 hour"
	}
	if p.offset > 0 {
		s += ", offset " + humanDuration(time.Duration(p.offset)*time.Second)
	}
	return s
}

// humanDuration spells a whole-second duration with the largest fitting
// units: "2 weeks", "1 day and 6 hours", "1 minute and 30 seconds".
func humanDuration(d time.Duration) string {
	const day, week = 24 * time.Hour, 7 * 24 * time.Hour
	if d > 0 && d%week == 0 {
		return plural(int(d/week), "week")
	}
	var parts []string
	for _, u := range []struct {
		size time.Duration
		name string
	}{{day, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if n := d / u.size; n > 0 {
			parts = append(parts, plural(int(n), u.name))
			d -= n * u.size
		}
	}
	if len(parts) == 0 {
		return "0 seconds"
	}
	return joinAnd(parts)
}

func describeCron(e *cronExpr) string {
	timeOfDay, atTimes := describeTimeOfDay(e)
	days := describeDays(e)
	months := describeMonths(e)
	if !e.dom.wildcard && e.dow.wildcard && len(e.dom.entries) == 1 && e.dom.entries[0].kind == entryValue &&
		len(e.month.values) == 1 {
		// "on January 1" reads better than "on day 1 of the month in January".
		days, months = fmt.Sprintf("on %s %d", monthNames[e.month.values[0]], e.dom.entries[0].lo), ""
	}
	s := timeOfDay
	if days == "" && atTimes {
		s += " every day"
	}
	if days != "" {
		s += " " + days
	}
	if months != "" {
		s += " " + months
	}
	return s
}

// describeTimeOfDay covers the minute and hour fields. atTimes reports a list
// of clock times, which reads naturally followed by "every day".
func describeTimeOfDay(e *cronExpr) (string, bool) {
	m, h := e.minute, e.hour
	switch {
	case m.wildcard && h.wildcard:
		return "Every minute", false
	case h.wildcard && isStarStep(m):
		return everyN(m.entries[0].step, 60, "minute"), false
	case h.wildcard && len(m.values) == 1:
		if m.values[0] == 0 {
			return "Every hour", false
		}
		return fmt.Sprintf("At %s past every hour", plural(m.values[0], "minute")), false
	case isStarStep(h) && len(m.values) == 1:
		hours := everyN(h.entries[0].step, 24, "hour")
		if m.values[0] == 0 {
			return hours, false
		}
		return fmt.Sprintf("%s, at %s past the hour", hours, plural(m.values[0], "minute")), false
	case !m.wildcard && !h.wildcard && len(m.values)*len(h.values) <= 6:
		times := make([]string, 0, len(m.values)*len(h.values))
		for _, hour := range h.values {
			for _, minute := range m.values {
				times = append(times, fmt.Sprintf("%02d:%02d", hour, minute))
			}
		}
		return "At " + joinAnd(times), true
	}

	var minutes, connector string
	switch {
	case m.wildcard:
		minutes, connector = "Every minute", "during"
	case isStarStep(m):
		minutes, connector = everyN(m.entries[0].step, 60, "minute"), "during"
	default:
		minutes, connector = "At "+unitPhrase(m, "minute", strconv.Itoa), "past"
	}
	var hours string
	switch {
	case h.wildcard:
		hours = "every hour"
	case isStarStep(h):
		hours = strings.ToLower(everyN(h.entries[0].step, 24, "hour"))
	default:
		hours = unitPhrase(h, "hour", strconv.Itoa)
	}
	return minutes + " " + connector + " " + hours, false
}

func describeDays(e *cronExpr) string {
	var dom, dow string
	if !e.dom.wildcard {
		var phrases []string
		if len(e.dom.values) > 0 {
			phrases = append(phrases, unitPhrase(plainEntries(e.dom), "day", strconv.Itoa)+" of the month")
		}
		for _, en := range e.dom.entries {
			switch en.kind {
			case entryLastDay:
				phrases = append(phrases, "the last day of the month")
			case entryLastWeekday:
				phrases = append(phrases, "the last weekday of the month")
			case entryNearestWeekday:
				phrases = append(phrases, fmt.Sprintf("the weekday nearest day %d of the month", en.lo))
			}
		}
		dom = "on " + joinAnd(phrases)
	}
	if !e.dow.wildcard {
		var phrases []string
		if len(e.dow.values) > 0 {
			phrases = append(phrases, listEntries(plainEntries(e.dow), "day", weekdayName))
		}
		for _, en := range e.dow.entries {
			switch en.kind {
			case entryLastDayOfWeek:
				phrases = append(phrases, "the last "+weekdayName(en.lo)+" of the month")
			case entryNthDayOfWeek:
				phrases = append(phrases, "the "+nthWords[en.nth]+" "+weekdayName(en.lo)+" of the month")
			}
		}
		dow = "on " + joinAnd(phrases)
	}
	switch {
	case dom != "" && dow != "":
		// Standard cron: when both fields are restricted, either one matching is enough.
		return dom + " or " + dow
	case dom != "":
		return dom
	}
	return dow
}

func describeMonths(e *cronExpr) string {
	if e.month.wildcard {
		return ""
	}
	return "in " + listEntries(e.month, "month", func(v int) string { return monthNames[v] })
}

// listEntries phrases a field's plain entries: "1, 15 and 20", "Monday
// through Friday", "every 2nd hour from 9 through 17". Steps with few values
// are listed, since "0, 20 and 40" is clearer than "every 20th".
func listEntries(f cronField, unit string, name func(int) string) string {
	var items []string
	for _, en := range f.entries {
		switch en.kind {
		case entryValue:
			items = append(items, name(en.lo))
		case entryAll, entryRange:
			switch count := (en.hi-en.lo)/en.step + 1; {
			case en.step == 1 && count > 2:
				items = append(items, name(en.lo)+" through "+name(en.hi))
			case count <= 6:
				for v := en.lo; v <= en.hi; v += en.step {
					items = append(items, name(v))
				}
			case en.fromStar:
				items = append(items, "every "+ordinal(en.step)+" "+unit)
			default:
				items = append(items, fmt.Sprintf("every %s %s from %s through %s",
					ordinal(en.step), unit, name(en.lo), name(en.hi)))
			}
		}
	}
	return joinAnd(items)
}

// unitPhrase names the unit before a list ("hours 9 and 17") unless the list
// already does ("every 2nd hour from 1 through 23").
func unitPhrase(f cronField, unit string, name func(int) string) string {
	text := listEntries(f, unit, name)
	if strings.HasPrefix(text, "every ") {
		return text
	}
	return pluralWord(len(f.values), unit) + " " + text
}

// plainEntries drops the special day entries (L, W, #), described separately.
func plainEntries(f cronField) cronField {
	out := cronField{values: f.values}
	for _, en := range f.entries {
		if en.kind == entryValue || en.kind == entryRange || en.kind == entryAll {
			out.entries = append(out.entries, en)
		}
	}
	return out
}

func isStarStep(f cronField) bool {
	return len(f.entries) == 1 && f.entries[0].kind == entryRange && f.entries[0].fromStar
}

// everyN says "Every 15 minutes" when the step divides the cycle evenly, and
// "Every 7th minute" when it does not (*/7 fires at :56 then :00, 4 minutes later).
func everyN(step, cycle int, unit string) string {
	if step == 1 {
		return "Every " + unit
	}
	if cycle%step == 0 {
		return "Every " + plural(step, unit)
	}
	return "Every " + ordinal(step) + " " + unit
}

func weekdayName(v int) string { return time.Weekday(v % 7).String() }

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func pluralWord(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return unit + "s"
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
