package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

func scheduleCommands() map[string]subcommand {
	return map[string]subcommand{
		"list":     {"list schedules", runScheduleList},
		"add":      {"create a schedule", runScheduleAdd},
		"describe": {"show a schedule, its description and next fire times", runScheduleDescribe},
		"pause":    {"stop a schedule from firing", runSchedulePause},
		"resume":   {"restart a paused schedule from now (no catch-up)", runScheduleResume},
		"trigger":  {"fire a schedule now", runScheduleTrigger},
		"backfill": {"start the occurrences of a past window", runScheduleBackfill},
		"remove":   {"delete a schedule (its history stays readable)", runScheduleRemove},
		"history":  {"show a schedule's audit events", runScheduleHistory},
	}
}

// runSchedule dispatches `tideline schedule <verb>`.
func runSchedule(ctx context.Context, e env, args []string) error {
	subs := scheduleCommands()
	if len(args) == 0 {
		printSubcommands(e, "schedule", subs, false)
		return usagef("missing schedule command")
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		printSubcommands(e, "schedule", subs, true)
		return ErrHelpShown
	}
	sub, ok := subs[name]
	if !ok {
		printSubcommands(e, "schedule", subs, false)
		return usagef("unknown schedule command %q", name)
	}
	return explain(sub.run(ctx, e, args[1:]))
}

// listPageSize is how many schedules one List call fetches; list prints
// every page.
const listPageSize = 200

var listFormats = []string{"table", "json", "jsonl"}

