package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// The file format of export and apply (docs/schedules-file.md): a YAML (or
// JSON) list of schedules in the shape of POST /schedules, and of the
// calendars they list (kind: calendar, apply_calendars.go).

var exportFormats = []string{"yaml", "json"}

func runScheduleExport(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule export", "tideline schedule export --label team=data > schedules.yaml", e)
	output := outputFlag(c.fs, exportFormats...)
	var labels pairList
	c.fs.Var(&labels, "label", "only schedules with this label, key=value (repeatable: all must match)")
	if _, err := c.parse(args); err != nil {
		return err
	}
	if err := checkOutput(*output, exportFormats...); err != nil {
		return err
	}
	want, err := labels.toMap("label")
	if err != nil {
		return err
	}
	a, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	opts := client.ListSchedulesOptions{Statuses: []string{models.StatusActive, models.StatusPaused}, Limit: listPageSize}
	for k, v := range want {
		opts.Label = k + ":" + v // the server filters by one; the rest below
		break
	}
	docs := []apijson.CreateSchedule{}
	for s, err := range a.ListSchedules(ctx, opts) {
		if err != nil {
			return err
		}
		if matchesLabels(s.Labels, want) {
			docs = append(docs, exportDoc(&s))
		}
	}
	cals, err := exportCalendars(ctx, a, docs)
	if err != nil {
		return err
	}
	items := make([]any, 0, len(cals)+len(docs))
	for _, cal := range cals {
		items = append(items, cal)
	}
	for _, d := range docs {
		items = append(items, d)
	}
	if *output == "json" {
		return writeJSON(e.stdout, items)
	}
	out, err := toYAML(items)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "# Schedules of namespace %s, exported by tideline schedule export.\n"+
		"# Edit, then: tideline schedule apply -f FILE --dry-run, and without --dry-run.\n", c.cfg.namespaceOrDefault())
	_, err = e.stdout.Write(out)
	return err
}

func matchesLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// exportDoc is a schedule as a document of the file (apijson.ExportOf).
func exportDoc(s *apijson.Schedule) apijson.CreateSchedule { return apijson.ExportOf(s) }

// toYAML writes v as block YAML in its JSON field order: the JSON text is
// read as YAML (a superset) and restyled, which keeps big integers and key
// order exactly.
func toYAML(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode export: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("encode export: %w", err)
	}
	var restyle func(n *yaml.Node)
	restyle = func(n *yaml.Node) {
		n.Style = 0
		for _, c := range n.Content {
			restyle(c)
		}
	}
	restyle(&doc)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("encode export: %w", err)
	}
	return b.Bytes(), nil
}

// fileDoc is one schedule of an apply file, with where it is.
type fileDoc struct {
	req  apijson.CreateSchedule
	node *yaml.Node
}

// fileError is a problem at a line of the file.
type fileError struct {
	line int
	msg  string
}

// fileErrors are every problem found, reported together.
type fileErrors struct {
	name string
	errs []fileError
}

func (e *fileErrors) add(line int, format string, args ...any) {
	e.errs = append(e.errs, fileError{line, fmt.Sprintf(format, args...)})
}

func (e *fileErrors) Error() string {
	slices.SortStableFunc(e.errs, func(a, b fileError) int { return a.line - b.line })
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s, nothing changed:", e.name, plural(len(e.errs), "error"))
	for _, fe := range e.errs {
		fmt.Fprintf(&b, "\n  %s:%d: %s", e.name, fe.line, fe.msg)
	}
	return b.String()
}

// Keys a document may hold, at each level: the JSON names of the API's own
// shapes, so a field added there is known here without another list.
var (
	docKeys      = append(jsonKeys(apijson.CreateSchedule{}), "kind")
	specKeys     = jsonKeys(apijson.Spec{})
	intervalKeys = jsonKeys(apijson.Interval{})
	actionKeys   = jsonKeys(apijson.Action{})
	retryKeys    = jsonKeys(apijson.RetryPolicy{})
	targetKeys   = jsonKeys(apijson.Target{})
)

