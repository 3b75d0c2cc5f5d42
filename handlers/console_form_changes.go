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
// UpdateInput group each belongs to.
var editFields = []struct{ field, group string }{
	{"cron_expressions", "spec"}, {"intervals", "spec"}, {"timezone", "spec"},
	{"workflow_type", "action"}, {"workflow_class", "action"}, {"input", "action"},
	{"execution_timeout_seconds", "action"}, {"run_timeout_seconds", "action"}, {"retry_policy", "action"},
	{"overlap_policy", "overlap_policy"}, {"jitter_seconds", "jitter_seconds"}, {"max_runs", "max_runs"},
	{"pause_after_failures", "pause_after_failures"}, {"catchup_window_seconds", "catchup_window_seconds"},
	{"start_deadline_seconds", "start_deadline_seconds"},
	{"connection", "connection"}, {"queue", "queue"}, {"labels", "labels"}, {"memo", "memo"}, {"note", "note"},
}

// canonical spells each editable field of a parsed form in one way, so
// that "1 hour" and "PT1H", or {"a":1} and { "a": 1 }, compare equal.
func (f *scheduleForm) canonical() map[string]string {
	s := &models.Schedule{Spec: f.spec, Action: f.action, OverlapPolicy: f.overlap, JitterSeconds: f.jitter, MaxRuns: f.maxRuns,
		CatchupWindowSeconds: f.catchup, StartDeadlineSeconds: f.startDeadline, Connection: f.connection, Queue: f.queue, Labels: f.labels, Memo: f.memo, Note: f.note,
		PauseAfterFailures: f.pauseAfter}
	out := canonicalOf(s)
	// A field that could not be read compares by what was typed.
	raw := map[string]string{"intervals": f.values.Intervals, "input": f.values.Input, "labels": f.values.Labels, "memo": f.values.Memo,
		"execution_timeout_seconds": f.values.ExecutionTimeoutSeconds, "run_timeout_seconds": f.values.RunTimeoutSeconds,
		"jitter_seconds": f.values.JitterSeconds, "max_runs": f.values.MaxRuns, "pause_after_failures": f.values.PauseAfterFailures,
		"catchup_window_seconds": f.values.CatchupWindowSeconds, "start_deadline_seconds": f.values.StartDeadlineSeconds}
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
	from, to := canonicalOf(s), f.canonical()
	var out []views.FieldChange
	for _, ef := range editFields {
		if from[ef.field] != to[ef.field] {
			out = append(out, views.FieldChange{Field: ef.field, From: from[ef.field], To: to[ef.field]})
		}
	}
	return out
}

// update is the partial update for the changed fields only: the service
// then records exactly those (its own comparison has the last word).
func (f *scheduleForm) update(changes []views.FieldChange) scheduling.UpdateInput {
	groups := map[string]bool{}
	for _, ch := range changes {
		for _, ef := range editFields {
			if ef.field == ch.Field {
				groups[ef.group] = true
			}
		}
	}
	var in scheduling.UpdateInput
	if groups["spec"] {
		in.Spec = &f.spec
	}
	if groups["action"] {
		in.Action = &f.action
	}
	if groups["overlap_policy"] {
		in.OverlapPolicy = &f.overlap
	}
	if groups["jitter_seconds"] {
		in.JitterSeconds = &f.jitter
	}
	if groups["max_runs"] {
		in.MaxRuns = scheduling.Nullable[int64]{Set: true, Value: f.maxRuns}
	}
	if groups["start_deadline_seconds"] {
		in.StartDeadlineSeconds = scheduling.Nullable[int64]{Set: true, Value: f.startDeadline}
	}
	if groups["catchup_window_seconds"] {
		in.CatchupWindowSeconds = scheduling.Nullable[int]{Set: true, Value: f.catchup}
	}
	if groups["connection"] {
		in.Connection = scheduling.Nullable[string]{Set: true, Value: f.connection}
	}
	if groups["queue"] {
		in.Queue = scheduling.Nullable[string]{Set: true, Value: f.queue}
	}
	if groups["pause_after_failures"] {
		in.PauseAfterFailures = scheduling.Nullable[int]{Set: true, Value: f.pauseAfter}
	}
	if groups["labels"] {
		in.Labels = &f.labels
	}
	if groups["memo"] {
		in.Memo = &f.memo
	}
	if groups["note"] {
		in.Note = &f.note
	}
	return in
}
