package timespec

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds of an iCalendar import: a holiday file is a few KB; these keep a
// hostile one from costing more than a calendar may hold.
const (
	MaxICalBytes = 4 << 20 // the whole file
	MaxICalLine  = 8 << 10 // one unfolded content line
	maxRRuleEnd  = 2100    // a yearly rule without COUNT/UNTIL stops before this year
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
// DTEND (exclusive) for a multi-day event; RRULE FREQ=YEARLY (with COUNT or
// UNTIL, else up to 2099) repeats it. Timed events are skipped (skipped
// counts them): a calendar excludes whole days. Errors name the line.
//
// Tideline reads this subset itself for now: it was written when no
// iCalendar module was known to be on the module proxy here, holiday files
// use only this subset, and it bounds the input and names lines (fuzzed:
// FuzzParseICalDates). github.com/arran4/golang-ical is on the proxy and
// well kept; moving the parsing to it, keeping the bounds, the line numbers
// and the yearly expansion here, is open (issue 31).
func ParseICalDates(r io.Reader) (dates []string, skipped int, err error) {
	sc := bufio.NewScanner(io.LimitReader(r, MaxICalBytes+1))
	sc.Buffer(make([]byte, 0, 4096), MaxICalLine+2)
	var (
		lines    []string // unfolded
		lineNo   []int    // first physical line of each
		physical int
		total    int
	)
	for sc.Scan() {
		physical++
		text := strings.TrimRight(sc.Text(), "\r")
		total += len(sc.Bytes()) + 1
		if total > MaxICalBytes {
			return nil, 0, &ICalError{Line: physical, Message: fmt.Sprintf("the file is larger than %d bytes", MaxICalBytes)}
		}
		if (strings.HasPrefix(text, " ") || strings.HasPrefix(text, "\t")) && len(lines) > 0 {
			lines[len(lines)-1] += text[1:]
			if len(lines[len(lines)-1]) > MaxICalLine {
				return nil, 0, &ICalError{Line: lineNo[len(lines)-1], Message: fmt.Sprintf("a content line is longer than %d bytes", MaxICalLine)}
			}
			continue
		}
		lines = append(lines, text)
		lineNo = append(lineNo, physical)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, &ICalError{Line: physical + 1, Message: fmt.Sprintf("cannot read: %v (a line longer than %d bytes?)", err, MaxICalLine)}
	}

	var days []int32
	add := func(line int, d int32) error {
		days = append(days, d)
		if len(days) > 4*MaxCalendarDates {
			return &ICalError{Line: line, Message: fmt.Sprintf("more than %d dates", MaxCalendarDates)}
		}
		return nil
	}
	type event struct {
		line            int
		start, end      int32
		hasStart, timed bool
		hasEnd          bool
		rrule           string
		rruleLine       int
	}
	var ev *event
	sawCalendar := false
	for i, raw := range lines {
		line := lineNo[i]
		if strings.TrimSpace(raw) == "" {
			continue
		}
		name, params, value, ok := splitContentLine(raw)
		if !ok {
			return nil, 0, &ICalError{Line: line, Message: fmt.Sprintf("%q is not an iCalendar content line (NAME:value)", clip(raw))}
		}
		switch {
		case name == "BEGIN" && strings.EqualFold(value, "VCALENDAR"):
			sawCalendar = true
		case name == "BEGIN" && strings.EqualFold(value, "VEVENT"):
			if !sawCalendar {
				return nil, 0, &ICalError{Line: line, Message: "VEVENT outside BEGIN:VCALENDAR"}
			}
			if ev != nil {
				return nil, 0, &ICalError{Line: line, Message: "VEVENT inside another VEVENT"}
			}
			ev = &event{line: line}
		case name == "END" && strings.EqualFold(value, "VEVENT"):
			if ev == nil {
				return nil, 0, &ICalError{Line: line, Message: "END:VEVENT without BEGIN:VEVENT"}
			}
			e := ev
			ev = nil
			if e.timed {
				skipped++
				continue
			}
			if !e.hasStart {
				return nil, 0, &ICalError{Line: e.line, Message: "VEVENT without DTSTART"}
			}
			end := e.start + 1
			if e.hasEnd {
				if e.end <= e.start {
					return nil, 0, &ICalError{Line: e.line, Message: "DTEND is not after DTSTART"}
				}
				if e.end-e.start > 366 {
					return nil, 0, &ICalError{Line: e.line, Message: "an all-day event longer than a year"}
				}
				end = e.end
			}
			starts := []int32{e.start}
			if e.rrule != "" {
				var err error
				if starts, err = expandYearly(e.start, e.rrule, e.rruleLine); err != nil {
					return nil, 0, err
				}
			}
			for _, s := range starts {
				for d := s; d < s+(end-e.start); d++ {
					if err := add(e.line, d); err != nil {
						return nil, 0, err
					}
				}
			}
		case ev != nil && name == "DTSTART":
			d, timed, why := icalDate(params, value)
			if why != "" {
				return nil, 0, &ICalError{Line: line, Message: "DTSTART: " + why}
			}
			ev.start, ev.timed, ev.hasStart = d, timed, true
		case ev != nil && name == "DTEND":
			d, timed, why := icalDate(params, value)
			if why != "" {
				return nil, 0, &ICalError{Line: line, Message: "DTEND: " + why}
			}
			if !timed {
				ev.end, ev.hasEnd = d, true
			}
		case ev != nil && name == "RRULE":
			ev.rrule, ev.rruleLine = value, line
		}
	}
	if ev != nil {
		return nil, 0, &ICalError{Line: ev.line, Message: "VEVENT without END:VEVENT"}
	}
	if !sawCalendar {
		return nil, 0, &ICalError{Line: 1, Message: "not an iCalendar file (no BEGIN:VCALENDAR)"}
	}
	slices.Sort(days)
	days = slices.Compact(days)
	if len(days) > MaxCalendarDates {
		return nil, 0, &ICalError{Line: physical, Message: fmt.Sprintf("the file's all-day events cover %d dates; a calendar holds at most %d", len(days), MaxCalendarDates)}
	}
	out := make([]string, len(days))
	for i, d := range days {
		out[i] = FormatDay(d)
	}
	return out, skipped, nil
}

// splitContentLine splits "NAME;PARAM=x:value" (names upper-cased).
func splitContentLine(s string) (name string, params []string, value string, ok bool) {
	head, value, ok := strings.Cut(s, ":")
	if !ok || head == "" {
		return "", nil, "", false
	}
	parts := strings.Split(head, ";")
	return strings.ToUpper(parts[0]), parts[1:], value, true
}

// icalDate reads a DTSTART/DTEND value: a DATE gives its day; a DATE-TIME
// is timed (its day is not used).
func icalDate(params []string, value string) (int32, bool, string) {
	isDate := false
	for _, p := range params {
		if strings.EqualFold(p, "VALUE=DATE") {
			isDate = true
		}
	}
	value = strings.TrimSpace(value)
	if !isDate && len(value) != 8 {
		return 0, true, ""
	}
	t, err := time.Parse("20060102", value)
	if err != nil {
		return 0, false, fmt.Sprintf("%q is not a date (YYYYMMDD)", clip(value))
	}
	return int32(floorDiv(t.Unix(), 86400)), false, ""
}

// expandYearly lists the starts of FREQ=YEARLY[;INTERVAL=n][;COUNT=n|;UNTIL=d]
// from start (same month and day; a 29 February only in leap years).
func expandYearly(start int32, rule string, line int) ([]int32, error) {
	freq, count, interval := "", 0, 1
	until := int32(FormatYearStart(maxRRuleEnd))
	for _, part := range strings.Split(rule, ";") {
		k, v, _ := strings.Cut(part, "=")
		switch strings.ToUpper(k) {
		case "FREQ":
			freq = strings.ToUpper(v)
		case "COUNT":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxCalendarDates {
				return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE COUNT %q is not 1-%d", clip(v), MaxCalendarDates)}
			}
			count = n
		case "INTERVAL":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE INTERVAL %q is not 1-100", clip(v))}
			}
			interval = n
		case "UNTIL":
			if len(v) < 8 {
				return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE UNTIL %q is not a date", clip(v))}
			}
			t, err := time.Parse("20060102", v[:8])
			if err != nil {
				return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE UNTIL %q is not a date", clip(v))}
			}
			until = int32(floorDiv(t.Unix(), 86400)) + 1
		case "BYMONTH", "BYMONTHDAY", "WKST":
			// The start's own month and day: what holiday files write.
		default:
			return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE part %q is not supported (only FREQ=YEARLY on a fixed date, with INTERVAL, COUNT or UNTIL); list the dates instead", clip(part))}
		}
	}
	if freq != "YEARLY" {
		return nil, &ICalError{Line: line, Message: fmt.Sprintf("RRULE FREQ %q is not supported (only YEARLY); list the dates instead", clip(freq))}
	}
	first := time.Unix(int64(start)*86400, 0).UTC()
	var out []int32
	for y := first.Year(); len(out) < MaxCalendarDates && (count == 0 || len(out) < count); y += interval {
		t := time.Date(y, first.Month(), first.Day(), 0, 0, 0, 0, time.UTC)
		if t.Day() != first.Day() {
			continue // 29 February in a common year
		}
		d := int32(floorDiv(t.Unix(), 86400))
		if d >= until {
			break
		}
		out = append(out, d)
	}
	return out, nil
}

// FormatYearStart is the civil day number of 1 January of year.
func FormatYearStart(year int) int64 {
	return floorDiv(time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), 86400)
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
