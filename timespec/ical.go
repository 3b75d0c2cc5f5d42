package timespec

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	ics "github.com/arran4/golang-ical"
	"github.com/teambition/rrule-go"
)

// Bounds of an iCalendar import: a holiday file is a few KB; these keep a
// hostile one from costing more than a calendar may hold.
const (
	MaxICalBytes = 4 << 20 // the whole file
	MaxICalLine  = 8 << 10 // one unfolded content line
	// MaxICalRecurring bounds the events with an RRULE in one file. A
	// holiday file has a few dozen; a rule that can never match
	// (BYMONTH=2;BYMONTHDAY=30) makes the recurrence library walk to year
	// 9999 before it gives up — 25 ms (YEARLY) to 125 ms (DAILY) each.
	MaxICalRecurring = 100
	maxICalDepth     = 8    // nested components (VCALENDAR > VEVENT > VALARM is 3)
	maxRRuleEnd      = 2100 // a rule without COUNT/UNTIL stops before this year
)

// ICalError names the line of an iCalendar file that cannot be read.
type ICalError struct {
	Line    int
	Message string
}

func (e *ICalError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Message) }

// ParseICalDates reads the all-day events of an iCalendar file (RFC 5545)
// into dates (YYYY-MM-DD, ascending, each once): a VEVENT whose DTSTART is a
// DATE (VALUE=DATE, or 8 digits) gives its day, and every day up to its
// DTEND (exclusive) for a multi-day event; its RRULE (any FREQ from DAILY
// to YEARLY, e.g. "the fourth Thursday of November"; without COUNT or UNTIL
// up to 2099), RDATE and EXDATE add and remove starts. Timed events are
// skipped (skipped counts them): a calendar excludes whole days. Errors name
// the line.
//
// github.com/arran4/golang-ical reads each content line (names, quoted
// parameters, values) and the event's dates; github.com/teambition/rrule-go
// expands recurrences. What stays here is what neither does: the bounds
// (size, line length, dates, recurring events) and line numbers, which
// golang-ical's whole-file parser does not keep — so lines are unfolded
// here and handed to it one at a time (fuzzed: FuzzParseICalDates).
func ParseICalDates(r io.Reader) (dates []string, skipped int, err error) {
	lines, err := readICalLines(r)
	if err != nil {
		return nil, 0, err
	}
	p := icalParser{}
	for _, l := range lines {
		if err := p.line(l); err != nil {
			return nil, 0, err
		}
	}
	if err := p.finish(); err != nil {
		return nil, 0, err
	}
	slices.Sort(p.days)
	days := slices.Compact(p.days)
	if len(days) > MaxCalendarDates {
		last := lines[len(lines)-1].no
		return nil, 0, &ICalError{Line: last, Message: fmt.Sprintf("the file's all-day events cover %d dates; a calendar holds at most %d", len(days), MaxCalendarDates)}
	}
	out := make([]string, len(days))
	for i, d := range days {
		out[i] = FormatDay(d)
	}
	return out, p.skipped, nil
}

// icalLine is one unfolded content line and the physical line it starts on.
type icalLine struct {
	no   int
	text string
}

