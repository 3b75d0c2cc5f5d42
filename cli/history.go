package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/scheduling"
)

var historyFormats = []string{"table", "json", "jsonl"}

func runScheduleHistory(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule history <id>", "tideline schedule history daily-sync --all --output jsonl", e)
	limit := c.fs.Int("limit", scheduling.DefaultHistoryLimit, fmt.Sprintf("events per page, 1-%d", scheduling.MaxHistoryLimit))
	after := c.fs.Int64("after-sequence", 0, "start after this sequence (the next_cursor of a previous page)")
	all := c.fs.Bool("all", false, "page through every event after --after-sequence")
	output := outputFlag(c.fs, historyFormats...)
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, historyFormats...); err != nil {
		return err
	}
	if *limit < 1 || *limit > scheduling.MaxHistoryLimit {
		return usagef("invalid --limit %d: want 1-%d", *limit, scheduling.MaxHistoryLimit)
	}
	if *after < 0 {
		return usagef("invalid --after-sequence %d: want 0 or more", *after)
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()

	page, err := a.ScheduleHistoryPage(ctx, pos[0], client.HistoryOptions{AfterSequence: *after, Limit: *limit})
	if err != nil {
		return err
	}
	// --all follows the cursor until the stream ends; the result reads as
	// one page that has everything.
	for *all && page.HasMore {
		next, err := a.ScheduleHistoryPage(ctx, page.ScheduleID, client.HistoryOptions{AfterSequence: *page.NextCursor, Limit: *limit})
		if err != nil {
			return err
		}
		page.Events = append(page.Events, next.Events...)
		page.HasMore, page.NextCursor = next.HasMore, next.NextCursor
	}

	switch *output {
	case "json":
		return writeJSON(e.stdout, page)
	case "jsonl":
		for _, ev := range page.Events {
			if err := writeJSONLine(e.stdout, ev); err != nil {
				return err
			}
		}
		// The lines carry no cursor; say on stderr that the stream goes on.
		if page.HasMore {
			fmt.Fprintln(e.stderr, moreHint(*page.NextCursor))
		}
		return nil
	}
	if len(page.Events) == 0 {
		fmt.Fprintf(e.stdout, "No events after sequence %d.\n", *after)
		return nil
	}
	t := newTable(e.stdout, "Seq", "Event", "Recorded At", "Workflow Refs")
	for _, ev := range page.Events {
		t.row(strconv.FormatInt(ev.Sequence, 10), ev.EventType, scheduling.FormatTime(ev.RecordedAt.T()), workflowRefs(ev))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if page.HasMore {
		fmt.Fprintln(e.stdout, moreHint(*page.NextCursor))
	}
	return nil
}

func moreHint(cursor int64) string {
	return fmt.Sprintf("More events available — use --after-sequence %d or --all", cursor)
}

// workflowRefs names the instance and run an event is about.
func workflowRefs(ev apijson.Event) string {
	switch {
	case ev.WorkflowInstanceID != nil && ev.WorkflowRunID != nil:
		return *ev.WorkflowInstanceID + " (run " + *ev.WorkflowRunID + ")"
	case ev.WorkflowInstanceID != nil:
		return *ev.WorkflowInstanceID
	case ev.WorkflowRunID != nil:
		return "run " + *ev.WorkflowRunID
	}
	return "-"
}
