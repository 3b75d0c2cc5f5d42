package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
)

// Calendars in apply files (docs/schedules-file.md, "Calendars"): an item
// with kind: calendar is a calendar of the namespace, in the shape of POST
// /calendars. Apply writes the file's calendars before the schedules, so a
// file can hold a calendar and the schedules that list it; export writes
// the calendars its schedules list, so export | apply round-trips.

// kindCalendar marks a calendar item; an item without kind is a schedule.
const (
	kindCalendar = "calendar"
	kindSchedule = "schedule"
)

// calendarDoc is a calendar item of the file. A field left out means its
// default, as for schedules: no description, no dates, weekend sat and sun.
type calendarDoc struct {
	Kind        string   `json:"kind" yaml:"kind"`
	Name        string   `json:"name" yaml:"name"`
	Description string   `json:"description" yaml:"description"`
	Weekend     []string `json:"weekend" yaml:"weekend"`
	Dates       []string `json:"dates" yaml:"dates"`
}

var calendarKeys = jsonKeys(calendarDoc{})

// fileCalendar is one calendar of an apply file, with where it is.
type fileCalendar struct {
	doc  calendarDoc
	node *yaml.Node
}

// itemKind reads an item's kind: "" and "schedule" are schedules.
func itemKind(errs *fileErrors, item *yaml.Node) (string, bool) {
	k := child(item, "kind")
	if k == nil {
		return kindSchedule, true
	}
	switch k.Value {
	case kindCalendar, kindSchedule:
		return k.Value, true
	}
	errs.add(k.Line, "kind must be %s or %s (the default), not %q", kindCalendar, kindSchedule, k.Value)
	return "", false
}

// parseCalendarItem reads a kind: calendar item; dates are read as
// written (YAML would take an unquoted 2026-12-25 for a timestamp).
func parseCalendarItem(errs *fileErrors, item *yaml.Node, seen map[string]int) (fileCalendar, bool) {
	checkKeys(errs, item, calendarKeys, "")
	var doc calendarDoc
	if err := item.Decode(&doc); err != nil {
		line := item.Line
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			fmt.Sscan(m[1], &line)
		}
		errs.add(line, "calendar: %s", strings.TrimSpace(strings.TrimPrefix(yamlLine.ReplaceAllString(msg, ""), "yaml: unmarshal errors:")))
		return fileCalendar{}, false
	}
	switch {
	case doc.Name == "":
		errs.add(item.Line, "a calendar needs a name: apply matches calendars by name")
		return fileCalendar{}, false
	case seen[doc.Name] != 0:
		errs.add(keyLine(item, "name"), "calendar %q appears twice (first at line %d)", doc.Name, seen[doc.Name])
		return fileCalendar{}, false
	}
	seen[doc.Name] = keyLine(item, "name")
	return fileCalendar{doc: doc, node: item}, true
}

// input is the calendar as CreateCalendar takes it, defaults filled.
func (c *fileCalendar) input() scheduling.CalendarInput {
	weekend := c.doc.Weekend
	if weekend == nil {
		weekend = scheduling.DefaultWeekend
	}
	desc := c.doc.Description
	return scheduling.CalendarInput{Name: c.doc.Name, Description: &desc, Dates: c.doc.Dates, Weekend: weekend}
}

// calendarPlan is the calendar part of a plan.
type calendarPlan struct {
	steps     []step
	unchanged int
	// compiled are the file's calendars as they will be, for the schedules
	// of the file that list them; pending names those apply creates or
	// changes (the server does not know them yet as the file says them).
	compiled map[string]*timespec.Calendar
	pending  map[string]bool
}

// planCalendars compares the file's calendars with the namespace's and
// validates each change as the service will, writing nothing.
func planCalendars(ctx context.Context, a backend, ns string, errs *fileErrors, cals []fileCalendar) *calendarPlan {
	p := &calendarPlan{compiled: map[string]*timespec.Calendar{}, pending: map[string]bool{}}
	for i := range cals {
		fc := &cals[i]
		name := fc.doc.Name
		prefix := "calendar " + name + ": "
		def, compiled, err := scheduling.DefineCalendar(ns, fc.input())
		if err != nil {
			reportFieldErrors(errs, fc.node, prefix, err)
			continue
		}
		p.compiled[name] = compiled
		write := apijson.CalendarWrite{Description: &def.Description, Dates: def.Dates, Weekend: def.Weekend}
		cur, err := a.GetCalendar(ctx, name)
		switch {
		case isCalendarNotFound(err):
			write.Name = name
			p.pending[name] = true
			p.steps = append(p.steps, step{kind: "create calendar", id: name, calendar: &write, lines: createdCalendarLines(def)})
			continue
		case err != nil:
			errs.add(keyLine(fc.node, "name"), "%s%v", prefix, explain(err))
			continue
		}
		lines := changedCalendarLines(cur, def)
		if len(lines) == 0 {
			p.unchanged++
			continue
		}
		// The impact validates the change against the schedules using the
		// calendar now (a weekend that leaves them no business day).
		if _, err := a.CalendarImpact(ctx, name, write); err != nil {
			reportFieldErrors(errs, fc.node, prefix, explain(err))
			continue
		}
		p.pending[name] = true
		p.steps = append(p.steps, step{kind: "update calendar", id: name, calendar: &write, lines: lines})
	}
	return p
}

