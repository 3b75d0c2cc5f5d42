package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
)

func scheduleCommands() map[string]subcommand {
	return map[string]subcommand{
		"list":        {"list schedules", runScheduleList},
		"add":         {"create a schedule", runScheduleAdd},
		"describe":    {"show a schedule, its description and next fire times", runScheduleDescribe},
		"pause":       {"stop a schedule from firing", runSchedulePause},
		"resume":      {"restart a paused schedule from now (no catch-up)", runScheduleResume},
		"trigger":     {"fire a schedule now", runScheduleTrigger},
		"backfill":    {"start the occurrences of a past window", runScheduleBackfill},
		"remove":      {"delete a schedule (its history stays readable)", runScheduleRemove},
		"history":     {"show a schedule's audit events", runScheduleHistory},
		"occurrences": {"show what became of each occurrence (the ledger)", runScheduleOccurrences},
		"update":      {"change fields of a schedule (--clear FIELD resets one)", runScheduleUpdate},
		"export":      {"print the namespace's schedules as a YAML (or JSON) file for apply", runScheduleExport},
		"apply":       {"make the namespace's schedules match a file: create, update, --prune delete", runScheduleApply},
		"diff":        {"print what apply -f FILE would change; exit 2 when the namespace drifted from the file", runScheduleDiff},
		"versions":    {"list a schedule's versions (--show N prints one's definition)", runScheduleVersions},
		"revert":      {"update a schedule back to one of its versions", runScheduleRevert},
	}
}

// runSchedule dispatches `tideline schedule <verb>`.
func runSchedule(ctx context.Context, e env, args []string) error {
	return dispatch(ctx, e, "schedule", scheduleCommands(), args)
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
	label := c.fs.String("label", "", "only schedules with this label, key=value")
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

	ns := c.cfg.namespaceOrDefault()
	var all []apijson.Schedule
	for sch, err := range a.ListSchedules(ctx, client.ListSchedulesOptions{Statuses: statuses, Query: *text,
		WorkflowType: *workflowType, Label: *label, Limit: listPageSize}) {
		if err != nil {
			return err
		}
		all = append(all, sch)
	}

	switch *output {
	case "json":
		if all == nil {
			all = []apijson.Schedule{}
		}
		return writeJSON(e.stdout, all)
	case "jsonl":
		for _, sch := range all {
			if err := writeJSONLine(e.stdout, sch); err != nil {
				return err
			}
		}
		return nil
	}
	if len(all) == 0 {
		fmt.Fprintf(e.stdout, "No schedules in namespace %s.\n", ns)
		return nil
	}
	t := newTable(e.stdout, "Schedule ID", "Status", "Workflow Type", "Spec", "Timezone", "Overlap", "Next Fire At", "Last Fired At", "Fires")
	for _, s := range all {
		next := apiTimeOrDash(s.NextFireAt)
		if s.Status != models.StatusActive {
			next = "-" // a paused schedule keeps a stale value; it will not fire then
		}
		t.row(s.ScheduleID, scheduleStatusText(&s), clean(s.Action.WorkflowType), clean(specSummary(s.Spec)), orDash(s.Spec.Timezone),
			s.OverlapPolicy, next, apiTimeOrDash(s.LastFiredAt), strconv.FormatInt(s.FiresCount, 10))
	}
	return t.flush()
}

