package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/scheduling"
)

// writeJSON prints v as indented JSON (--output json, tick --json).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	return nil
}

// writeJSONLine prints v on one line (--output jsonl).
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	return nil
}

// table writes aligned columns. Cells must not contain tabs or newlines;
// clean() makes free text safe.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// clean keeps user-supplied text on one table line.
func clean(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func strOrDash(s *string) string {
	if s == nil {
		return "-"
	}
	return orDash(*s)
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return scheduling.FormatTime(*t)
}

func apiTimeOrDash(t *apijson.Time) string {
	if t == nil {
		return "-"
	}
	return scheduling.FormatTime(t.T())
}

// pairsSummary is a map on one line: "a=1, b=2", sorted by key.
func pairsSummary(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}

// localTime adds the wall time in the schedule's zone when it is not UTC,
// which is how operators think about cron schedules.
func localTime(t time.Time, zone string) string {
	s := scheduling.FormatTime(t)
	if zone == "" || zone == "UTC" {
		return s
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return s
	}
	return s + " (" + t.In(loc).Format("2006-01-02 15:04 MST") + ")"
}

// specSummary is the one-cell form of a spec: "0 2 * * *; every PT1H".
func specSummary(spec apijson.Spec) string {
	parts := make([]string, 0, len(spec.CronExpressions)+len(spec.Intervals))
	parts = append(parts, spec.CronExpressions...)
	for _, iv := range spec.Intervals {
		parts = append(parts, intervalSummary(iv))
	}
	switch len(spec.At) {
	case 0:
	case 1:
		parts = append(parts, "at "+spec.At[0])
	default:
		parts = append(parts, fmt.Sprintf("%d at times", len(spec.At)))
	}
	return strings.Join(parts, "; ")
}

// scheduleStatusText is a schedule's status as list and describe print it: an
// active schedule with no occurrence left reads "active (ended)".
func scheduleStatusText(s *apijson.Schedule) string {
	if s.Ended {
		return s.Status + " (ended)"
	}
	return s.Status
}

func intervalSummary(iv apijson.Interval) string {
	s := "every " + iv.Every
	if iv.Offset != "" && iv.Offset != "PT0S" {
		s += " offset " + iv.Offset
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// countSummary is "2 triggered, 1 skipped": the non-zero counts in order.
func countSummary(order []string, counts map[string]int) string {
	parts := make([]string, 0, len(order))
	for _, k := range order {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[M ~map[K]V, K cmp.Ordered, V any](m M) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