// reportFieldErrors files a refusal under the lines of the fields it names.
func reportFieldErrors(errs *fileErrors, node *yaml.Node, prefix string, err error) {
	var verr *scheduling.ValidationError
	if errors.As(err, &verr) {
		for _, k := range sortedKeys(verr.Fields) {
			errs.add(fieldLine(node, k), "%s%s: %s: %s", prefix, verr.Code, k, verr.Fields[k])
		}
		return
	}
	errs.add(node.Line, "%s%v", prefix, err)
}

// maxDatesShown bounds the dates a plan line lists (a calendar holds up
// to 20,000).
const maxDatesShown = 10

func datesText(dates []string) string {
	if len(dates) <= maxDatesShown {
		return strings.Join(dates, ", ")
	}
	return strings.Join(dates[:maxDatesShown], ", ") + fmt.Sprintf(" … (%d in all)", len(dates))
}

func createdCalendarLines(def *models.Calendar) []string {
	var out []string
	if def.Description != "" {
		out = append(out, "description: "+clean(def.Description))
	}
	out = append(out, "weekend: "+weekendText(def.Weekend))
	if len(def.Dates) > 0 {
		out = append(out, fmt.Sprintf("dates: %s", datesText(def.Dates)))
	} else {
		out = append(out, "dates: (none)")
	}
	return out
}

// changedCalendarLines lists what differs between the calendar and the
// file's: nothing when they match.
func changedCalendarLines(cur *apijson.Calendar, def *models.Calendar) []string {
	var out []string
	if cur.Description != def.Description {
		out = append(out, fmt.Sprintf("description: %s → %s", quoteEmpty(cur.Description), quoteEmpty(def.Description)))
	}
	if !slices.Equal(cur.Weekend, def.Weekend) {
		out = append(out, fmt.Sprintf("weekend: %s → %s", weekendText(cur.Weekend), weekendText(def.Weekend)))
	}
	var added, removed []string
	for _, d := range def.Dates {
		if _, found := slices.BinarySearch(cur.Dates, d); !found {
			added = append(added, d)
		}
	}
	for _, d := range cur.Dates {
		if _, found := slices.BinarySearch(def.Dates, d); !found {
			removed = append(removed, d)
		}
	}
	if len(added) > 0 {
		out = append(out, "dates added: "+datesText(added))
	}
	if len(removed) > 0 {
		out = append(out, "dates removed: "+datesText(removed))
	}
	return out
}

// listsAny reports whether a schedule document lists one of names.
func listsAny(req apijson.CreateSchedule, names map[string]bool) bool {
	if req.Spec == nil {
		return false
	}
	for _, n := range req.Spec.ExcludeCalendars {
		if names[n] {
			return true
		}
	}
	return false
}

// withoutCalendars is req's spec without the calendars in names: what the
// server can validate before apply has written them; at[i] is the index in
// the file's list of the i-th name kept.
func withoutCalendars(spec apijson.Spec, names map[string]bool) (apijson.Spec, []int) {
	kept, at := []string{}, []int{}
	for i, n := range spec.ExcludeCalendars {
		if !names[n] {
			kept = append(kept, n)
			at = append(at, i)
		}
	}
	spec.ExcludeCalendars = kept
	return spec, at
}

// fileIndexes renames the spec.exclude_calendars[i] fields of a refusal of
// the stripped spec to the file's indexes.
func fileIndexes(err error, at []int) error {
	var verr *scheduling.ValidationError
	if !errors.As(explain(err), &verr) {
		return err
	}
	fields := make(map[string]string, len(verr.Fields))
	for k, v := range verr.Fields {
		var i int
		if _, scanErr := fmt.Sscanf(k, "spec.exclude_calendars[%d]", &i); scanErr == nil && i < len(at) {
			k = fmt.Sprintf("spec.exclude_calendars[%d]", at[i])
		}
		fields[k] = v
	}
	return &scheduling.ValidationError{Code: verr.Code, Fields: fields}
}