// jsonKeys lists the JSON field names of a struct, in declaration order.
func jsonKeys(v any) []string {
	t := reflect.TypeOf(v)
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// parseFile reads the schedules of an apply file.
func parseFile(name string, data []byte) ([]fileDoc, error) {
	docs, _, err := parseApplyFile(name, data)
	return docs, err
}

// parseApplyFile reads an apply file: its schedules and its calendars;
// every problem is reported with its line.
func parseApplyFile(name string, data []byte) ([]fileDoc, []fileCalendar, error) {
	errs := &fileErrors{name: name}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		line := 1
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		errs.add(line, "not valid YAML: %s", strings.TrimPrefix(yamlLine.ReplaceAllString(err.Error(), ""), "yaml: "))
		return nil, nil, errs
	}
	if len(root.Content) == 0 {
		return nil, nil, nil // an empty file: no schedules
	}
	list := root.Content[0]
	if list.Kind != yaml.SequenceNode {
		errs.add(list.Line, "the file must be a list of schedules (each item starting with '- schedule_id: …') and calendars ('- kind: calendar')")
		return nil, nil, errs
	}
	var docs []fileDoc
	var cals []fileCalendar
	seen, seenCals := map[string]int{}, map[string]int{}
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			errs.add(item.Line, "each schedule must be a mapping of fields")
			continue
		}
		kind, ok := itemKind(errs, item)
		if !ok {
			continue
		}
		if kind == kindCalendar {
			if fc, ok := parseCalendarItem(errs, item, seenCals); ok {
				cals = append(cals, fc)
			}
			continue
		}
		checkKeys(errs, item, docKeys, "")
		for i := 0; i+1 < len(item.Content); i += 2 {
			switch k, v := item.Content[i].Value, item.Content[i+1]; k {
			case "spec":
				checkKeys(errs, v, specKeys, "spec.")
				if ivs := child(v, "intervals"); ivs != nil && ivs.Kind == yaml.SequenceNode {
					for _, iv := range ivs.Content {
						checkKeys(errs, iv, intervalKeys, "spec.intervals[].")
					}
				}
			case "action":
				checkKeys(errs, v, actionKeys, "action.")
				checkKeys(errs, child(v, "retry_policy"), retryKeys, "action.retry_policy.")
				checkKeys(errs, child(v, "target"), targetKeys, "action.target.")
			}
		}
		var doc any
		if err := item.Decode(&doc); err != nil {
			errs.add(item.Line, "%v", err)
			continue
		}
		raw, err := json.Marshal(doc)
		if err != nil {
			errs.add(item.Line, "cannot be read as JSON: %v", err)
			continue
		}
		var req apijson.CreateSchedule
		if err := json.Unmarshal(raw, &req); err != nil {
			errs.add(typeErrorLine(item, err), "%s", describeDecodeError(err))
			continue
		}
		switch id := req.ScheduleID; {
		case id == "":
			errs.add(item.Line, "schedule_id is required: apply matches schedules by ID")
			continue
		case seen[id] != 0:
			errs.add(keyLine(item, "schedule_id"), "schedule_id %q appears twice (first at line %d)", id, seen[id])
			continue
		}
		seen[req.ScheduleID] = keyLine(item, "schedule_id")
		docs = append(docs, fileDoc{req: req, node: item})
	}
	if len(errs.errs) > 0 {
		return nil, nil, errs
	}
	return docs, cals, nil
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

func checkKeys(errs *fileErrors, n *yaml.Node, allowed []string, prefix string) {
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !slices.Contains(allowed, k.Value) {
			errs.add(k.Line, "unknown field %q; %sfields are %s", prefix+k.Value, prefix, strings.Join(allowed, ", "))
		}
	}
}

func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func keyLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}

