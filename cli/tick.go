package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/scheduling"
)

// maxTickLimit matches POST /tick.
const maxTickLimit = 1000

// tickOutcomes is the order of the summary line.
var tickOutcomes = []string{scheduling.OutcomeTriggered, scheduling.OutcomeDrained, scheduling.OutcomeBuffered,
	scheduling.OutcomeSkipped, scheduling.OutcomeFailed}

// runTick is one evaluation pass, for operators who drive Tideline from
// cron or a Kubernetes CronJob instead of the loop in `serve`.
func runTick(ctx context.Context, e env, args []string) error {
	c := newDBCommand("tick", "tideline tick --limit 500 --database postgres://tideline@db/tideline", e)
	limit := c.fs.Int("limit", scheduling.DefaultTickLimit, fmt.Sprintf("most schedules each phase (drain, fire) processes, 1-%d; due schedules of every namespace are processed", maxTickLimit))
	asJSON := c.fs.Bool("json", false, "print the rows as a JSON array (the shape of POST /tick's rows)")
	if _, err := c.parse(args); err != nil {
		return err
	}
	if *limit < 1 || *limit > maxTickLimit {
		return usagef("invalid --limit %d: want 1-%d", *limit, maxTickLimit)
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()

	rows, err := a.Tick(ctx, *limit)
	if err != nil {
		return explain(err)
	}
	if *asJSON {
		err = writeJSON(e.stdout, rows)
	} else {
		err = printTickRows(e.stdout, rows)
	}
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.Outcome == scheduling.OutcomeFailed {
			return ErrSilentFailure // the row says so; the cause is in the log
		}
	}
	return nil
}

func printTickRows(w io.Writer, rows []apijson.TickRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "No schedules due.")
		return err
	}
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Outcome]++
		name := r.ScheduleID
		if r.Namespace != "default" {
			name = r.Namespace + "/" + r.ScheduleID
		}
		switch {
		case r.Outcome == scheduling.OutcomeSkipped || r.Outcome == scheduling.OutcomeFailed:
			fmt.Fprintf(w, "[%s] %s (%s)\n", name, r.Outcome, strOrDash(r.Reason))
		case r.InstanceID != nil:
			fmt.Fprintf(w, "[%s] %s → %s\n", name, r.Outcome, *r.InstanceID)
		default:
			fmt.Fprintf(w, "[%s] %s\n", name, r.Outcome)
		}
	}
	_, err := fmt.Fprintf(w, "%s: %s\n", plural(len(rows), "schedule"), countSummary(tickOutcomes, counts))
	return err
}
