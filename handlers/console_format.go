package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
	"github.com/tidelinehq/tideline/views"
)

// Formatting for the console: instants in the schedule's zone plus a
// relative form, specs as sentences, payloads as indented JSON.

const (
	minuteLayout = "2006-01-02 15:04 MST"
	secondLayout = "2006-01-02 15:04:05 MST"
)

// zoneOf returns the location named by an IANA zone; UTC when unknown.
func zoneOf(name string) *time.Location {
	if name == "" || name == "UTC" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// moment formats t in loc with its distance from now ("in 4 min").
func moment(t time.Time, loc *time.Location, now time.Time) views.Moment {
	if t.IsZero() {
		return views.Moment{}
	}
	return views.Moment{Text: t.In(loc).Format(minuteLayout), ISO: scheduling.FormatTime(t), Relative: relative(t, now)}
}

func momentPtr(t *time.Time, loc *time.Location, now time.Time) views.Moment {
	if t == nil {
		return views.Moment{}
	}
	return moment(*t, loc, now)
}

// absMoment is an instant without the relative part (lists of occurrences,
// where "in 3 days" on every line is noise).
func absMoment(t time.Time, loc *time.Location) views.Moment {
	if t.IsZero() {
		return views.Moment{}
	}
	return views.Moment{Text: t.In(loc).Format(minuteLayout), ISO: scheduling.FormatTime(t)}
}

// eventMoment keeps the seconds: audit events often share a minute.
func eventMoment(t time.Time, loc *time.Location, now time.Time) views.Moment {
	m := moment(t, loc, now)
	if m.Text != "" {
		m.Text = t.In(loc).Format(secondLayout)
	}
	return m
}

// relative says how far t is from now: "in 4 min", "3 min ago", "now".
func relative(t, now time.Time) string {
	d := t.Sub(now)
	future := d > 0
	if d < 0 {
		d = -d
	}
	var amount string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		amount = fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		amount = fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		amount = fmt.Sprintf("%d h", int(d/time.Hour))
	default:
		amount = fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	}
	if future {
		return "in " + amount
	}
	return amount + " ago"
}

// durationText is a length of time as an operator reads it: "850 ms",
// "2.3 s", "3 min 4 s", "1 d 18 h".
func durationText(d time.Duration) string {
	if d < 0 {
		return "−" + durationText(-d)
	}
	// Two units at most, the smaller left out when it is zero: "4 min",
	// "3 h 5 min", "1 d 18 h". A precise value is in the API.
	two := func(big int64, bigUnit string, small int64, smallUnit string) string {
		if small == 0 {
			return fmt.Sprintf("%d %s", big, bigUnit)
		}
		return fmt.Sprintf("%d %s %d %s", big, bigUnit, small, smallUnit)
	}
	const day = 24 * time.Hour
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		return two(int64(d/time.Minute), "min", int64(d%time.Minute/time.Second), "s")
	case d < day:
		return two(int64(d/time.Hour), "h", int64(d%time.Hour/time.Minute), "min")
	}
	return two(int64(d/day), "d", int64(d%day/time.Hour), "h")
}

// describeSpec compiles a stored spec for its description; cheap enough to
// do per registry row.
func describeSpec(spec models.Spec) (string, string) {
	compiled, err := timespec.CompileForText(spec)
	if err != nil {
		return "invalid spec", spec.Timezone
	}
	return compiled.Text().Sentence(), compiled.Text().Zone
}

func sortedPairs(m map[string]string) []views.KV {
	out := make([]views.KV, 0, len(m))
	for k, v := range m {
		out = append(out, views.KV{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// prettyJSON indents a JSON document for a <pre>; "" for no document.
func prettyJSON(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	// Decoded and encoded again rather than json.Indent, so that "<" reads
	// as "<" and not "\u003c" (the template escapes it for HTML anyway).
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func prettyValue(v any) string {
	if v == nil {
		return ""
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return prettyJSON(raw)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func secondsText(p *int64) string {
	if p == nil {
		return ""
	}
	if *p < 60 {
		return strconv.FormatInt(*p, 10) + " s"
	}
	// "1 h", "2 h 30 min": a timeout reads like the other durations.
	return durationText(time.Duration(*p) * time.Second)
}

func int64Text(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

// retryPolicyText summarises a retry policy: "5 attempts, 2 s × 2.0 up to
// 100 s; never after: validation"; "" for none.
func retryPolicyText(p *models.RetryPolicy) string {
	if p == nil || p.MaxAttempts == nil || *p.MaxAttempts <= 1 {
		return ""
	}
	text := fmt.Sprintf("%d attempts, backoff %d s × %.1f up to %d s", *p.MaxAttempts,
		deref64(p.InitialIntervalSeconds), derefFloat(p.BackoffCoefficient), deref64(p.MaxIntervalSeconds))
	if len(p.NonRetryableErrorTypes) > 0 {
		text += "; never retried: " + strings.Join(p.NonRetryableErrorTypes, ", ")
	}
	return text
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func derefFloat(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func intText(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}