func runScheduleAdd(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule add <id>", `tideline schedule add daily-sync --workflow-type sync.Daily --cron "0 2 * * *" --timezone America/New_York`, e).withActor()
	var crons, everys, ats, excludes stringList
	workflowType := c.fs.String("workflow-type", "", "workflow type to start (required)")
	c.fs.Var(&excludes, "exclude-calendar", "a calendar whose dates the schedule does not fire on (repeatable; see tideline calendar)")
	onExcluded := c.fs.String("on-excluded", "", "what an excluded occurrence does: skip (default), previous_business_day or next_business_day")
	c.fs.Var(&crons, "cron", "cron expression, 5 fields or @daily… (repeatable)")
	c.fs.Var(&everys, "every", `fixed interval: ISO-8601 (PT1H, P1D) or "1 hour", "30 minutes"; "EVERY offset OFFSET" shifts it (repeatable)`)
	c.fs.Var(&ats, "at", "one-off fire time, RFC 3339, e.g. 2026-12-24T18:00:00-05:00 (repeatable)")
	startAt := c.fs.String("start-at", "", "no fire before this RFC 3339 time")
	endAt := c.fs.String("end-at", "", "no fire after this RFC 3339 time (inclusive); after it the schedule has ended")
	timezone := c.fs.String("timezone", "", "IANA zone the cron expressions are read in (default UTC)")
	input := c.fs.String("input", "", `workflow input as JSON, e.g. '{"full": true}'`)
	paused := c.fs.Bool("paused", false, "create the schedule paused")
	af := bindActionFlags(c)
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	if *workflowType == "" {
		return usagef("missing --workflow-type")
	}
	if len(crons) == 0 && len(everys) == 0 && len(ats) == 0 {
		return usagef("give at least one --cron, --every or --at")
	}
	req := apijson.CreateSchedule{
		ScheduleID: pos[0],
		Spec: &apijson.Spec{CronExpressions: []string(crons), Timezone: *timezone,
			At: []string(ats), StartAt: *startAt, EndAt: *endAt, ExcludeCalendars: []string(excludes), OnExcluded: *onExcluded},
		Action: apijson.Action{WorkflowType: *workflowType}, Paused: *paused,
	}
	if req.Spec.Intervals, err = parseEverys(everys); err != nil {
		return err
	}
	if err := af.fields.setOn(&req); err != nil {
		return err
	}
	if *input != "" {
		if req.Action.Input, err = parseInput(*input); err != nil {
			return err
		}
	}
	if err := af.apply(&req.Action); err != nil {
		return err
	}

	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	sch, err := a.CreateSchedule(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Created schedule %s (%s) in namespace %s.\n", sch.ScheduleID, sch.Status, sch.Namespace)
	if sch.Status == models.StatusActive && sch.NextFireAt != nil {
		fmt.Fprintf(e.stdout, "Next fire at: %s\n", localTime(sch.NextFireAt.T(), sch.Spec.Timezone))
	}
	return nil
}

// actionFlags are the flags add and update share beyond the basics.
type actionFlags struct {
	workflowClass    *string
	executionTimeout *string
	runTimeout       *string
	// The retry policy (CONTRACT §10).
	maxAttempts      *int
	retryInitial     *string
	retryCoefficient *float64
	retryMaxInterval *string
	nonRetryable     stringList
	// The field table's fields: overlap, jitter, labels, note… (fieldflags.go).
	fields fieldFlags
	// The target (CONTRACT §15).
	target      *string
	httpURL     *string
	httpMethod  *string
	httpTimeout *string
	httpHeaders pairList
	httpSecret  *string
	httpAuth    *string
	c           *dbCommand
}

func bindActionFlags(c *dbCommand) *actionFlags {
	af := &actionFlags{c: c}
	af.workflowClass = c.fs.String("workflow-class", "", "workflow class passed to the worker (optional)")
	af.executionTimeout = c.fs.String("execution-timeout", "", `limit on the whole execution, retries included: seconds or a duration ("2h", "PT30M")`)
	af.runTimeout = c.fs.String("run-timeout", "", `limit on one run: seconds or a duration ("10m")`)
	af.maxAttempts = c.fs.Int("max-attempts", 0, "retry a failed run until it has had this many attempts (1-100; 1 = no retry)")
	af.retryInitial = c.fs.String("retry-initial", "", `wait before the first retry: seconds or a duration (default 1s)`)
	af.retryCoefficient = c.fs.Float64("retry-coefficient", 0, "each further retry waits this many times longer (1.0-10.0, default 2.0)")
	af.retryMaxInterval = c.fs.String("retry-max-interval", "", "longest wait between attempts (default 100 × --retry-initial, at most a day)")
	c.fs.Var(&af.nonRetryable, "non-retryable", "error type that ends the run without retry (repeatable)")
	af.fields = bindFieldFlags(c.fs)
	af.target = c.fs.String("target", "", "who executes the runs: worker (the worker protocol, the default) or http (the server calls --http-url)")
	af.httpURL = c.fs.String("http-url", "", "HTTP target: the URL the server calls once per attempt (implies --target http)")
	af.httpMethod = c.fs.String("http-method", "", "HTTP target: POST (default) or PUT")
	af.httpTimeout = c.fs.String("http-timeout", "", `HTTP target: how long one request may take, 1s-900s: seconds or a duration (default 30s)`)
	c.fs.Var(&af.httpHeaders, "http-header", "HTTP target: a header Name=value to send (repeatable, at most 32; replaces the headers; no Authorization — use --http-secret)")
	af.httpSecret = c.fs.String("http-secret", "", `HTTP target: secret that signs each request (Tideline-Signature), write-only; "" removes it`)
	af.httpAuth = c.fs.String("http-auth", "", `HTTP target: "bearer" also sends the secret as Authorization: Bearer; "none" stops`)
	return af
}

// retryFlags are the flags that set the retry policy.
var retryFlags = []string{"max-attempts", "retry-initial", "retry-coefficient", "retry-max-interval", "non-retryable"}

// apply copies the set action flags into a.
func (af *actionFlags) apply(a *apijson.Action) error {
	if af.c.isSet("workflow-class") {
		a.WorkflowClass = *af.workflowClass
	}
	for _, f := range []struct {
		name string
		raw  *string
		dst  **int64
	}{{"execution-timeout", af.executionTimeout, &a.ExecutionTimeoutSeconds}, {"run-timeout", af.runTimeout, &a.RunTimeoutSeconds}} {
		if !af.c.isSet(f.name) {
			continue
		}
		n, err := parseSeconds(f.name, *f.raw)
		if err != nil {
			return err
		}
		*f.dst = &n
	}
	if err := af.applyRetry(a); err != nil {
		return err
	}
	return af.applyTarget(a)
}

// targetFlags are the flags that set the target.
var targetFlags = []string{"target", "http-url", "http-method", "http-timeout", "http-header", "http-secret", "http-auth"}

// applyTarget sets the given target flags on the action's target, keeping
// what they do not name (an update keeps the stored secret unless
// --http-secret is given).
func (af *actionFlags) applyTarget(a *apijson.Action) error {
	set := af.c.isSet
	if !slices.ContainsFunc(targetFlags, set) {
		return nil
	}
	kind := ""
	if set("target") {
		if kind = *af.target; kind != models.TargetWorker && kind != models.TargetHTTP {
			return usagef("invalid --target %q: want worker or http", kind)
		}
	}
	if kind == models.TargetWorker {
		if slices.ContainsFunc(targetFlags[1:], set) {
			return usagef("--target worker takes no --http-… flags")
		}
		a.Target = &apijson.Target{Kind: models.TargetWorker}
		return nil
	}
	t := apijson.Target{Kind: models.TargetHTTP}
	if a.Target != nil && a.Target.Kind == models.TargetHTTP {
		t = *a.Target
	}
	if set("http-url") {
		t.URL = *af.httpURL
	}
	if set("http-method") {
		t.Method = strings.ToUpper(*af.httpMethod)
	}
	if set("http-timeout") {
		n, err := parseSeconds("http-timeout", *af.httpTimeout)
		if err != nil {
			return err
		}
		timeout := int(min(n, 1<<30))
		t.TimeoutSeconds = &timeout
	}
	if set("http-header") {
		h, err := af.httpHeaders.toMap("http-header")
		if err != nil {
			return err
		}
		t.Headers = h
	}
	if set("http-secret") {
		secret := *af.httpSecret
		t.Secret = &secret
	}
	if set("http-auth") {
		switch *af.httpAuth {
		case "bearer":
			t.Auth = "bearer"
		case "none", "":
			t.Auth = ""
		default:
			return usagef("invalid --http-auth %q: want bearer or none", *af.httpAuth)
		}
	}
	t.SecretSet = false // an answer's field, not an input
	a.Target = &t
	return nil
}

// applyRetry sets the given retry flags on the action's policy, keeping the
// fields not given (the server fills in defaults).
func (af *actionFlags) applyRetry(a *apijson.Action) error {
	if !slices.ContainsFunc(retryFlags, af.c.isSet) {
		return nil
	}
	p := apijson.RetryPolicy{}
	if a.RetryPolicy != nil {
		p = *a.RetryPolicy
	}
	if af.c.isSet("max-attempts") {
		p.MaxAttempts = af.maxAttempts
	}
	if af.c.isSet("retry-coefficient") {
		p.BackoffCoefficient = af.retryCoefficient
	}
	for _, f := range []struct {
		name string
		raw  *string
		dst  **int64
	}{{"retry-initial", af.retryInitial, &p.InitialIntervalSeconds}, {"retry-max-interval", af.retryMaxInterval, &p.MaxIntervalSeconds}} {
		if af.c.isSet(f.name) {
			n, err := parseSeconds(f.name, *f.raw)
			if err != nil {
				return err
			}
			*f.dst = &n
		}
	}
	if af.c.isSet("non-retryable") {
		p.NonRetryableErrorTypes = append([]string{}, af.nonRetryable...)
	}
	a.RetryPolicy = &p
	return nil
}

// parseSeconds accepts whole seconds or a duration ("90s", "1 hour", "PT5M").
func parseSeconds(flagName, s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return int64(d / time.Second), nil
	}
	d, err := timespec.ParseDuration(s)
	if err != nil {
		return 0, usagef("invalid --%s %q: want seconds or a duration such as 90s, 10m or PT1H", flagName, s)
	}
	return int64(d / time.Second), nil
}