// checkWithFileCalendars compiles a schedule's spec with the calendars it
// lists as they will be after apply — the file's where the file has them,
// else the namespace's — as the service compiles it (timespec.Compile),
// and refuses a spec with no future fire.
func checkWithFileCalendars(ctx context.Context, a backend, spec apijson.Spec, cp *calendarPlan, now time.Time) error {
	m := spec.Model()
	if m.Timezone == "" {
		m.Timezone = "UTC"
	}
	var cals []*timespec.Calendar
	for _, name := range m.ExcludeCalendars {
		if cal, ok := cp.compiled[name]; ok {
			cals = append(cals, cal)
			continue
		}
		cur, err := a.GetCalendar(ctx, name)
		if isCalendarNotFound(err) {
			continue // Compile names it on its field
		}
		if err != nil {
			return err
		}
		cal, err := timespec.NewCalendar(cur.Name, cur.Dates, cur.Weekend)
		if err != nil {
			return fmt.Errorf("compile calendar %s: %w", cur.Name, err)
		}
		cals = append(cals, cal)
	}
	compiled, err := timespec.Compile(m, cals...)
	var se *timespec.Error
	if errors.As(err, &se) {
		v := &scheduling.ValidationError{Code: scheduling.CodeValidationFailed, Fields: map[string]string{}}
		for field, message := range se.Fields {
			v.Fields["spec."+field] = message
		}
		if se.NeverFires {
			v.Code = scheduling.CodeSpecNeverFires
		}
		return v
	}
	if err != nil {
		return err
	}
	if _, ok := compiled.Next(now); !ok {
		return &scheduling.ValidationError{Code: scheduling.CodeSpecNeverFires, Fields: map[string]string{"spec": "has no future fire time"}}
	}
	return nil
}

// specParts are the diff fields the spec is shown as.
var specParts = func() []string {
	for _, f := range scheduling.Fields {
		if f.Key == "spec" {
			return f.Parts
		}
	}
	return nil
}()

// withSpecChanges replaces the spec lines of a diff (made with a stripped
// spec) by those of the spec as the file says it.
func withSpecChanges(changes []apijson.FieldChange, from, to apijson.Spec) []apijson.FieldChange {
	byField := map[string]apijson.FieldChange{}
	for _, ch := range changes {
		if !slices.Contains(specParts, ch.Field) {
			byField[ch.Field] = ch
		}
	}
	for _, ch := range scheduling.DiffSchedules(&models.Schedule{Spec: from.Model()}, &models.Schedule{Spec: to.Model()}) {
		byField[ch.Field] = apijson.FieldChange(ch)
	}
	var out []apijson.FieldChange
	for _, f := range scheduling.DiffFields {
		if ch, ok := byField[f]; ok {
			out = append(out, ch)
		}
	}
	return out
}

// exportCalendars are the calendars the exported schedules list, by name,
// as documents of the file.
func exportCalendars(ctx context.Context, a backend, docs []apijson.CreateSchedule) ([]calendarDoc, error) {
	var names []string
	for _, d := range docs {
		if d.Spec != nil {
			names = append(names, d.Spec.ExcludeCalendars...)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]calendarDoc, 0, len(names))
	for _, name := range names {
		cal, err := a.GetCalendar(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("export calendar %s: %w", name, err)
		}
		out = append(out, calendarDoc{Kind: kindCalendar, Name: cal.Name, Description: cal.Description, Weekend: cal.Weekend, Dates: cal.Dates})
	}
	return out, nil
}

// strayCalendars plans the calendars managed by apply that the file no
// longer lists: deleted with --prune once no schedule will list them (the
// schedules the plan deletes, and those the file stops listing them in,
// do not count), else kept and named. docs: the file's schedules by ID.
func strayCalendars(ctx context.Context, a backend, p *applyPlan, inFile map[string]bool, docs map[string]*fileDoc, prune bool) error {
	deleting := map[string]bool{}
	if prune {
		for _, id := range p.strays {
			deleting[id] = true
		}
	}
	cursor := ""
	for {
		page, err := a.ListCalendarsPage(ctx, 100, cursor)
		if err != nil {
			return err
		}
		for _, cal := range page.Calendars {
			if inFile[cal.Name] {
				continue
			}
			full, err := a.GetCalendar(ctx, cal.Name)
			if err != nil {
				return err
			}
			if full.ManagedBy != apijson.ManagedByApply { // scheduling.CalendarView.ManagedByApply
				continue
			}
			var users []string
			for _, id := range full.UsedBy {
				d, listed := docs[id]
				if deleting[id] || (listed && !listsAny(d.req, map[string]bool{cal.Name: true})) {
					continue
				}
				users = append(users, id)
			}
			switch {
			case len(users) > 0:
				p.keptCalendars = append(p.keptCalendars, fmt.Sprintf("%s (used by %s)", cal.Name, strings.Join(users, ", ")))
			case prune:
				p.steps = append(p.steps, step{kind: "delete calendar", id: cal.Name})
			default:
				p.strayCalendars = append(p.strayCalendars, cal.Name)
			}
		}
		if !page.HasMore || page.NextCursor == nil {
			return nil
		}
		cursor = *page.NextCursor
	}
}
