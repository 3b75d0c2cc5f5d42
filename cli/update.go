package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// partClears are the parts of spec and action --clear resets (to absent);
// spec and action are sent whole, so the part is cleared in the copy.
var partClears = []string{"cron_expressions", "intervals", "input", "workflow_class", "execution_timeout_seconds",
	"run_timeout_seconds", "retry_policy"}

// clearable are the names --clear takes: every field of the table that
// has an empty value (nullable ones go to null, maps to {}, text to "",
// jitter to 0; scheduling.Fields), then the parts of spec and action.
var clearable = func() []string {
	var out []string
	for _, f := range scheduling.Fields {
		if f.Nullable || f.ClearJSON != "" {
			out = append(out, f.Key)
		}
	}
	return append(out, partClears...)
}()

func runScheduleUpdate(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule update <id>", `tideline schedule update daily-sync --cron "0 3 * * *" --label team=data --clear max_runs`, e).withActor()
	var crons, everys, clears, excludes stringList
	workflowType := c.fs.String("workflow-type", "", "workflow type to start")
	c.fs.Var(&excludes, "exclude-calendar", `a calendar whose dates the schedule does not fire on (repeatable; replaces the list; "none" for none)`)
	onExcluded := c.fs.String("on-excluded", "", "skip, previous_business_day or next_business_day")
	c.fs.Var(&crons, "cron", "cron expression (repeatable; replaces the schedule's cron expressions)")
	c.fs.Var(&everys, "every", `fixed interval, "EVERY [offset OFFSET]" (repeatable; replaces the intervals)`)
	timezone := c.fs.String("timezone", "", "IANA zone the cron expressions are read in")
	input := c.fs.String("input", "", "workflow input as JSON")
	af := bindActionFlags(c)
	c.fs.Var(&clears, "clear", "reset a field (repeatable): "+strings.Join(clearable, ", "))
	dryRun := c.fs.Bool("dry-run", false, "print what would change and change nothing")
	pos, err := c.parse(args, "<id>")
	if err != nil {
		return err
	}
	for _, f := range clears {
		if !slices.Contains(clearable, f) {
			return usagef("invalid --clear %q: want one of %s", f, strings.Join(clearable, ", "))
		}
	}
	intervals, err := parseEverys(everys)
	if err != nil {
		return err
	}
	var inputDoc []byte
	if *input != "" {
		if inputDoc, err = parseInput(*input); err != nil {
			return err
		}
	}
	fields, err := af.fields.values()
	if err != nil {
		return err
	}

	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	cur, err := a.GetSchedule(ctx, pos[0])
	if err != nil {
		return err
	}
	cleared := func(f string) bool { return slices.Contains(clears, f) }
	var p apijson.SchedulePatch

	// spec and action are replaced whole: start from the current ones.
	spec := cur.Spec
	specChanged := false
	if len(crons) > 0 || cleared("cron_expressions") {
		spec.CronExpressions, specChanged = append([]string{}, crons...), true
	}
	if len(intervals) > 0 || cleared("intervals") {
		spec.Intervals, specChanged = append([]apijson.Interval{}, intervals...), true
	}
	if c.isSet("timezone") {
		spec.Timezone, specChanged = *timezone, true
	}
	if len(excludes) > 0 {
		spec.ExcludeCalendars, specChanged = append([]string{}, excludes...), true
		if len(excludes) == 1 && excludes[0] == "none" {
			spec.ExcludeCalendars = nil
		}
	}
	if *onExcluded != "" {
		spec.OnExcluded, specChanged = *onExcluded, true
	}
	if specChanged {
		p.Spec = &spec
	}
	action := cur.Action
	actionChanged := false
	if c.isSet("workflow-type") {
		action.WorkflowType, actionChanged = *workflowType, true
	}
	if c.isSet("input") {
		action.Input, actionChanged = inputDoc, true
	}
	for field, apply := range map[string]func(){
		"input": func() { action.Input = nil }, "workflow_class": func() { action.WorkflowClass = "" },
		"execution_timeout_seconds": func() { action.ExecutionTimeoutSeconds = nil }, "run_timeout_seconds": func() { action.RunTimeoutSeconds = nil },
		"retry_policy": func() { action.RetryPolicy = nil },
	} {
		if cleared(field) {
			apply()
			actionChanged = true
		}
	}
	before := action
	if err := af.apply(&action); err != nil {
		return err
	}
	if actionChanged || !sameAction(before, action) {
		p.Action = &action
	}
	p.Set = fields
	// --clear of a whole field, as the field table says: null, or its
	// empty value (over any flag that set it).
	for _, f := range scheduling.Fields {
		switch {
		case !cleared(f.Key):
		case f.Nullable:
			p.Clear = append(p.Clear, f.Key)
		case f.ClearJSON != "":
			p.Set[f.Key] = json.RawMessage(f.ClearJSON)
		}
	}
	if p.Empty() {
		return usagef("nothing to update: give a field flag or --clear FIELD (see 'tideline schedule update <id> --help')")
	}

	plan, err := a.PlanUpdateSchedule(ctx, cur.ScheduleID, p)
	if err != nil {
		return err
	}
	if len(plan.ChangedFields) == 0 {
		fmt.Fprintf(e.stdout, "No changes: schedule %s already matches.\n", cur.ScheduleID)
		return nil
	}
	printChanges(e.stdout, "~ "+cur.ScheduleID, plan.Changes)
	if *dryRun {
		fmt.Fprintln(e.stdout, "Dry run: nothing changed.")
		return nil
	}
	if cur.Labels[apijson.ManagedByLabel] == apijson.ManagedByApply {
		fmt.Fprintf(e.stderr, "warning: %s is managed by 'schedule apply' (label %s=%s); the next apply will undo this edit unless the file changes too\n",
			cur.ScheduleID, apijson.ManagedByLabel, apijson.ManagedByApply)
	}
	if _, err := a.UpdateSchedule(ctx, cur.ScheduleID, p); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Updated schedule %s: changed %s.\n", cur.ScheduleID, strings.Join(plan.ChangedFields, ", "))
	return nil
}

// sameAction reports whether the action flags left the action as it was
// (compared field by field, pointers by what they point to).
func sameAction(a, b apijson.Action) bool { return reflect.DeepEqual(a, b) }

// printChanges prints one schedule's per-field diff, the same fields and
// spellings the console's edit form lists (scheduling.DiffSchedules).
func printChanges(w io.Writer, title string, changes []apijson.FieldChange) {
	fmt.Fprintln(w, title)
	for _, ch := range changes {
		fmt.Fprintf(w, "    %s: %s → %s\n", ch.Field, quoteEmpty(ch.From), quoteEmpty(ch.To))
	}
}

func quoteEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return clean(s)
}

// toModel is the part of an API schedule the diff compares.
func toModel(s *apijson.Schedule) *models.Schedule {
	return &models.Schedule{Spec: s.Spec.Model(), Action: s.Action.Model(), OverlapPolicy: s.OverlapPolicy, JitterSeconds: s.JitterSeconds,
		MaxRuns: s.MaxRuns, Connection: s.Connection, Queue: s.Queue, Labels: s.Labels, Memo: s.Memo,
		SearchAttributes: s.SearchAttributes, Note: s.Note}
}

// creationChanges is a new schedule's diff against nothing.
func creationChanges(s *apijson.Schedule) []apijson.FieldChange {
	var out []apijson.FieldChange
	for _, ch := range scheduling.DiffSchedules(&models.Schedule{}, toModel(s)) {
		out = append(out, apijson.FieldChange(ch))
	}
	return out
}