// pairList is a repeatable key=value flag.
type pairList []string

func (l *pairList) String() string { return strings.Join(*l, ", ") }

func (l *pairList) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	*l = append(*l, v)
	return nil
}

func (l pairList) toMap(flagName string) (map[string]string, error) {
	if len(l) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(l))
	for _, kv := range l {
		k, v, _ := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if _, dup := m[k]; dup {
			return nil, usagef("--%s %s given twice", flagName, k)
		}
		m[k] = v
	}
	return m, nil
}

func parseEverys(everys []string) ([]apijson.Interval, error) {
	var out []apijson.Interval
	for _, every := range everys {
		ev, off, _ := strings.Cut(every, " offset ")
		d, err := timespec.ParseDuration(strings.TrimSpace(ev))
		if err != nil {
			return nil, usagef("invalid --every %q: %v", every, err)
		}
		iv := apijson.Interval{Every: timespec.FormatISODuration(d)}
		if off != "" {
			o, err := timespec.ParseDuration(strings.TrimSpace(off))
			if err != nil {
				return nil, usagef("invalid --every %q: offset: %v", every, err)
			}
			if o > 0 {
				iv.Offset = timespec.FormatISODuration(o)
			}
		}
		out = append(out, iv)
	}
	return out, nil
}

func parseInput(input string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(input)))
	dec.UseNumber() // keep big integers exact
	var doc any
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return nil, usagef("invalid --input: want one JSON value, e.g. '{\"full\": true}'")
	}
	return json.RawMessage(input), nil
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
	d, err := a.GetSchedule(ctx, pos[0])
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, d)
	}
	return printDescription(e, d)
}