func runScheduleList(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule list", "tideline schedule list --status paused --output json", e)
	status := c.fs.String("status", "", "comma-separated statuses: active, paused, deleted, or all (default active,paused)")
	text := c.fs.String("search", "", "only schedules whose ID, note or workflow type contains this text")
	workflowType := c.fs.String("workflow-type", "", "only schedules of this workflow type")
	label := c.fs.String("label", "", "only schedules with this label, as key:value")
	output := outputFlag(c.fs, listFormats...)
	if _, err := c.parse(args); err != nil {
		return err
	}
	if err := checkOutput(*output, listFormats...); err != nil {
		return err
	}
	var statuses []string
	for s := range strings.SplitSeq(*status, ",") {
		switch s = strings.TrimSpace(s); s {
		case "":
		case "all":
			statuses = append(statuses, models.StatusActive, models.StatusPaused, models.StatusDeleted)
		case models.StatusActive, models.StatusPaused, models.StatusDeleted:
			statuses = append(statuses, s)
		default:
			return usagef("invalid --status %q: want active, paused, deleted or all", s)
		}
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()

	filter := scheduling.ListFilter{Namespace: c.cfg.namespaceOrDefault(), Statuses: statuses, Text: *text,
		WorkflowType: *workflowType, Label: *label, Limit: listPageSize}
	var all []models.Schedule
	for {
		page, err := a.service.List(ctx, filter)
		if err != nil {
			return err
		}
		all = append(all, page.Schedules...)
		if !page.HasMore {
			break
		}
		filter.Cursor = page.NextCursor
	}

	switch *output {
	case "json":
		out := make([]apijson.Schedule, 0, len(all))
		for i := range all {
			out = append(out, apijson.FromSchedule(&all[i]))
		}
		return writeJSON(e.stdout, out)
	case "jsonl":
		for i := range all {
			if err := writeJSONLine(e.stdout, apijson.FromSchedule(&all[i])); err != nil {
				return err
			}
		}
		return nil
	}
	if len(all) == 0 {
		fmt.Fprintf(e.stdout, "No schedules in namespace %s.\n", filter.Namespace)
		return nil
	}
	t := newTable(e.stdout, "Schedule ID", "Status", "Workflow Type", "Spec", "Timezone", "Overlap", "Next Fire At", "Last Fired At", "Fires")
	for _, s := range all {
		next := timeOrDash(s.NextFireAt)
		if s.Status != models.StatusActive {
			next = "-" // a paused schedule keeps a stale value; it will not fire then
		}
		t.row(s.ScheduleID, s.Status, clean(s.Action.WorkflowType), clean(specSummary(s.Spec)), orDash(s.Spec.Timezone),
			s.OverlapPolicy, next, timeOrDash(s.LastFiredAt), strconv.FormatInt(s.FiresCount, 10))
	}
	return t.flush()
}

func runScheduleAdd(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule add <id>", `tideline schedule add daily-sync --workflow-type sync.Daily --cron "0 2 * * *" --timezone America/New_York`, e).withActor()
	var crons, everys stringList
	workflowType := c.fs.String("workflow-type", "", "workflow type to start (required)")
	c.fs.Var(&crons, "cron", "cron expression, 5 fields or @daily… (repeatable)")
	c.fs.Var(&everys, "every", `fixed interval: ISO-8601 (PT1H, P1D) or "1 hour", "30 minutes" (repeatable)`)
	timezone := c.fs.String("timezone", "", "IANA zone the cron expressions are read in (default UTC)")
	overlap := c.fs.String("overlap", "", "overlap policy: skip, buffer_one, buffer_all, allow_all, cancel_other or terminate_other (default skip)")
	queue := c.fs.String("queue", "", "queue of the started runs (default: the workflow type's, then the global one)")
	connection := c.fs.String("connection", "", "connection of the started runs (default: the workflow type's, then the global one)")
	jitter := c.fs.String("jitter", "0", `random delay added to each fire, up to this much: seconds or a duration ("30s", "PT1M")`)
	maxRuns := c.fs.Int64("max-runs", 0, "delete the schedule after this many runs (default unlimited)")
	input := c.fs.String("input", "", `workflow input as JSON, e.g. '{"full": true}'`)
	paused := c.fs.Bool("paused", false, "create the schedule paused")
	note := c.fs.String("note", "", "free-text note shown with the schedule")
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	if *workflowType == "" {
		return usagef("missing --workflow-type")
	}
	if len(crons) == 0 && len(everys) == 0 {
		return usagef("give at least one --cron or --every")
	}
	in := scheduling.CreateInput{
		Namespace: c.cfg.namespaceOrDefault(), ScheduleID: pos[0],
		Spec:          models.Spec{CronExpressions: []string(crons), Timezone: *timezone},
		Action:        models.Action{WorkflowType: *workflowType},
		OverlapPolicy: *overlap, Note: *note, Paused: *paused,
	}
	for _, every := range everys {
		d, err := scheduling.ParseDuration(every)
		if err != nil {
			return usagef("invalid --every %q: %v", every, err)
		}
		in.Spec.Intervals = append(in.Spec.Intervals, models.Interval{Every: scheduling.FormatISODuration(d)})
	}
	if in.JitterSeconds, err = parseJitter(*jitter); err != nil {
		return err
	}
	if c.isSet("max-runs") {
		in.MaxRuns = maxRuns
	}
	if c.isSet("queue") {
		in.Queue = queue
	}
	if c.isSet("connection") {
		in.Connection = connection
	}
	if *input != "" {
		dec := json.NewDecoder(bytes.NewReader([]byte(*input)))
		dec.UseNumber() // keep big integers exact
		var doc any
		if err := dec.Decode(&doc); err != nil || dec.More() {
			return usagef("invalid --input: want one JSON value, e.g. '{\"full\": true}'")
		}
		in.Action.Input = json.RawMessage(*input)
	}

	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	sch, err := a.service.Create(ctx, in, c.commandContext(""))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Created schedule %s (%s) in namespace %s.\n", sch.ScheduleID, sch.Status, sch.Namespace)
	if sch.Status == models.StatusActive && sch.NextFireAt != nil {
		fmt.Fprintf(e.stdout, "Next fire at: %s\n", localTime(*sch.NextFireAt, sch.Spec.Timezone))
	}
	return nil
}

// parseJitter accepts whole seconds or a duration.
func parseJitter(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	d, err := scheduling.ParseDuration(s)
	if err != nil {
		return 0, usagef("invalid --jitter %q: %v", s, err)
	}
	return int(d / time.Second), nil
}

var describeFormats = []string{"text", "json"}

func runScheduleDescribe(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule describe <id>", "tideline schedule describe daily-sync --output json", e)
	output := outputFlag(c.fs, describeFormats...)
	pos, err := c.parse(args, "<id>")
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
	d, err := a.service.Describe(ctx, c.cfg.namespaceOrDefault(), pos[0])
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, apijson.FromDescription(d))
	}
	return printDescription(e, d)
}

