package timespec

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sosodev/duration"
)

// errCalendarUnit is the message CONTRACT §3 asks for when an interval uses months
// or years: their length depends on the calendar, which intervals ignore.
var errCalendarUnit = errors.New("months and years have no fixed length; use a cron expression")

// maxDuration keeps every interval far below time.Duration's ~292-year limit.
const maxDuration = 100 * 365 * 24 * time.Hour

// isoShape is the order ISO-8601 prescribes (PnYnMnWnDTnHnMnS, each part
// optional). The sosodev parser is lenient about order and repetition, so the
// shape is checked first.
var isoShape = regexp.MustCompile(`^P(\d+(\.\d+)?Y)?(\d+(\.\d+)?M)?(\d+(\.\d+)?W)?(\d+(\.\d+)?D)?(T(\d+(\.\d+)?H)?(\d+(\.\d+)?M)?(\d+(\.\d+)?S)?)?$`)

// humanPart is one "<number> <unit>" of a human duration ("1 hour 30 minutes").
var humanPart = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([a-z]+)\s*(?:,|and\s)?\s*`)

var humanUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "wk": 7 * 24 * time.Hour, "wks": 7 * 24 * time.Hour,
	"week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

var calendarUnits = map[string]bool{
	"mo": true, "mon": true, "mos": true, "month": true, "months": true,
	"y": true, "yr": true, "yrs": true, "year": true, "years": true,
}

// ParseDuration reads a fixed-length duration: ISO-8601 (PT30M, PT1H, P1D =
// 24h, P1W, PT1M30S), human forms ("30 minutes", "1 hour", "2 weeks",
// "1 hour 30 minutes") and Go syntax ("1h30m"). Months and years are refused,
// as are negative values and fractions of a second.
func ParseDuration(s string) (time.Duration, error) {
	text := strings.TrimSpace(s)
	if text == "" {
		return 0, errors.New("duration is empty")
	}
	var (
		d   time.Duration
		err error
	)
	switch {
	case text[0] == 'P' || text[0] == 'p' || strings.HasPrefix(text, "-P") || strings.HasPrefix(text, "-p"):
		d, err = parseISODuration(text)
	default:
		d, err = parseHumanDuration(text)
	}
	if err != nil {
		return 0, err
	}
	if d%time.Second != 0 {
		return 0, fmt.Errorf("%q has a fraction of a second; use whole seconds", s)
	}
	return d, nil
}

func parseISODuration(text string) (time.Duration, error) {
	upper := strings.ToUpper(text)
	if strings.HasPrefix(upper, "-") {
		return 0, fmt.Errorf("%q is negative; durations must be zero or more", text)
	}
	if !isoShape.MatchString(upper) || upper == "P" || strings.HasSuffix(upper, "T") {
		return 0, fmt.Errorf("%q is not an ISO-8601 duration; use fixed units such as PT30M, PT1H, P1D or P1W", text)
	}
	parsed, err := duration.Parse(upper)
	if err != nil {
		return 0, fmt.Errorf("parse duration %q: %w", text, err)
	}
	if parsed.Years != 0 || parsed.Months != 0 {
		return 0, errCalendarUnit
	}
	seconds := parsed.Weeks*7*86400 + parsed.Days*86400 + parsed.Hours*3600 + parsed.Minutes*60 + parsed.Seconds
	if seconds > maxDuration.Seconds() {
		return 0, fmt.Errorf("%q is longer than %d days", text, int(maxDuration.Hours()/24))
	}
	return parsed.ToTimeDuration(), nil
}

func parseHumanDuration(text string) (time.Duration, error) {
	if d, err := time.ParseDuration(text); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("%q is negative; durations must be zero or more", text)
		}
		if d > maxDuration {
			return 0, fmt.Errorf("%q is longer than %d days", text, int(maxDuration.Hours()/24))
		}
		return d, nil
	}
	rest := strings.ToLower(text)
	var seconds float64
	for rest != "" {
		m := humanPart.FindStringSubmatch(rest)
		if m == nil {
			return 0, fmt.Errorf("cannot read %q as a duration; use ISO-8601 (PT30M, P1D) or a form like \"30 minutes\" or \"1h30m\"", text)
		}
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, fmt.Errorf("parse duration %q: %w", text, err)
		}
		unit, ok := humanUnits[m[2]]
		switch {
		case calendarUnits[m[2]]:
			return 0, errCalendarUnit
		case !ok:
			return 0, fmt.Errorf("unknown unit %q in %q; use seconds, minutes, hours, days or weeks", m[2], text)
		}
		seconds += n * unit.Seconds()
		if seconds > maxDuration.Seconds() {
			return 0, fmt.Errorf("%q is longer than %d days", text, int(maxDuration.Hours()/24))
		}
		rest = rest[len(m[0]):]
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// FormatISODuration writes d in the canonical ISO-8601 form stored in specs:
// whole weeks as PnW, otherwise days and a time part ("P1D", "PT1H",
// "P1DT2H", "PT1M30S"); zero is "PT0S".
func FormatISODuration(d time.Duration) string {
	if d == 0 {
		return "PT0S"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		d = -d // the one value this cannot negate (minimum int64) is ~292 years, far beyond maxDuration
	}
	b.WriteByte('P')
	const day, week = 24 * time.Hour, 7 * 24 * time.Hour
	if d%week == 0 {
		fmt.Fprintf(&b, "%dW", d/week)
		return b.String()
	}
	if days := d / day; days > 0 {
		fmt.Fprintf(&b, "%dD", days)
		d -= days * day
	}
	if d == 0 {
		return b.String()
	}
	b.WriteByte('T')
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dH", h)
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dM", m)
		d -= m * time.Minute
	}
	if d > 0 {
		b.WriteString(strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
		b.WriteByte('S')
	}
	return b.String()
}