func printDescription(e env, s *apijson.Schedule) error {
	zone := s.Spec.Timezone
	t := newTable(e.stdout, "Schedule:", s.ScheduleID)
	t.row("Namespace:", s.Namespace)
	t.row("Status:", scheduleStatusText(s))
	if s.Labels[apijson.ManagedByLabel] == apijson.ManagedByApply {
		t.row("Managed by:", "schedule apply (label "+apijson.ManagedByLabel+"="+apijson.ManagedByApply+"; edit the file, not the schedule)")
	}
	t.row("Workflow type:", clean(s.Action.WorkflowType))
	t.row("Target:", targetSummary(s.Action.Target))
	if s.Action.WorkflowClass != "" {
		t.row("Workflow class:", clean(s.Action.WorkflowClass))
	}
	for _, cron := range s.Spec.CronExpressions {
		t.row("Cron:", clean(cron))
	}
	for _, at := range s.Spec.At {
		t.row("At:", clean(at))
	}
	if s.Spec.StartAt != "" {
		t.row("Start at:", clean(s.Spec.StartAt))
	}
	if s.Spec.EndAt != "" {
		t.row("End at:", clean(s.Spec.EndAt))
	}
	if len(s.Spec.ExcludeCalendars) > 0 {
		t.row("Calendars:", clean(strings.Join(s.Spec.ExcludeCalendars, ", "))+" ("+cmp.Or(s.Spec.OnExcluded, "skip")+")")
	}
	for _, iv := range s.Spec.Intervals {
		t.row("Interval:", intervalSummary(iv))
	}
	t.row("Timezone:", orDash(zone))
	t.row("Description:", clean(s.SpecDescription))
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
	if s.Action.ExecutionTimeoutSeconds != nil {
		t.row("Execution timeout:", fmt.Sprintf("%ds", *s.Action.ExecutionTimeoutSeconds))
	}
	if s.Action.RunTimeoutSeconds != nil {
		t.row("Run timeout:", fmt.Sprintf("%ds", *s.Action.RunTimeoutSeconds))
	}
	if p := s.Action.RetryPolicy; p != nil && p.MaxAttempts != nil {
		retries := fmt.Sprintf("%d attempts, %ds × %g up to %ds", *p.MaxAttempts, *p.InitialIntervalSeconds, *p.BackoffCoefficient, *p.MaxIntervalSeconds)
		if len(p.NonRetryableErrorTypes) > 0 {
			retries += "; never retried: " + strings.Join(p.NonRetryableErrorTypes, ", ")
		}
		t.row("Retries:", retries)
	}
	if s.Action.Input != nil {
		t.row("Input:", clean(canonicalJSON(s.Action.Input)))
	}
	for _, m := range []struct {
		name string
		kv   map[string]string
	}{{"Labels:", s.Labels}, {"Memo:", s.Memo}, {"Search attributes:", s.SearchAttributes}} {
		if len(m.kv) > 0 {
			t.row(m.name, clean(pairsSummary(m.kv)))
		}
	}
	t.row("Note:", orDash(clean(s.Note)))
	t.row("Fires:", fmt.Sprintf("%d (%d failed, %d skipped)", s.FiresCount, s.StartFailuresCount, s.SkippedTriggerCount))
	if s.FailuresCount > 0 {
		t.row("Failed runs:", fmt.Sprintf("%d (%d in a row)", s.FailuresCount, s.ConsecutiveFailures))
	}
	if l := s.LastRun; l != nil {
		last := l.RunID + " " + l.Status + " at " + apiTimeOrDash(l.FinishedAt)
		if l.ErrorMessage != nil {
			last += ": " + clean(*l.ErrorMessage)
		}
		t.row("Last run:", last)
	}
	if s.PauseAfterFailures != nil {
		t.row("Pause after:", fmt.Sprintf("%d consecutive failures", *s.PauseAfterFailures))
	}
	if s.CatchupWindowSeconds != nil {
		t.row("Catch-up:", fmt.Sprintf("fires missed occurrences of the last %s", time.Duration(*s.CatchupWindowSeconds)*time.Second))
	}
	if s.StartDeadlineSeconds != nil {
		t.row("Start deadline:", fmt.Sprintf("%s after the occurrence (run_not_started)", time.Duration(*s.StartDeadlineSeconds)*time.Second))
	}
	if s.LastSkipReason != nil {
		t.row("Last skip:", *s.LastSkipReason+" at "+apiTimeOrDash(s.LastSkippedAt))
	}
	t.row("Last fired at:", apiTimeOrDash(s.LastFiredAt))
	t.row("Latest instance:", strOrDash(s.LatestInstanceID))
	t.row("Latest run:", strOrDash(s.LatestRunID))
	if len(s.BufferedActions) > 0 {
		t.row("Buffered fires:", strconv.Itoa(len(s.BufferedActions)))
	}
	if s.PausedAt != nil && s.Status == models.StatusPaused {
		t.row("Paused at:", apiTimeOrDash(s.PausedAt))
		t.row("Paused by:", strOrDash(s.PausedBy))
		t.row("Pause reason:", clean(strOrDash(s.PauseReason)))
		if s.PausedUntil != nil {
			t.row("Paused until:", localTime(s.PausedUntil.T(), zone))
		}
	}
	t.row("Created at:", scheduling.FormatTime(s.CreatedAt.T()))
	t.row("Updated at:", scheduling.FormatTime(s.UpdatedAt.T()))
	if s.Status == models.StatusActive {
		next := "never (ended: no occurrence left)"
		if s.NextFireAt != nil {
			next = localTime(s.NextFireAt.T(), zone)
		}
		t.row("Next fire at:", next)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(s.FutureFireTimes) > 0 {
		fmt.Fprintln(e.stdout, "\nNext fire times:")
		for _, ft := range s.FutureFireTimes {
			fmt.Fprintf(e.stdout, "  %s\n", localTime(ft.T(), zone))
		}
	}
	if len(s.RecentActions) > 0 {
		fmt.Fprintln(e.stdout, "\nRecent actions (newest first):")
		t := newTable(e.stdout, "  Outcome", "Occurrence", "Instance", "Reason")
		for _, ra := range s.RecentActions {
			t.row("  "+ra.Outcome, scheduling.FormatTime(ra.OccurrenceTime.T()), orDash(ra.InstanceID), orDash(ra.Reason))
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
	opts := client.PauseOptions{Reason: *reason}
	if *until != "" {
		t, err := parseTimeFlag("until", *until)
		if err != nil {
			return err
		}
		opts.Until = &t
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	sch, err := a.PauseSchedule(ctx, pos[0], opts)
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
	sch, err := a.ResumeSchedule(ctx, pos[0])
	if err != nil {
		return err
	}
	next := "never"
	if sch.NextFireAt != nil {
		next = localTime(sch.NextFireAt.T(), sch.Spec.Timezone)
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
	// Delete is idempotent and says nothing about a second call; look first
	// so the message tells the operator which case this was.
	gone, err := a.deleted(ctx, pos[0])
	if err != nil {
		return err
	}
	if gone {
		fmt.Fprintf(e.stdout, "Schedule %s was already removed.\n", pos[0])
		return nil
	}
	sch, err := a.DeleteSchedule(ctx, pos[0])
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
	res, err := a.TriggerSchedule(ctx, pos[0], *overlap)
	if err != nil {
		return err
	}
	if *output == "json" {
		return writeJSON(e.stdout, res)
	}
	id := pos[0]
	switch res.Outcome {
	case scheduling.OutcomeTriggered:
		fmt.Fprintf(e.stdout, "[%s] triggered → %s (run %s)\n", id, strOrDash(res.InstanceID), strOrDash(res.RunID))
	case scheduling.OutcomeBuffered:
		fmt.Fprintf(e.stdout, "[%s] buffered → %s (buffer depth %d)\n", id, strOrDash(res.InstanceID), res.BufferDepth)
	default:
		fmt.Fprintf(e.stdout, "[%s] %s (%s)\n", id, res.Outcome, strOrDash(res.Reason))
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
	maxPerMinute := c.fs.Int("max-per-minute", 0, "start at most this many occurrences in any minute, evenly (default: as fast as the worker goes)")
	maxConcurrent := c.fs.Int("max-concurrent", 0, "start an occurrence only while fewer of the job's runs are pending or running")
	wait := c.fs.Bool("wait", false, "print the job's progress until it ends (direct mode works the job itself meanwhile)")
	reason := c.fs.String("reason", "", "why, kept with the job and in the audit stream")
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
	opts := client.BackfillJobOptions{From: from, To: to, OverlapPolicy: *overlap, Reason: *reason}
	for _, f := range []struct {
		name string
		v    int
		dst  **int
	}{{"max-per-minute", *maxPerMinute, &opts.MaxPerMinute}, {"max-concurrent", *maxConcurrent, &opts.MaxConcurrentRuns}} {
		if c.isSet(f.name) {
			if f.v < 1 {
				return usagef("invalid --%s %d: want a positive number", f.name, f.v)
			}
			*f.dst = &f.v
		}
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	if !*dryRun {
		return startBackfillJob(ctx, e, a, pos[0], opts, *wait, *output)
	}
	rep, err := a.BackfillSchedule(ctx, pos[0], client.BackfillOptions{From: from, To: to, OverlapPolicy: *overlap, DryRun: true})
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for _, r := range rep.Results {
		counts[r.Outcome]++
	}
	if *output == "json" {
		return writeJSON(e.stdout, rep)
	}
	return printBackfill(e, rep, counts)
}

func printBackfill(e env, rep *apijson.Backfill, counts map[string]int) error {
	if len(rep.Results) == 0 {
		fmt.Fprintln(e.stdout, "No occurrences in the window.")
		return nil
	}
	t := newTable(e.stdout, "Occurrence", "Outcome", "Instance ID", "Reason")
	for _, r := range rep.Results {
		t.row(scheduling.FormatTime(r.OccurrenceTime.T()), r.Outcome, strOrDash(r.InstanceID), strOrDash(r.Reason))
	}
	if err := t.flush(); err != nil {
		return err
	}
	summary := fmt.Sprintf("%s: %s", plural(rep.Occurrences, "occurrence"), countSummary(backfillOutcomes, counts))
	switch rep.Outcome {
	case scheduling.BackfillDryRun:
		summary += " (dry run: nothing started)"
	case scheduling.BackfillMaxRunsExhausted:
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

// targetSummary is a target as the CLI shows it: the kind, and for HTTP the
// method, URL, timeout, header names and whether a secret is set — never
// the secret.
func targetSummary(t *apijson.Target) string {
	if t == nil || t.Kind != models.TargetHTTP {
		return "worker"
	}
	parts := []string{"http", t.Method, clean(t.URL)}
	if t.TimeoutSeconds != nil {
		parts = append(parts, fmt.Sprintf("timeout %ds", *t.TimeoutSeconds))
	}
	if len(t.Headers) > 0 {
		names := make([]string, 0, len(t.Headers))
		for k := range t.Headers {
			names = append(names, clean(k))
		}
		slices.Sort(names)
		parts = append(parts, "headers "+strings.Join(names, ","))
	}
	if t.Auth != "" {
		parts = append(parts, "auth "+t.Auth)
	}
	if t.SecretSet {
		parts = append(parts, "secret set")
	}
	return strings.Join(parts, " ")
}
