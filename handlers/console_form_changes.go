package handlers

import (
	"strings"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// The edit form's "what will change": the form and the schedule compared
// in the service's spelling, and the partial update for the changes.

// editFields are the form's editable inputs, in form order, with the
// field each belongs to: the field table's parts that have a console
// input (scheduling.ConsoleParts).
var editFields = scheduling.ConsoleParts()

// schedule is the form's definition as a schedule, the shape the field
// table reads values from.
func (f *scheduleForm) schedule() *models.Schedule {
	s := &models.Schedule{Spec: f.spec, Action: f.action}
	scheduling.Draft(s, f.fields)
	return s
}

// canonical spells each editable field of a parsed form in one way, so
// that "1 hour" and "PT1H", or {"a":1} and { "a": 1 }, compare equal.
func (f *scheduleForm) canonical() map[string]string {
	out := canonicalOf(f.schedule())
	// A field that could not be read compares by what was typed.
	raw := map[string]string{"intervals": f.values.Intervals, "at": f.values.At, "input": f.values.Input,
		"execution_timeout_seconds": f.values.ExecutionTimeoutSeconds, "run_timeout_seconds": f.values.RunTimeoutSeconds}
	for key, text := range f.values.Fields {
		raw[key] = text
	}
	for field := range f.errs {
		if v, ok := raw[field]; ok {
			out[field] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out
}

// canonicalOf is the service's spelling of each field, so the form's
// "what will change" list is the diff `schedule apply` prints.
func canonicalOf(s *models.Schedule) map[string]string { return scheduling.FieldValues(s) }

// changes lists what saving the form would change on s.
func (f *scheduleForm) changes(s *models.Schedule) []views.FieldChange {
	// The secret is write-only, so the form cannot say which one is
	// stored: the service's rule tells what this form does to it.
	scheduling.CarryTargetSecret(f.action.Target, s.Action.Target)
	from, to := canonicalOf(s), f.canonical()
	var out []views.FieldChange
	for _, ef := range editFields {
		if from[ef.Part] != to[ef.Part] {
			out = append(out, views.FieldChange{Field: ef.Part, From: from[ef.Part], To: to[ef.Part]})
		}
	}
	return out
}

// update is the partial update for the changed fields only: the service
// then records exactly those (its own comparison has the last word).
func (f *scheduleForm) update(changes []views.FieldChange) scheduling.UpdateInput {
	var fields []string
	for _, ch := range changes {
		for _, ef := range editFields {
			if ef.Part == ch.Field {
				fields = append(fields, ef.Field)
			}
		}
	}
	return scheduling.FieldPatch(f.schedule(), fields)
}