func printDescription(e env, d *scheduling.Description) error {
	s := d.Schedule
	zone := s.Spec.Timezone
	t := newTable(e.stdout, "Schedule:", s.ScheduleID)
	t.row("Namespace:", s.Namespace)
	t.row("Status:", s.Status)
	t.row("Workflow type:", clean(s.Action.WorkflowType))
	if s.Action.WorkflowClass != "" {
		t.row("Workflow class:", clean(s.Action.WorkflowClass))
	}
	for _, cron := range s.Spec.CronExpressions {
		t.row("Cron:", clean(cron))
	}
	for _, iv := range s.Spec.Intervals {
		t.row("Interval:", intervalSummary(iv))
	}
	t.row("Timezone:", orDash(zone))
	t.row("Description:", clean(d.SpecDescription))
	t.row("Overlap policy:", s.OverlapPolicy)
	t.row("Jitter:", fmt.Sprintf("%ds", s.JitterSeconds))
	maxRuns := "unlimited"
	if s.MaxRuns != nil {
		maxRuns = strconv.FormatInt(*s.MaxRuns, 10)
		if s.RemainingActions != nil {
			maxRuns += fmt.Sprintf(" (%d remaining)", *s.RemainingActions)
		}
	}
	t.row("Max runs:", maxRuns)
	t.row("Connection:", strOrDash(s.Connection))
	t.row("Queue:", strOrDash(s.Queue))
	if s.Action.Input != nil {
		t.row("Input:", clean(canonicalJSON(s.Action.Input)))
	}
	t.row("Note:", orDash(clean(s.Note)))
	t.row("Fires:", fmt.Sprintf("%d (%d failed, %d skipped)", s.FiresCount, s.StartFailuresCount, s.SkippedTriggerCount))
	if h := s.Health; h.FailuresCount > 0 {
		t.row("Failed runs:", fmt.Sprintf("%d (%d in a row)", h.FailuresCount, h.ConsecutiveFailures))
	}
	if h := s.Health; h.LastRunID != nil {
		last := *h.LastRunID + " " + strOrDash(h.LastRunStatus) + " at " + timeOrDash(h.LastRunFinishedAt)
		if h.LastRunError != nil {
			last += ": " + clean(*h.LastRunError)
		}
		t.row("Last run:", last)
	}
	if s.PauseAfterFailures != nil {
		t.row("Pause after:", fmt.Sprintf("%d consecutive failures", *s.PauseAfterFailures))
	}
	if s.LastSkipReason != nil {
		t.row("Last skip:", *s.LastSkipReason+" at "+timeOrDash(s.LastSkippedAt))
	}
	t.row("Last fired at:", timeOrDash(s.LastFiredAt))
	t.row("Latest instance:", strOrDash(s.LatestInstanceID))
	t.row("Latest run:", strOrDash(s.LatestRunID))
	if len(s.BufferedActions) > 0 {
		t.row("Buffered fires:", strconv.Itoa(len(s.BufferedActions)))
	}
	if s.PausedAt != nil && s.Status == models.StatusPaused {
		t.row("Paused at:", timeOrDash(s.PausedAt))
		t.row("Paused by:", strOrDash(s.PausedBy))
		t.row("Pause reason:", clean(strOrDash(s.PauseReason)))
		if s.PausedUntil != nil {
			t.row("Paused until:", localTime(*s.PausedUntil, zone))
		}
	}
	t.row("Created at:", scheduling.FormatTime(s.CreatedAt))
	t.row("Updated at:", scheduling.FormatTime(s.UpdatedAt))
	if s.Status == models.StatusActive {
		next := "never"
		if s.NextFireAt != nil {
			next = localTime(*s.NextFireAt, zone)
		}
		t.row("Next fire at:", next)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(d.FutureFireTimes) > 0 {
		fmt.Fprintln(e.stdout, "\nNext fire times:")
		for _, ft := range d.FutureFireTimes {
			fmt.Fprintf(e.stdout, "  %s\n", localTime(ft, zone))
		}
	}
	if len(s.RecentActions) > 0 {
		fmt.Fprintln(e.stdout, "\nRecent actions (newest first):")
		t := newTable(e.stdout, "  Outcome", "Occurrence", "Instance", "Reason")
		for _, ra := range s.RecentActions {
			t.row("  "+ra.Outcome, scheduling.FormatTime(ra.OccurrenceTime), orDash(ra.InstanceID), orDash(ra.Reason))
		}
		return t.flush()
	}
	return nil
}

func runSchedulePause(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule pause <id>", `tideline schedule pause daily-sync --reason "upstream outage"`, e).withActor()
	reason := c.fs.String("reason", "", "why (at most 4,096 characters), kept as the pause reason and in the audit stream")
	until := c.fs.String("until", "", "resume automatically at this RFC 3339 time (optional)")
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	in := scheduling.PauseInput{Reason: *reason}
	if *until != "" {
		t, err := parseTimeFlag("until", *until)
		if err != nil {
			return err
		}
		in.Until = &t
	}
	sch, err := a.service.Pause(ctx, c.cfg.namespaceOrDefault(), pos[0], in, c.commandContext(*reason))
	if err != nil {
		return err
	}
	if *reason != "" {
		fmt.Fprintf(e.stdout, "Paused schedule %s (reason: %s).\n", sch.ScheduleID, *reason)
		return nil
	}
	fmt.Fprintf(e.stdout, "Paused schedule %s.\n", sch.ScheduleID)
	return nil
}

func runScheduleResume(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule resume <id>", "tideline schedule resume daily-sync", e).withActor()
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	sch, err := a.service.Resume(ctx, c.cfg.namespaceOrDefault(), pos[0], c.commandContext(""))
	if err != nil {
		return err
	}
	next := "never"
	if sch.NextFireAt != nil {
		next = localTime(*sch.NextFireAt, sch.Spec.Timezone)
	}
	fmt.Fprintf(e.stdout, "Resumed schedule %s. Next fire at: %s\n", sch.ScheduleID, next)
	return nil
}

func runScheduleRemove(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule remove <id>", "tideline schedule remove daily-sync", e).withActor()
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	ns := c.cfg.namespaceOrDefault()
	// Delete is idempotent and says nothing about a second call; look first
	// so the message tells the operator which case this was.
	before, err := a.service.Get(ctx, ns, pos[0])
	if err != nil {
		return err
	}
	if before.Status == models.StatusDeleted {
		fmt.Fprintf(e.stdout, "Schedule %s was already removed.\n", before.ScheduleID)
		return nil
	}
	sch, err := a.service.Delete(ctx, ns, pos[0], c.commandContext(""))
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Removed schedule %s. Its history stays readable: tideline schedule history %s\n", sch.ScheduleID, sch.ScheduleID)
	return nil
}

var actionFormats = []string{"text", "json"}

func runScheduleTrigger(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule trigger <id>", "tideline schedule trigger daily-sync --overlap allow_all", e).withActor()
	overlap := c.fs.String("overlap", "", "overlap policy for this fire only (default: the schedule's)")
	output := outputFlag(c.fs, actionFormats...)
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, actionFormats...); err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	res, err := a.service.Trigger(ctx, c.cfg.namespaceOrDefault(), pos[0], *overlap, c.commandContext(""))
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, apijson.FromTrigger(res))
	}
	id := pos[0]
	switch res.Outcome {
	case scheduling.OutcomeTriggered:
		fmt.Fprintf(e.stdout, "[%s] triggered → %s (run %s)\n", id, res.InstanceID, res.RunID)
	case scheduling.OutcomeBuffered:
		fmt.Fprintf(e.stdout, "[%s] buffered → %s (buffer depth %d)\n", id, res.InstanceID, res.BufferDepth)
	default:
		fmt.Fprintf(e.stdout, "[%s] %s (%s)\n", id, res.Outcome, orDash(res.Reason))
	}
	return nil
}