// readICalLines reads at most MaxICalBytes and unfolds continuation lines
// (a leading space or tab), keeping where each content line starts.
func readICalLines(r io.Reader) ([]icalLine, error) {
	sc := bufio.NewScanner(io.LimitReader(r, MaxICalBytes+1))
	sc.Buffer(make([]byte, 0, 4096), MaxICalLine+2)
	var (
		lines    []icalLine
		physical int
		total    int
	)
	for sc.Scan() {
		physical++
		text := strings.TrimRight(sc.Text(), "\r")
		total += len(sc.Bytes()) + 1
		if total > MaxICalBytes {
			return nil, &ICalError{Line: physical, Message: fmt.Sprintf("the file is larger than %d bytes", MaxICalBytes)}
		}
		if (strings.HasPrefix(text, " ") || strings.HasPrefix(text, "\t")) && len(lines) > 0 {
			last := &lines[len(lines)-1]
			last.text += text[1:]
			if len(last.text) > MaxICalLine {
				return nil, &ICalError{Line: last.no, Message: fmt.Sprintf("a content line is longer than %d bytes", MaxICalLine)}
			}
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		lines = append(lines, icalLine{no: physical, text: text})
	}
	if err := sc.Err(); err != nil {
		return nil, &ICalError{Line: physical + 1, Message: fmt.Sprintf("cannot read: %v (a line longer than %d bytes?)", err, MaxICalLine)}
	}
	if len(lines) == 0 {
		return nil, &ICalError{Line: 1, Message: "not an iCalendar file (no BEGIN:VCALENDAR)"}
	}
	return lines, nil
}

// icalParser follows the components of a file line by line and turns each
// VEVENT directly inside the VCALENDAR into days.
type icalParser struct {
	open        []icalLine // BEGIN lines of the open components, outermost first
	sawCalendar bool
	event       *icalEvent // the VEVENT being read, if any
	days        []int32
	skipped     int
	recurring   int
}

// icalEvent is a VEVENT's properties, for golang-ical's accessors, and the
// line of the first of each name, for errors.
type icalEvent struct {
	line  int
	props ics.ComponentBase
	at    map[string]int
}

func (p *icalParser) line(l icalLine) error {
	prop, err := ics.ParseProperty(ics.ContentLine(l.text))
	if err != nil {
		return &ICalError{Line: l.no, Message: fmt.Sprintf("%q cannot be read: %v", clip(l.text), err)}
	}
	if prop == nil {
		return &ICalError{Line: l.no, Message: fmt.Sprintf("%q is not an iCalendar content line (NAME:value)", clip(l.text))}
	}
	name := strings.ToUpper(prop.IANAToken)
	value := strings.ToUpper(strings.TrimSpace(prop.Value))
	switch name {
	case "BEGIN":
		return p.begin(l, value)
	case "END":
		return p.end(l, value)
	}
	if p.event != nil && p.top() == "VEVENT" {
		prop.IANAToken = name
		p.event.props.Properties = append(p.event.props.Properties, ics.IANAProperty{BaseProperty: *prop})
		if _, seen := p.event.at[name]; !seen {
			p.event.at[name] = l.no
		}
	}
	return nil
}

func (p *icalParser) top() string {
	if len(p.open) == 0 {
		return ""
	}
	return p.componentName(len(p.open) - 1)
}

func (p *icalParser) componentName(i int) string {
	_, name, _ := strings.Cut(p.open[i].text, ":")
	return strings.ToUpper(strings.TrimSpace(name))
}

func (p *icalParser) begin(l icalLine, component string) error {
	switch {
	case component == "":
		return &ICalError{Line: l.no, Message: "BEGIN without a component name"}
	case component == "VCALENDAR" && len(p.open) > 0:
		return &ICalError{Line: l.no, Message: "VCALENDAR inside " + p.top()}
	case component == "VCALENDAR":
		p.sawCalendar = true
	case len(p.open) == 0:
		return &ICalError{Line: l.no, Message: component + " outside BEGIN:VCALENDAR"}
	case component == "VEVENT" && p.top() != "VCALENDAR":
		if p.top() == "VEVENT" {
			return &ICalError{Line: l.no, Message: "VEVENT inside another VEVENT"}
		}
		return &ICalError{Line: l.no, Message: "VEVENT inside " + p.top()}
	case component == "VEVENT":
		p.event = &icalEvent{line: l.no, at: map[string]int{}}
	case len(p.open) >= maxICalDepth:
		return &ICalError{Line: l.no, Message: fmt.Sprintf("components nested more than %d deep", maxICalDepth)}
	}
	p.open = append(p.open, icalLine{no: l.no, text: "BEGIN:" + component})
	return nil
}

func (p *icalParser) end(l icalLine, component string) error {
	if component == "" {
		return &ICalError{Line: l.no, Message: "END without a component name"}
	}
	if p.top() != component {
		for i := len(p.open) - 1; i >= 0; i-- {
			if p.componentName(i) == component {
				// A component left open inside the one that ends.
				top := p.open[len(p.open)-1]
				return &ICalError{Line: top.no, Message: fmt.Sprintf("%s without END:%s", p.top(), p.top())}
			}
		}
		return &ICalError{Line: l.no, Message: fmt.Sprintf("END:%s without BEGIN:%s", component, component)}
	}
	p.open = p.open[:len(p.open)-1]
	if component != "VEVENT" || p.event == nil {
		return nil
	}
	e := p.event
	p.event = nil
	return p.addEvent(e)
}

func (p *icalParser) finish() error {
	if len(p.open) > 0 {
		top := p.open[len(p.open)-1]
		return &ICalError{Line: top.no, Message: fmt.Sprintf("%s without END:%s", p.top(), p.top())}
	}
	if !p.sawCalendar {
		return &ICalError{Line: 1, Message: "not an iCalendar file (no BEGIN:VCALENDAR)"}
	}
	return nil
}

// addEvent adds the days of one all-day event, or counts a timed one.
func (p *icalParser) addEvent(e *icalEvent) error {
	dtstart := e.props.GetProperty(ics.ComponentPropertyDtStart)
	if dtstart == nil {
		return &ICalError{Line: e.line, Message: "VEVENT without DTSTART"}
	}
	if !isICalDate(dtstart) {
		p.skipped++
		return nil
	}
	start, err := e.props.GetAllDayStartAt()
	if err != nil {
		return &ICalError{Line: e.at["DTSTART"], Message: fmt.Sprintf("DTSTART: %q is not a date (YYYYMMDD)", clip(dtstart.Value))}
	}
	first := civilDay(start)
	length := int32(1)
	if dtend := e.props.GetProperty(ics.ComponentPropertyDtEnd); dtend != nil && isICalDate(dtend) {
		end, err := (&ics.VEvent{ComponentBase: e.props}).GetAllDayEndAt()
		if err != nil {
			return &ICalError{Line: e.at["DTEND"], Message: fmt.Sprintf("DTEND: %q is not a date (YYYYMMDD)", clip(dtend.Value))}
		}
		length = civilDay(end) - first
		if length <= 0 {
			return &ICalError{Line: e.line, Message: "DTEND is not after DTSTART"}
		}
		if length > 366 {
			return &ICalError{Line: e.line, Message: "an all-day event longer than a year"}
		}
	}
	starts := []int32{first}
	if e.props.GetProperty(ics.ComponentPropertyRrule) != nil {
		if p.recurring++; p.recurring > MaxICalRecurring {
			return &ICalError{Line: e.at["RRULE"], Message: fmt.Sprintf("more than %d recurring events; list the dates instead", MaxICalRecurring)}
		}
		if starts, err = recurrence(e, first); err != nil {
			return err
		}
	}
	for _, s := range starts {
		for d := s; d < s+length; d++ {
			p.days = append(p.days, d)
			if len(p.days) > 4*MaxCalendarDates {
				return &ICalError{Line: e.line, Message: fmt.Sprintf("more than %d dates", MaxCalendarDates)}
			}
		}
	}
	return nil
}

// recurrence lists an all-day event's starts: its RRULE from DTSTART (up to
// 2099 without COUNT or UNTIL), plus RDATEs, less EXDATEs (dates only).
func recurrence(e *icalEvent, first int32) ([]int32, error) {
	line := e.at["RRULE"]
	rule := e.props.GetProperty(ics.ComponentPropertyRrule).Value
	opt, err := rrule.StrToROption(rule)
	if err != nil {
		return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE %q cannot be read: %v", clip(rule), err)}
	}
	if opt.Freq > rrule.DAILY { // HOURLY, MINUTELY, SECONDLY
		return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE %q repeats within a day; an all-day event repeats DAILY to YEARLY", clip(rule))}
	}
	if opt.Count > MaxCalendarDates {
		return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE COUNT %d is more than %d", opt.Count, MaxCalendarDates)}
	}
	end := time.Date(maxRRuleEnd, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Second)
	if opt.Until.IsZero() || opt.Until.After(end) {
		opt.Until = end
	} else {
		// An all-day UNTIL is a date: the whole day is in range.
		y, m, d := opt.Until.Date()
		opt.Until = time.Date(y, m, d, 23, 59, 59, 0, time.UTC)
	}
	opt.Dtstart = dayTime(first)
	r, err := rrule.NewRRule(*opt)
	if err != nil {
		return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE %q cannot be used: %v", clip(rule), err)}
	}
	set := rrule.Set{}
	set.RRule(r)
	for _, name := range []ics.ComponentProperty{ics.ComponentPropertyRdate, ics.ComponentPropertyExdate} {
		for _, prop := range e.props.GetProperties(name) {
			for _, v := range strings.Split(prop.Value, ",") {
				t, err := time.Parse("20060102", strings.TrimSpace(v))
				if err != nil {
					return nil, &ICalError{Line: e.at[string(name)], Message: fmt.Sprintf("%s: %q is not a date (YYYYMMDD)", name, clip(v))}
				}
				if name == ics.ComponentPropertyRdate {
					set.RDate(t)
				} else {
					set.ExDate(t)
				}
			}
		}
	}
	var out []int32
	next := set.Iterator()
	for t, ok := next(); ok; t, ok = next() {
		if len(out) == MaxCalendarDates {
			return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE %q gives more than %d dates", clip(rule), MaxCalendarDates)}
		}
		out = append(out, civilDay(t))
	}
	return out, nil
}

// isICalDate says whether a DTSTART/DTEND is a DATE (VALUE=DATE, or eight
// digits) rather than a DATE-TIME, whose day a calendar does not use.
func isICalDate(p *ics.IANAProperty) bool {
	for _, v := range p.ICalParameters[string(ics.ParameterValue)] {
		if strings.EqualFold(v, "DATE") {
			return true
		}
	}
	return len(strings.TrimSpace(p.Value)) == 8
}

// civilDay is the day number of t's calendar date, wherever t is.
func civilDay(t time.Time) int32 {
	y, m, d := t.Date()
	return int32(floorDiv(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), 86400))
}

func dayTime(d int32) time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
