package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/scheduling"
)

func runsCommands() map[string]subcommand {
	return map[string]subcommand{
		"list":      {"list runs, newest first", runRunsList},
		"describe":  {"show a run and its history", runRunsDescribe},
		"cancel":    {"ask a run to stop (its worker sees it on the next heartbeat)", runRunsCancel},
		"terminate": {"end a run at once", runRunsTerminate},
		"retry":     {"give a failed or timed-out run one more attempt now (the same run)", runRunsRetry},
		"again":     {"start a new manual run of the run's schedule with the run's input", runRunsAgain},
	}
}

// runRuns dispatches `tideline runs <verb>`.
func runRuns(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "runs", runsCommands(), args)
}

// dispatch runs the verb of a command group.
func dispatch(ctx context.Context, e env, group string, subs map[string]subcommand, args []string) error {
	if len(args) == 0 {
		printSubcommands(e, group, subs, false)
		return usagef("missing %s command", group)
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		printSubcommands(e, group, subs, true)
		return ErrHelpShown
	}
	sub, ok := subs[name]
	if !ok {
		printSubcommands(e, group, subs, false)
		return usagef("unknown %s command %q", group, name)
	}
	return explain(sub.run(ctx, e, args[1:]))
}

func runRunsList(ctx context.Context, e env, args []string) error {
	c := newDBCommand("runs list", "tideline runs list --schedule daily-sync --status failed,timed_out", e)
	scheduleID := c.fs.String("schedule", "", "only runs of this schedule")
	status := c.fs.String("status", "", "comma-separated statuses: pending, running, completed, failed, cancelled, terminated, timed_out")
	limit := c.fs.Int("limit", 50, "runs per page, 1-500")
	all := c.fs.Bool("all", false, "page through every matching run")
	output := outputFlag(c.fs, listFormats...)
	if _, err := c.parse(args); err != nil {
		return err
	}
	if err := checkOutput(*output, listFormats...); err != nil {
		return err
	}
	if *limit < 1 || *limit > 500 {
		return usagef("invalid --limit %d: want 1-500", *limit)
	}
	var statuses []string
	for s := range strings.SplitSeq(*status, ",") {
		if s = strings.TrimSpace(s); s != "" {
			statuses = append(statuses, s)
		}
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	opts := client.RunListOptions{ScheduleID: *scheduleID, Statuses: statuses, Limit: *limit}
	runs := []apijson.Run{}
	var more bool
	for {
		page, err := a.ListRunsPage(ctx, opts)
		if err != nil {
			return err
		}
		runs = append(runs, page.Runs...)
		more = page.HasMore && page.NextCursor != nil
		if !*all || !more {
			break
		}
		opts.Cursor = *page.NextCursor
	}
	switch *output {
	case "json":
		return writeJSON(e.stdout, runs)
	case "jsonl":
		for _, r := range runs {
			if err := writeJSONLine(e.stdout, r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintln(e.stdout, "No runs.")
		return nil
	}
	t := newTable(e.stdout, "Run ID", "Schedule", "Workflow Type", "Status", "Attempt", "Occurrence", "Created At", "Finished At")
	for _, r := range runs {
		t.row(r.RunID, strOrDash(r.ScheduleID), clean(r.WorkflowType), r.Status, strconv.Itoa(r.Attempt),
			apiTimeOrDash(r.OccurrenceTime), scheduling.FormatTime(r.CreatedAt.T()), apiTimeOrDash(r.FinishedAt))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if more && !*all {
		fmt.Fprintln(e.stdout, "More runs available — use --all")
	}
	return nil
}

func runRunsDescribe(ctx context.Context, e env, args []string) error {
	c := newDBCommand("runs describe <run-id>", "tideline runs describe 01KP2M3N4Q5R6S7T8V9W0XYZAB --output json", e)
	output := outputFlag(c.fs, describeFormats...)
	pos, err := c.parse(args, "<run-id>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, describeFormats...); err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	r, err := a.GetRun(ctx, pos[0])
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, r)
	}
	t := newTable(e.stdout, "Run:", r.RunID)
	t.row("Instance:", r.InstanceID)
	t.row("Namespace:", r.Namespace)
	t.row("Schedule:", strOrDash(r.ScheduleID))
	t.row("Workflow type:", clean(r.WorkflowType))
	t.row("Status:", r.Status)
	t.row("Trigger:", r.Trigger)
	t.row("Attempt:", strconv.Itoa(r.Attempt))
	t.row("Route:", r.Connection+"/"+r.Queue)
	t.row("Occurrence:", apiTimeOrDash(r.OccurrenceTime))
	t.row("Created at:", scheduling.FormatTime(r.CreatedAt.T()))
	t.row("Started at:", apiTimeOrDash(r.StartedAt))
	t.row("Finished at:", apiTimeOrDash(r.FinishedAt))
	t.row("Worker:", strOrDash(r.WorkerID))
	if r.CancelRequested {
		t.row("Cancel requested:", "yes")
	}
	if r.FailureMessage != nil {
		t.row("Failure:", clean(strOrDash(r.FailureType)+": "+*r.FailureMessage))
	}
	if string(r.Input) != "null" {
		t.row("Input:", clean(canonicalJSON(r.Input)))
	}
	if string(r.Output) != "null" {
		t.row("Output:", clean(canonicalJSON(r.Output)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(r.Attempts) > 0 {
		fmt.Fprintln(e.stdout, "\nAttempts:")
		t := newTable(e.stdout, "  #", "Outcome", "HTTP", "Duration", "Started At", "Error")
		for _, at := range r.Attempts {
			status, took, failure := "-", "-", "-"
			if at.HTTPStatus != nil {
				status = strconv.Itoa(*at.HTTPStatus)
			}
			if at.DurationMs != nil {
				took = (time.Duration(*at.DurationMs) * time.Millisecond).String()
			}
			if at.ErrorType != "" {
				failure = clean(at.ErrorType + ": " + at.Message)
			}
			t.row("  "+strconv.Itoa(at.Attempt), at.Outcome, status, took, scheduling.FormatTime(at.StartedAt.T()), failure)
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(r.History) > 0 {
		fmt.Fprintln(e.stdout, "\nHistory:")
		t := newTable(e.stdout, "  Seq", "Event", "Recorded At")
		for _, ev := range r.History {
			t.row("  "+strconv.FormatInt(ev.Sequence, 10), ev.EventType, scheduling.FormatTime(ev.RecordedAt.T()))
		}
		return t.flush()
	}
	return nil
}

func runRunsCancel(ctx context.Context, e env, args []string) error {
	return runAction(ctx, e, args, "cancel", "Cancel requested for run %s; its status is now %s.\n", backend.CancelRun)
}

func runRunsTerminate(ctx context.Context, e env, args []string) error {
	return runAction(ctx, e, args, "terminate", "Terminated run %s; its status is now %s.\n", backend.TerminateRun)
}

func runRunsRetry(ctx context.Context, e env, args []string) error {
	return runAction(ctx, e, args, "retry", "Retried run %s; its status is now %s.\n", backend.RetryRun)
}

func runRunsAgain(ctx context.Context, e env, args []string) error {
	c := newDBCommand("runs again <run-id>", `tideline runs again 01KP2M3N4Q5R6S7T8V9W0XYZAB --reason "replay after the fix"`, e).withActor()
	reason := c.fs.String("reason", "", "why, recorded with the new run's trigger")
	pos, err := c.parse(args, "<run-id>")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	res, err := a.RunAgain(ctx, pos[0], *reason)
	if err != nil {
		return err
	}
	switch res.Outcome {
	case scheduling.OutcomeTriggered:
		fmt.Fprintf(e.stdout, "Started run %s again as run %s.\n", pos[0], strOrDash(res.RunID))
	case scheduling.OutcomeBuffered:
		fmt.Fprintf(e.stdout, "Buffered a run again of run %s (buffer depth %d).\n", pos[0], res.BufferDepth)
	default:
		fmt.Fprintf(e.stdout, "Did not start run %s again: %s (%s).\n", pos[0], res.Outcome, strOrDash(res.Reason))
	}
	return nil
}

func runAction(ctx context.Context, e env, args []string, verb, done string,
	action func(b backend, ctx context.Context, runID, reason string) (*apijson.Run, error)) error {
	c := newDBCommand("runs "+verb+" <run-id>", "tideline runs "+verb+` 01KP2M3N4Q5R6S7T8V9W0XYZAB --reason "stuck"`, e).withActor()
	reason := c.fs.String("reason", "", "why, recorded in the run's history")
	pos, err := c.parse(args, "<run-id>")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	r, err := action(a, ctx, pos[0], *reason)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf(done, r.RunID, r.Status)
	if verb == "cancel" && r.Status == "cancelled" {
		msg = strings.TrimSuffix(msg, ".\n") + " (a pending run stops at once).\n"
	}
	fmt.Fprint(e.stdout, msg)
	return nil
}