var backfillOutcomes = []string{scheduling.BackfillStarted, scheduling.BackfillPlanned, scheduling.BackfillSkipped, scheduling.BackfillFailed}

func runScheduleBackfill(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule backfill <id>", "tideline schedule backfill daily-sync --from 2026-01-01T00:00:00Z --to 2026-01-08T00:00:00Z --dry-run", e).withActor()
	fromText := c.fs.String("from", "", "start of the window, RFC 3339, inclusive (required)")
	toText := c.fs.String("to", "", "end of the window, RFC 3339, exclusive (required)")
	dryRun := c.fs.Bool("dry-run", false, "list the occurrences without starting anything")
	overlap := c.fs.String("overlap", "", "overlap policy for these fires (default: the schedule's; buffer policies act as allow_all)")
	output := outputFlag(c.fs, "table", "json")
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	if err := checkOutput(*output, "table", "json"); err != nil {
		return err
	}
	from, err := parseTimeFlag("from", *fromText)
	if err != nil {
		return err
	}
	to, err := parseTimeFlag("to", *toText)
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	rep, err := a.service.Backfill(ctx, c.cfg.namespaceOrDefault(), pos[0], scheduling.BackfillInput{
		From: from, To: to, OverlapPolicy: *overlap, DryRun: *dryRun, CommandContext: c.commandContext(""),
	})
	if err != nil {
		return err
	}
	failed := false
	counts := map[string]int{}
	for _, r := range rep.Results {
		counts[r.Outcome]++
		failed = failed || r.Outcome == scheduling.BackfillFailed
	}
	if *output == "json" {
		err = writeJSON(e.stdout, apijson.FromBackfill(rep))
	} else {
		err = printBackfill(e, rep, counts)
	}
	if err != nil {
		return err
	}
	if failed {
		return ErrSilentFailure // the failed rows are printed; the causes are logged
	}
	return nil
}