// fieldLine finds the line of an API field path ("spec.cron_expressions[0]",
// "action.workflow_type") in a document, else the nearest enclosing line.
func fieldLine(doc *yaml.Node, path string) int {
	n, line := doc, doc.Line
	for part := range strings.SplitSeq(strings.ReplaceAll(path, "[", ".["), ".") {
		if part == "" {
			continue
		}
		if strings.HasPrefix(part, "[") {
			i, err := strconv.Atoi(strings.Trim(part, "[]"))
			if err != nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
			continue
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		line = keyLine(n, part)
		if n = child(n, part); n == nil {
			return line
		}
	}
	return line
}

func typeErrorLine(doc *yaml.Node, err error) int {
	var typ *json.UnmarshalTypeError
	if asTypeError(err, &typ) && typ.Field != "" {
		return fieldLine(doc, typ.Field)
	}
	return doc.Line
}

func asTypeError(err error, target **json.UnmarshalTypeError) bool { return errors.As(err, target) }

func describeDecodeError(err error) string {
	var typ *json.UnmarshalTypeError
	if asTypeError(err, &typ) {
		return fmt.Sprintf("%s must be %s, not %s", typ.Field, kindName(typ.Type.Kind().String()), typ.Value)
	}
	return err.Error()
}

func kindName(k string) string {
	switch k {
	case "string":
		return "a string"
	case "int", "int64", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "map", "struct", "ptr":
		return "a mapping"
	case "slice":
		return "a list"
	}
	return "another type"
}

// step is one planned change of an apply.
type step struct {
	kind string // create, update, delete; create calendar, update calendar
	id   string
	// A calendar step: the calendar to write and the plan's lines.
	calendar *apijson.CalendarWrite
	lines    []string
	doc      *fileDoc
	patch    apijson.SchedulePatch
	fields   []string
	changes  []apijson.FieldChange
}

func runScheduleApply(ctx context.Context, e env, args []string) error {
	c := newDBCommand("schedule apply", "tideline schedule apply -f schedules.yaml --dry-run", e).withActor()
	c.source = scheduling.SourceApply // what drift is measured from
	file := c.fs.String("f", "", "the file of schedules, or - for standard input (required)")
	dryRun := c.fs.Bool("dry-run", false, "print the plan and change nothing")
	prune := c.fs.Bool("prune", false, "also delete schedules labelled "+apijson.ManagedByLabel+"="+apijson.ManagedByApply+" that the file no longer lists, and calendars apply last changed that no schedule lists any more")
	if _, err := c.parse(args); err != nil {
		return err
	}
	a, p, err := openPlan(ctx, c, *file, *prune)
	if err != nil {
		return err
	}
	defer a.Close()
	p.print(e.stdout, *prune)
	if *dryRun {
		fmt.Fprintln(e.stdout, "Dry run: nothing changed.")
		return nil
	}
	// Each step is its own change (one transaction, one audit event), so
	// apply is not all-or-nothing: a step can still fail after the plan —
	// another writer created the schedule meanwhile, an outage — and the
	// steps before it stay applied. It then says exactly which steps were
	// applied and which were not (docs/schedules-file.md, "When apply fails
	// half-way"); running apply again finishes the job.
	for i, st := range p.steps {
		var err error
		switch st.kind {
		case "create calendar":
			_, err = a.CreateCalendar(ctx, *st.calendar)
		case "update calendar":
			_, err = a.UpdateCalendar(ctx, st.id, *st.calendar)
		case "delete calendar":
			err = a.DeleteCalendar(ctx, st.id)
		case "create":
			_, err = a.CreateSchedule(ctx, st.doc.req)
		case "update":
			_, err = a.UpdateSchedule(ctx, st.id, st.patch)
		case "delete":
			_, err = a.DeleteSchedule(ctx, st.id)
		}
		if err != nil {
			fmt.Fprintf(e.stdout, "Applied before the failure (%d of %d): %s\n", i, len(p.steps), stepList(p.steps[:i]))
			fmt.Fprintf(e.stdout, "Not applied (%d): %s\n", len(p.steps)-i, stepList(p.steps[i:]))
			return fmt.Errorf("%s %s: %w (%d of %d steps were applied, listed above; run apply again to finish)", st.kind, st.id, explain(err), i, len(p.steps))
		}
	}
	if n := p.counts["create calendar"] + p.counts["update calendar"] + p.counts["delete calendar"]; n > 0 {
		fmt.Fprintf(e.stdout, "Applied calendars: %d created, %d updated", p.counts["create calendar"], p.counts["update calendar"])
		if n := p.counts["delete calendar"]; n > 0 {
			fmt.Fprintf(e.stdout, ", %d deleted", n)
		}
		fmt.Fprintln(e.stdout, ".")
	}
	if p.counts["create"]+p.counts["update"]+p.counts["delete"] > 0 {
		fmt.Fprintf(e.stdout, "Applied: %d created, %d updated, %d deleted.\n", p.counts["create"], p.counts["update"], p.counts["delete"])
	}
	return nil
}

// applyPlan is what apply would do to make the namespace match a file.
type applyPlan struct {
	steps     []step
	unchanged int
	strays    []string // managed by apply, not in the file (deleted with --prune)
	counts    map[string]int
	// The file's calendars: how many, and how many match already.
	calendars, calendarsUnchanged int
	// Calendars managed by apply the file no longer lists: deleted with
	// --prune (steps), kept without it (strayCalendars), kept while a
	// schedule will still list them (keptCalendars).
	strayCalendars, keptCalendars []string
}

// openPlan reads the file named by -f, opens the backend and plans apply;
// the caller closes the backend.
func openPlan(ctx context.Context, c *dbCommand, file string, prune bool) (backend, *applyPlan, error) {
	if file == "" {
		return nil, nil, usagef("missing -f FILE (or -f - for standard input)")
	}
	var data []byte
	var err error
	name := file
	if name == "-" {
		data, err = io.ReadAll(c.e.stdin)
		name = "<stdin>"
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	docs, cals, err := parseApplyFile(name, data)
	if err != nil {
		return nil, nil, err
	}
	a, err := c.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	p, err := planApply(ctx, a, c.cfg.namespaceOrDefault(), name, docs, cals, prune)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, p, nil
}

// planApply plans everything, validated by the service, before anything
// is written: the file's calendars first, as they are written first.
func planApply(ctx context.Context, a backend, ns, name string, docs []fileDoc, cals []fileCalendar, prune bool) (*applyPlan, error) {
	existing := map[string]apijson.Schedule{}
	for s, err := range a.ListSchedules(ctx, client.ListSchedulesOptions{
		Statuses: []string{models.StatusActive, models.StatusPaused, models.StatusDeleted}, Limit: listPageSize}) {
		if err != nil {
			return nil, err
		}
		existing[s.ScheduleID] = s
	}

	errs := &fileErrors{name: name}
	cp := planCalendars(ctx, a, ns, errs, cals)
	p := &applyPlan{counts: map[string]int{}, steps: cp.steps, calendars: len(cals), calendarsUnchanged: cp.unchanged}
	now := time.Now()
	inFile := map[string]bool{}
	for i := range docs {
		d := &docs[i]
		inFile[d.req.ScheduleID] = true
		d.req.Labels = managed(d.req.Labels)
		cur, found := existing[d.req.ScheduleID]
		var err error
		switch {
		case found && cur.Status == models.StatusDeleted:
			errs.add(keyLine(d.node, "schedule_id"), "schedule %q was deleted; deleted schedules keep their ID (and history), so choose another schedule_id", d.req.ScheduleID)
			continue
		case listsAny(d.req, cp.pending):
			err = planWithFileCalendars(ctx, a, p, d, found, &cur, cp, now)
		case found:
			patch := fullPatch(d.req)
			var plan *apijson.UpdatePlan
			if plan, err = a.PlanUpdateSchedule(ctx, d.req.ScheduleID, patch); err == nil {
				if len(plan.ChangedFields) == 0 {
					p.unchanged++
					continue
				}
				p.steps = append(p.steps, step{kind: "update", id: d.req.ScheduleID, doc: d, patch: patch, fields: plan.ChangedFields, changes: plan.Changes})
			}
		default:
			var planned *apijson.Schedule
			if planned, err = a.PlanCreateSchedule(ctx, d.req); err == nil {
				p.steps = append(p.steps, step{kind: "create", id: d.req.ScheduleID, doc: d, changes: creationChanges(planned)})
			}
		}
		if err != nil {
			reportDocError(errs, d, explain(err))
		}
	}
	if len(errs.errs) > 0 {
		return nil, errs
	}
	for _, id := range sortedKeys(existing) {
		s := existing[id]
		if s.Status != models.StatusDeleted && !inFile[id] && s.Labels[apijson.ManagedByLabel] == apijson.ManagedByApply {
			p.strays = append(p.strays, id)
		}
	}
	if prune {
		for _, id := range p.strays {
			p.steps = append(p.steps, step{kind: "delete", id: id})
		}
	}
	calsInFile, byID := map[string]bool{}, map[string]*fileDoc{}
	for _, fc := range cals {
		calsInFile[fc.doc.Name] = true
	}
	for i := range docs {
		byID[docs[i].req.ScheduleID] = &docs[i]
	}
	if err := strayCalendars(ctx, a, p, calsInFile, byID, prune); err != nil {
		return nil, err
	}
	for _, st := range p.steps {
		p.counts[st.kind]++
	}
	return p, nil
}

// print writes the plan as apply and diff show it.
func (p *applyPlan) print(w io.Writer, prune bool) {
	for _, st := range p.steps {
		switch st.kind {
		case "create calendar", "update calendar":
			mark := map[bool]string{true: "+ ", false: "~ "}[st.kind == "create calendar"]
			fmt.Fprintln(w, mark+st.kind+" "+st.id)
			for _, line := range st.lines {
				fmt.Fprintln(w, "    "+line)
			}
		case "create":
			printChanges(w, "+ create "+st.id, st.changes)
		case "update":
			printChanges(w, "~ update "+st.id, st.changes)
		case "delete":
			fmt.Fprintf(w, "- delete %s (managed by apply, not in the file)\n", st.id)
		case "delete calendar":
			fmt.Fprintf(w, "- delete calendar %s (managed by apply, not in the file)\n", st.id)
		}
	}
	if p.calendars > 0 || p.counts["delete calendar"] > 0 {
		fmt.Fprintf(w, "Calendars: %d to create, %d to update, %d unchanged", p.counts["create calendar"], p.counts["update calendar"], p.calendarsUnchanged)
		if n := p.counts["delete calendar"]; n > 0 {
			fmt.Fprintf(w, ", %d to delete", n)
		}
		fmt.Fprintln(w, ".")
	}
	fmt.Fprintf(w, "Plan: %d to create, %d to update, %d to delete, %d unchanged.\n", p.counts["create"], p.counts["update"], p.counts["delete"], p.unchanged)
	if len(p.strays) > 0 && !prune {
		fmt.Fprintf(w, "Not in the file but managed by apply (kept; --prune deletes them): %s\n", strings.Join(p.strays, ", "))
	}
	if len(p.strayCalendars) > 0 {
		fmt.Fprintf(w, "Calendars not in the file but managed by apply (kept; --prune deletes them): %s\n", strings.Join(p.strayCalendars, ", "))
	}
	if len(p.keptCalendars) > 0 {
		fmt.Fprintf(w, "Calendars not in the file but managed by apply, kept while schedules list them: %s\n", strings.Join(p.keptCalendars, "; "))
	}
}

// stepList names steps as "create a, update b", or "none".
func stepList(steps []step) string {
	if len(steps) == 0 {
		return "none"
	}
	names := make([]string, len(steps))
	for i, st := range steps {
		names[i] = st.kind + " " + st.id
	}
	return strings.Join(names, ", ")
}

// managed adds the managed-by-apply label.
func managed(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[apijson.ManagedByLabel] = apijson.ManagedByApply
	return out
}

// fullPatch sets every field from the document: what the file leaves out
// goes back to its default, so the schedule ends up as the file says.
// paused is not applied to existing schedules: pausing is an operator's
// act (an incident), which a routine apply must not undo.
func fullPatch(req apijson.CreateSchedule) apijson.SchedulePatch {
	spec := apijson.Spec{}
	if req.Spec != nil {
		spec = *req.Spec
	}
	if req.Cron != "" {
		spec.CronExpressions = append([]string{req.Cron}, spec.CronExpressions...)
	}
	action := req.Action
	p := apijson.SchedulePatch{Spec: &spec, Action: &action, Set: map[string]json.RawMessage{}}
	// Every other field of the table, as the document's body has it (the
	// body, not the members, tells a field left out from one given as 0).
	given, _ := apijson.BodyOf(req) // a document read from YAML always encodes
	for _, f := range scheduling.Fields {
		if !f.Simple() {
			continue
		}
		value, ok := given[f.Key]
		if !ok {
			value = f.Empty()
		}
		p.Set[f.Key] = value
	}
	return p
}

// planWithFileCalendars plans a schedule that lists a calendar apply
// creates or changes: the server validates it without those calendars (it
// does not know them as the file says them yet), the spec is compiled with
// them as they will be, and the plan shows the spec as the file says it.
// The step writes the whole document, after the calendars.
func planWithFileCalendars(ctx context.Context, a backend, p *applyPlan, d *fileDoc, found bool, cur *apijson.Schedule, cp *calendarPlan, now time.Time) error {
	full := *d.req.Spec
	stripped := d.req
	spec, at := withoutCalendars(full, cp.pending)
	stripped.Spec = &spec
	var st step
	if found {
		patch := fullPatch(stripped)
		plan, err := a.PlanUpdateSchedule(ctx, d.req.ScheduleID, patch)
		if err != nil {
			return fileIndexes(err, at)
		}
		after := plan.Schedule.Spec
		after.ExcludeCalendars, after.OnExcluded = full.ExcludeCalendars, full.OnExcluded
		changes := withSpecChanges(plan.Changes, cur.Spec, after)
		if len(changes) == 0 {
			if err := checkWithFileCalendars(ctx, a, full, cp, now); err != nil {
				return err
			}
			p.unchanged++
			return nil
		}
		fields := slices.DeleteFunc(slices.Clone(plan.ChangedFields), func(f string) bool { return f == "spec" })
		for _, ch := range changes {
			if slices.Contains(specParts, ch.Field) {
				fields = append([]string{"spec"}, fields...)
				break
			}
		}
		st = step{kind: "update", id: d.req.ScheduleID, doc: d, patch: fullPatch(d.req), fields: fields, changes: changes}
	} else {
		planned, err := a.PlanCreateSchedule(ctx, stripped)
		if err != nil {
			return fileIndexes(err, at)
		}
		planned.Spec.ExcludeCalendars, planned.Spec.OnExcluded = full.ExcludeCalendars, full.OnExcluded
		st = step{kind: "create", id: d.req.ScheduleID, doc: d, changes: creationChanges(planned)}
	}
	if err := checkWithFileCalendars(ctx, a, full, cp, now); err != nil {
		return err
	}
	p.steps = append(p.steps, st)
	return nil
}

// reportDocError files a service refusal under the lines it is about.
func reportDocError(errs *fileErrors, d *fileDoc, err error) {
	prefix := d.req.ScheduleID + ": "
	var verr *scheduling.ValidationError
	if errors.As(err, &verr) {
		for _, k := range sortedKeys(verr.Fields) {
			msg := verr.Fields[k]
			if strings.HasPrefix(k, "spec.exclude_calendars[") && strings.Contains(msg, "unknown calendar") {
				msg += ", or add it to the file as a kind: calendar item"
			}
			errs.add(fieldLine(d.node, k), "%s%s: %s: %s", prefix, verr.Code, k, msg)
		}
		return
	}
	errs.add(keyLine(d.node, "schedule_id"), "%s%v", prefix, err)
}
