package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/scheduling"
)

var occurrenceFormats = []string{"table", "json"}

// runScheduleOccurrences prints the occurrence ledger of a schedule: one
// line per occurrence with its fate, every page of the window.
func runScheduleOccurrences(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule occurrences <id>", "tideline schedule occurrences daily-sync --from 2026-07-01T00:00:00Z --output json", e)
	fromText := c.fs.String("from", "", "start of the window, RFC 3339, inclusive (default: 7 days before --to)")
	toText := c.fs.String("to", "", "end of the window, RFC 3339, exclusive (default: now)")
	output := outputFlag(c.fs, occurrenceFormats...)
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, occurrenceFormats...); err != nil {
		return err
	}
	var opts client.OccurrencesOptions
	if *fromText != "" {
		if opts.From, err = parseTimeFlag("from", *fromText); err != nil {
			return err
		}
	}
	if *toText != "" {
		if opts.To, err = parseTimeFlag("to", *toText); err != nil {
			return err
		}
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()

	page, err := a.ScheduleOccurrencesPage(ctx, pos[0], opts)
	if err != nil {
		return err
	}
	// The whole window reads as one page; the server pages by 1,000.
	for page.HasMore {
		opts.Cursor = *page.NextCursor
		next, err := a.ScheduleOccurrencesPage(ctx, pos[0], opts)
		if err != nil {
			return err
		}
		page.Occurrences = append(page.Occurrences, next.Occurrences...)
		page.HasMore, page.NextCursor = next.HasMore, next.NextCursor
	}
	if *output == "json" {
		return writeJSON(e.stdout, page)
	}
	if len(page.Occurrences) == 0 {
		fmt.Fprintln(e.stdout, "No occurrences in the window.")
		return nil
	}
	counts := map[string]int{}
	t := newTable(e.stdout, "Occurrence", "Wall Time ("+page.Timezone+")", "Fate", "Detail")
	for _, o := range page.Occurrences {
		counts[o.Fate]++
		wall := o.WallTime
		if o.DSTShiftSeconds != 0 {
			wall += fmt.Sprintf(" (DST +%ds)", o.DSTShiftSeconds)
		} else if o.DSTRepeated {
			wall += " (repeated hour)"
		}
		t.row(scheduling.FormatTime(o.OccurrenceTime.T()), wall, o.Fate, occurrenceDetail(o.RunID, o.RunStatus, o.Reason))
	}
	if err := t.flush(); err != nil {
		return err
	}
	var summary []string
	for _, f := range scheduling.Fates {
		if n := counts[f]; n > 0 {
			summary = append(summary, fmt.Sprintf("%d %s", n, f))
		}
	}
	fmt.Fprintln(e.stdout, strings.Join(summary, ", "))
	return nil
}

func occurrenceDetail(runID, status, reason *string) string {
	switch {
	case runID != nil:
		s := "run " + *runID
		if status != nil {
			s += " " + *status
		}
		return s
	case reason != nil:
		return *reason
	}
	return "-"
}