func printBackfill(e env, rep *scheduling.BackfillReport, counts map[string]int) error {
	if len(rep.Results) == 0 {
		fmt.Fprintln(e.stdout, "No occurrences in the window.")
		return nil
	}
	t := newTable(e.stdout, "Occurrence", "Outcome", "Instance ID", "Reason")
	for _, r := range rep.Results {
		t.row(scheduling.FormatTime(r.OccurrenceTime), r.Outcome, orDash(r.InstanceID), orDash(r.Reason))
	}
	if err := t.flush(); err != nil {
		return err
	}
	summary := fmt.Sprintf("%s: %s", plural(rep.Occurrences, "occurrence"), countSummary(backfillOutcomes, counts))
	switch rep.Outcome {
	case "dry_run":
		summary += " (dry run: nothing started)"
	case "max_runs_exhausted":
		summary += fmt.Sprintf(" (stopped after %d: max runs exhausted, the schedule is deleted)", len(rep.Results))
	}
	fmt.Fprintln(e.stdout, summary)
	return nil
}

func parseTimeFlag(name, value string) (time.Time, error) {
	if value == "" {
		return time.Time{}, usagef("missing --%s (RFC 3339, e.g. 2026-01-01T00:00:00Z)", name)
	}
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return time.Time{}, usagef("invalid --%s %q: want RFC 3339, e.g. 2026-01-01T00:00:00Z", name, value)
	}
	return t, nil
}

// canonicalJSON prints a document with sorted keys, so the same input reads
// the same whichever database stored it (PostgreSQL's jsonb reorders keys).
func canonicalJSON(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep big integers exact
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return string(raw)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return string(raw)
	}
	return string(out)
}
