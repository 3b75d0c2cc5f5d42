package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/scheduling"
)

func backfillCommands() map[string]subcommand {
	return map[string]subcommand{
		"list":     {"list backfill jobs, newest first", runBackfillList},
		"describe": {"show a backfill job and its progress", runBackfillDescribe},
		"pause":    {"pause a running backfill job", runBackfillPause},
		"resume":   {"resume a paused backfill job from where it stopped", runBackfillResume},
		"cancel":   {"end a backfill job for good (the runs it started are left alone)", runBackfillCancel},
	}
}

// runBackfill dispatches `tideline backfill <verb>`.
func runBackfill(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "backfill", backfillCommands(), args)
}

// backfillWaitEvery is how often --wait reads the job's progress.
const backfillWaitEvery = time.Second

// startBackfillJob is `schedule backfill` without --dry-run: the job, then
// with --wait its progress until it ends. Direct (--database) mode works
// the job itself while it waits, so no server is needed; a server working
// the same database shares the slices with it.
func startBackfillJob(ctx context.Context, e env, a backend, id string, opts client.BackfillJobOptions, wait bool, output string) error {
	job, err := a.StartBackfill(ctx, id, opts)
	if err != nil {
		return err
	}
	if output == "json" && !wait {
		return writeJSON(e.stdout, apijson.BackfillJobEnvelope{Backfill: *job})
	}
	if output != "json" {
		fmt.Fprintf(e.stdout, "Backfill %s of schedule %s: %s.\n", job.ID, job.ScheduleID, progressLine(job))
	}
	if wait {
		last := progressLine(job)
		for job.Status == "running" || job.Status == "paused" {
			if err := a.workBackfills(ctx); err != nil {
				return err
			}
			if job, err = a.GetBackfill(ctx, job.ID); err != nil {
				return err
			}
			if line := progressLine(job); line != last && output != "json" {
				fmt.Fprintln(e.stdout, line)
				last = line
			}
			if job.Status != "running" && job.Status != "paused" {
				break
			}
			t := time.NewTimer(backfillWaitEvery)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if output == "json" {
			if err := writeJSON(e.stdout, apijson.BackfillJobEnvelope{Backfill: *job}); err != nil {
				return err
			}
		}
	} else if output != "json" && (job.Status == "running" || job.Status == "paused") {
		fmt.Fprintf(e.stdout, "Follow it with 'tideline backfill describe %s'.\n", job.ID)
	}
	if job.Status == "failed" || job.Failed > 0 {
		return ErrSilentFailure // printed above; the causes are logged
	}
	return nil
}

// progressLine is one line of a job's progress: status, counts, ETA.
func progressLine(j *apijson.BackfillJob) string {
	pct := 100
	if j.Total > 0 {
		pct = int((j.Total - j.Remaining) * 100 / j.Total)
	}
	line := fmt.Sprintf("%s, %d%%: %d started · %d skipped · %d remaining of %d", j.Status, pct, j.Started, j.Skipped, j.Remaining, j.Total)
	if j.Failed > 0 {
		line += fmt.Sprintf(" · %d failed", j.Failed)
	}
	if j.Buffered > 0 {
		line += fmt.Sprintf(" · %d buffered", j.Buffered)
	}
	if j.ETA != nil && j.Remaining > 0 {
		line += " · ETA " + scheduling.FormatTime(j.ETA.T())
	}
	if j.Error != nil {
		line += " (" + *j.Error + ")"
	}
	return line
}

func runBackfillList(ctx context.Context, e env, args []string) error {
	c := newDBCommand("backfill list", "tideline backfill list --schedule daily-sync --status running", e)
	scheduleID := c.fs.String("schedule", "", "only jobs of this schedule")
	status := c.fs.String("status", "", "only jobs in this status: running, paused, completed, cancelled, failed")
	limit := c.fs.Int("limit", 50, "jobs per page, 1-200")
	all := c.fs.Bool("all", false, "page through every matching job")
	output := outputFlag(c.fs, listFormats...)
	if _, err := c.parse(args); err != nil {
		return err
	}
	if err := checkOutput(*output, listFormats...); err != nil {
		return err
	}
	if *limit < 1 || *limit > scheduling.MaxBackfillPage {
		return usagef("invalid --limit %d: want 1-%d", *limit, scheduling.MaxBackfillPage)
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	opts := client.BackfillListOptions{ScheduleID: *scheduleID, Status: *status, Limit: *limit}
	jobs := []apijson.BackfillJob{}
	var more bool
	for {
		page, err := a.ListBackfillsPage(ctx, opts)
		if err != nil {
			return err
		}
		jobs = append(jobs, page.Backfills...)
		more = page.HasMore && page.NextCursor != nil
		if !*all || !more {
			break
		}
		opts.Cursor = *page.NextCursor
	}
	switch *output {
	case "json":
		return writeJSON(e.stdout, jobs)
	case "jsonl":
		for _, j := range jobs {
			if err := writeJSONLine(e.stdout, j); err != nil {
				return err
			}
		}
		return nil
	}
	if len(jobs) == 0 {
		fmt.Fprintln(e.stdout, "No backfills.")
		return nil
	}
	t := newTable(e.stdout, "Backfill ID", "Schedule", "Status", "From", "To", "Started", "Skipped", "Remaining", "Total", "ETA")
	for _, j := range jobs {
		t.row(j.ID, j.ScheduleID, j.Status, scheduling.FormatTime(j.From.T()), scheduling.FormatTime(j.To.T()),
			strconv.FormatInt(j.Started, 10), strconv.FormatInt(j.Skipped, 10), strconv.FormatInt(j.Remaining, 10),
			strconv.FormatInt(j.Total, 10), apiTimeOrDash(j.ETA))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if more && !*all {
		fmt.Fprintln(e.stdout, "More backfills available — use --all")
	}
	return nil
}

func runBackfillDescribe(ctx context.Context, e env, args []string) error {
	c := newDBCommand("backfill describe <backfill-id>", "tideline backfill describe 01KP2M3N4Q5R6S7T8V9W0XYZAB", e)
	output := outputFlag(c.fs, describeFormats...)
	pos, err := c.parse(args, "<backfill-id>")
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
	j, err := a.GetBackfill(ctx, pos[0])
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, apijson.BackfillJobEnvelope{Backfill: *j})
	}
	return describeBackfill(e, j)
}

func describeBackfill(e env, j *apijson.BackfillJob) error {
	orDash := func(p *int) string {
		if p == nil {
			return "-"
		}
		return strconv.Itoa(*p)
	}
	t := newTable(e.stdout, "Backfill:", j.ID)
	t.row("Schedule:", j.ScheduleID)
	t.row("Namespace:", j.Namespace)
	t.row("Status:", j.Status)
	t.row("Window:", scheduling.FormatTime(j.From.T())+" to "+scheduling.FormatTime(j.To.T()))
	t.row("Overlap policy:", strOrDash(j.OverlapPolicy))
	t.row("Max per minute:", orDash(j.MaxPerMinute))
	t.row("Max concurrent runs:", orDash(j.MaxConcurrentRuns))
	t.row("Progress:", progressLine(j))
	t.row("Cursor:", apiTimeOrDash(j.Cursor))
	t.row("ETA:", apiTimeOrDash(j.ETA))
	t.row("Created by:", orNone(j.CreatedBy))
	t.row("Reason:", orNone(clean(j.Reason)))
	t.row("Created at:", scheduling.FormatTime(j.CreatedAt.T()))
	t.row("Finished at:", apiTimeOrDash(j.FinishedAt))
	if j.Error != nil {
		t.row("Error:", clean(*j.Error))
	}
	return t.flush()
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runBackfillPause(ctx context.Context, e env, args []string) error {
	return backfillAction(ctx, e, args, "pause", "Paused", backend.PauseBackfill)
}

func runBackfillResume(ctx context.Context, e env, args []string) error {
	return backfillAction(ctx, e, args, "resume", "Resumed", backend.ResumeBackfill)
}

func runBackfillCancel(ctx context.Context, e env, args []string) error {
	return backfillAction(ctx, e, args, "cancel", "Cancelled", backend.CancelBackfill)
}

func backfillAction(ctx context.Context, e env, args []string, verb, done string,
	action func(b backend, ctx context.Context, id, reason string) (*apijson.BackfillJob, error)) error {
	c := newDBCommand("backfill "+verb+" <backfill-id>", "tideline backfill "+verb+` 01KP2M3N4Q5R6S7T8V9W0XYZAB --reason "workers busy"`, e).withActor()
	reason := c.fs.String("reason", "", "why (at most 4,096 characters)")
	pos, err := c.parse(args, "<backfill-id>")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	j, err := action(a, ctx, pos[0], *reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s backfill %s of schedule %s: %s.\n", done, j.ID, j.ScheduleID, progressLine(j))
	return nil
}
