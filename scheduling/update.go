package scheduling

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// Nullable is an update of a field that may be set to null: Set says the
// caller gave the field at all, Value nil means "clear it".
type Nullable[T any] struct {
	Set   bool
	Value *T
}

// UpdateInput is a partial update: nil pointers (and unset Nullables) leave
// their field alone; Spec and Action replace the whole object when given.
type UpdateInput struct {
	Spec                 *models.Spec
	Action               *models.Action
	OverlapPolicy        *string
	JitterSeconds        *int
	MaxRuns              Nullable[int64]
	Connection           Nullable[string]
	Queue                Nullable[string]
	Labels               *map[string]string
	Memo                 *map[string]string
	SearchAttributes     *map[string]string
	Note                 *string
	PauseAfterFailures   Nullable[int]
	CatchupWindowSeconds Nullable[int]
	// StartDeadlineSeconds applies to runs started after the change.
	StartDeadlineSeconds Nullable[int64]
}

// Update changes the given fields and records ScheduleUpdated with exactly
// the fields whose value changed. An update that changes nothing records
// nothing. The next fire is recomputed from now when the spec (timezone
// included) or the jitter changed.
func (s *Service) Update(ctx context.Context, namespace, scheduleID string, in UpdateInput, cc *CommandContext) (*models.Schedule, error) {
	return s.mutate(ctx, namespace, scheduleID, cc, func(ctx context.Context, _ bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		changed, err := s.applyUpdate(&sch.Schedule, in, rec.now)
		if err != nil {
			return err
		}
		if len(changed) == 0 {
			return errUnchanged
		}
		return rec.record(ctx, &sch.Schedule, &UpdatedPayload{
			ChangedFields: changed, Spec: sch.Spec, Action: sch.Action,
			OverlapPolicy: sch.OverlapPolicy, NextFireAt: InstantOf(sch.NextFireAt),
		}, "", "")
	})
}

// UpdatePlan is what an update would do, computed without writing: the
// dry run behind `schedule apply --dry-run`, PATCH ?dry_run=true and the
// console's "what will change" list, so every surface shows the service's
// own comparison rather than re-implementing it.
type UpdatePlan struct {
	// Schedule is the schedule as the update would leave it (next_fire_at
	// is what it would be if applied now; jitter is drawn afresh).
	Schedule *models.Schedule
	// ChangedFields is what ScheduleUpdated.changed_fields would list; empty
	// means the update is a no-op and would record nothing.
	ChangedFields []string
	// Changes are the same changes field by field, in display spelling.
	Changes []FieldChange
}

// PlanUpdate validates an update exactly as Update does and reports what
// it would change, writing nothing.
func (s *Service) PlanUpdate(ctx context.Context, namespace, scheduleID string, in UpdateInput) (*UpdatePlan, error) {
	before, err := s.Get(ctx, namespace, scheduleID)
	if err != nil {
		return nil, err
	}
	after := *before
	changed, err := s.applyUpdate(&after, in, s.now())
	if err != nil {
		return nil, err
	}
	return &UpdatePlan{Schedule: &after, ChangedFields: changed, Changes: DiffSchedules(before, &after)}, nil
}

// PlanCreate validates a new schedule as Create would (fields, spec that
// never fires, an ID that is taken, deleted or not) and returns it as it
// would be stored, writing nothing. `schedule apply` calls it for every
// document before it writes any, so that one bad document stops them all.
// It checks the fields through the update validators on a blank schedule:
// they are the same functions Create calls.
func (s *Service) PlanCreate(ctx context.Context, in CreateInput) (*models.Schedule, error) {
	now := s.now()
	in.Namespace = NamespaceOr(in.Namespace)
	if in.OverlapPolicy == "" {
		in.OverlapPolicy = OverlapSkip
	}
	v := &ValidationError{Code: CodeValidationFailed}
	if !ValidNamespace(in.Namespace) {
		v.Add("namespace", NamespaceRule)
	}
	if in.ScheduleID != "" && !ValidScheduleID(in.ScheduleID) {
		v.Add("schedule_id", "must be 1-200 characters of letters, digits, '.', '_' or '-', and not '.' or '..'")
	}
	validateMaxRuns(v, in.MaxRuns)
	sch := &models.Schedule{Namespace: in.Namespace, ScheduleID: in.ScheduleID, Status: models.StatusActive,
		BufferedActions: []models.BufferedAction{}, RecentActions: []models.RecentAction{}, CreatedAt: now, UpdatedAt: now}
	spec, action := in.Spec, in.Action
	labels, memo, attrs := nonNilMap(in.Labels), nonNilMap(in.Memo), nonNilMap(in.SearchAttributes)
	_, err := s.applyUpdate(sch, UpdateInput{Spec: &spec, Action: &action, OverlapPolicy: &in.OverlapPolicy,
		JitterSeconds: &in.JitterSeconds, MaxRuns: Nullable[int64]{Set: true, Value: in.MaxRuns},
		Connection: Nullable[string]{Set: true, Value: in.Connection}, Queue: Nullable[string]{Set: true, Value: in.Queue},
		Labels: &labels, Memo: &memo, SearchAttributes: &attrs, Note: &in.Note,
		PauseAfterFailures:   Nullable[int]{Set: true, Value: in.PauseAfterFailures},
		CatchupWindowSeconds: Nullable[int]{Set: true, Value: in.CatchupWindowSeconds},
		StartDeadlineSeconds: Nullable[int64]{Set: true, Value: in.StartDeadlineSeconds}}, now)
	var fields *ValidationError
	switch {
	case errors.As(err, &fields) && fields.Code == CodeValidationFailed:
		v.Merge("", fields)
	case err != nil:
		return nil, err
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	// A blank schedule's spec (null lists) always differs from a given one,
	// so applyUpdate computed the next fire; a spec that never fires failed.
	sch.RemainingActions = in.MaxRuns
	if in.Paused {
		sch.Status = models.StatusPaused
		sch.NextFireAt, sch.NextNominalAt = nil, nil
	}
	if in.ScheduleID != "" {
		if _, err := models.GetSchedule(ctx, s.db, in.Namespace, in.ScheduleID); err == nil {
			return nil, conflict(CodeScheduleAlreadyExists, "schedule %q already exists in namespace %q (deleted schedules keep their ID)", in.ScheduleID, in.Namespace)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
	}
	return sch, nil
}

// applyUpdate validates in against sch and applies it in memory, returning
// the changed fields (as ScheduleUpdated lists them). It is the whole of
// an update but the write, shared by Update and the plans.
func (s *Service) applyUpdate(sch *models.Schedule, in UpdateInput, now time.Time) ([]string, error) {
	if sch.Status == models.StatusDeleted {
		return nil, conflict(CodeScheduleDeleted, "schedule %q is deleted and cannot be updated", sch.ScheduleID)
	}
	v := &ValidationError{Code: CodeValidationFailed}
	var compiled *timespec.CompiledSpec
	if in.Spec != nil {
		if in.Spec.Timezone == "" {
			spec := *in.Spec
			spec.Timezone = "UTC"
			in.Spec = &spec
		}
		compiled = compileField(v, *in.Spec)
	}
	if in.Action != nil {
		action := *in.Action
		action.RetryPolicy = normalizeRetryPolicy(action.RetryPolicy)
		in.Action = &action
		validateAction(v, action)
	}
	if in.PauseAfterFailures.Set {
		validatePauseAfterFailures(v, in.PauseAfterFailures.Value)
	}
	if in.CatchupWindowSeconds.Set {
		validateCatchupWindow(v, in.CatchupWindowSeconds.Value)
	}
	if in.StartDeadlineSeconds.Set {
		validateStartDeadline(v, in.StartDeadlineSeconds.Value)
	}
	if in.OverlapPolicy != nil && !validPolicy(*in.OverlapPolicy) {
		v.Add("overlap_policy", policyMessage())
	}
	if in.JitterSeconds != nil {
		validateJitter(v, *in.JitterSeconds)
	}
	if in.MaxRuns.Set {
		validateMaxRuns(v, in.MaxRuns.Value)
		if m := in.MaxRuns.Value; m != nil && *m >= 1 && *m <= sch.FiresCount {
			v.Add("max_runs", fmt.Sprintf("must exceed the %d runs already started", sch.FiresCount))
		}
	}
	if in.Connection.Set {
		validateRoute(v, "connection", in.Connection.Value)
	}
	if in.Queue.Set {
		validateRoute(v, "queue", in.Queue.Value)
	}
	if in.Labels != nil {
		validateStringMap(v, "labels", *in.Labels)
	}
	if in.SearchAttributes != nil {
		validateStringMap(v, "search_attributes", *in.SearchAttributes)
	}
	if in.Memo != nil {
		validateMemo(v, *in.Memo)
	}
	if in.Note != nil {
		validateNote(v, *in.Note)
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}

	var changed []string
	set := func(name string, differs bool, apply func()) {
		if differs {
			changed = append(changed, name)
			apply()
		}
	}
	if in.Spec != nil {
		spec := normalizeSpec(*in.Spec)
		set("spec", !sameJSON(sch.Spec, spec), func() { sch.Spec = spec })
	}
	if in.Action != nil {
		set("action", !sameJSON(sch.Action, *in.Action), func() { sch.Action = *in.Action })
	}
	if in.OverlapPolicy != nil {
		set("overlap_policy", sch.OverlapPolicy != *in.OverlapPolicy, func() { sch.OverlapPolicy = *in.OverlapPolicy })
	}
	if in.JitterSeconds != nil {
		set("jitter_seconds", sch.JitterSeconds != *in.JitterSeconds, func() { sch.JitterSeconds = *in.JitterSeconds })
	}
	if in.MaxRuns.Set {
		set("max_runs", !reflect.DeepEqual(sch.MaxRuns, in.MaxRuns.Value), func() {
			sch.MaxRuns = in.MaxRuns.Value
			sch.RemainingActions = nil
			if m := in.MaxRuns.Value; m != nil {
				remaining := *m - sch.FiresCount
				sch.RemainingActions = &remaining
			}
		})
	}
	if in.Connection.Set {
		set("connection", !reflect.DeepEqual(sch.Connection, in.Connection.Value), func() { sch.Connection = in.Connection.Value })
	}
	if in.Queue.Set {
		set("queue", !reflect.DeepEqual(sch.Queue, in.Queue.Value), func() { sch.Queue = in.Queue.Value })
	}
	if in.PauseAfterFailures.Set {
		set("pause_after_failures", !reflect.DeepEqual(sch.PauseAfterFailures, in.PauseAfterFailures.Value), func() {
			sch.PauseAfterFailures = in.PauseAfterFailures.Value
		})
	}
	if in.CatchupWindowSeconds.Set {
		set("catchup_window_seconds", !reflect.DeepEqual(sch.CatchupWindowSeconds, in.CatchupWindowSeconds.Value), func() {
			sch.CatchupWindowSeconds = in.CatchupWindowSeconds.Value
		})
	}
	if in.StartDeadlineSeconds.Set {
		set("start_deadline_seconds", !reflect.DeepEqual(sch.StartDeadlineSeconds, in.StartDeadlineSeconds.Value), func() {
			sch.StartDeadlineSeconds = in.StartDeadlineSeconds.Value
		})
	}
	if in.Labels != nil {
		m := nonNilMap(*in.Labels)
		set("labels", !reflect.DeepEqual(sch.Labels, m), func() { sch.Labels = m })
	}
	if in.Memo != nil {
		m := nonNilMap(*in.Memo)
		set("memo", !reflect.DeepEqual(sch.Memo, m), func() { sch.Memo = m })
	}
	if in.SearchAttributes != nil {
		m := nonNilMap(*in.SearchAttributes)
		set("search_attributes", !reflect.DeepEqual(sch.SearchAttributes, m), func() { sch.SearchAttributes = m })
	}
	if in.Note != nil {
		set("note", sch.Note != *in.Note, func() { sch.Note = *in.Note })
	}
	if slices.Contains(changed, "spec") || slices.Contains(changed, "jitter_seconds") {
		if compiled == nil {
			var err error
			if compiled, err = timespec.Compile(sch.Spec); err != nil {
				return nil, fmt.Errorf("compile stored spec of %s: %w", sch.ScheduleID, err)
			}
		}
		s.scheduleNext(sch, compiled, now)
		if sch.NextFireAt == nil {
			return nil, &ValidationError{Code: CodeSpecNeverFires, Fields: map[string]string{"spec": "has no future fire time"}}
		}
		if sch.Status != models.StatusActive {
			// Paused: the check above still holds; resume computes the fire.
			sch.NextFireAt, sch.NextNominalAt = nil, nil
		}
	}
	return changed, nil
}

// FieldChange is one field an update changes, with its old and new value
// spelled for display (FieldValues).
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// DiffFields are the fields DiffSchedules compares, in display order: the
// console's edit form order, then what only the API can set.
var DiffFields = []string{"cron_expressions", "intervals", "timezone", "workflow_type", "workflow_class", "input",
	"execution_timeout_seconds", "run_timeout_seconds", "retry_policy", "overlap_policy", "jitter_seconds", "max_runs",
	"pause_after_failures", "catchup_window_seconds", "start_deadline_seconds", "connection", "queue", "labels", "memo", "search_attributes", "note"}

// DiffSchedules lists the fields whose display value differs between two
// versions of a schedule.
func DiffSchedules(before, after *models.Schedule) []FieldChange {
	from, to := FieldValues(before), FieldValues(after)
	var out []FieldChange
	for _, f := range DiffFields {
		if from[f] != to[f] {
			out = append(out, FieldChange{Field: f, From: from[f], To: to[f]})
		}
	}
	return out
}

// FieldValues spells each editable field of a schedule in one canonical way
// on one line, so that "1 hour" and "PT1H", {"a":1} and { "a": 1 }, or
// labels in any order compare equal: lists and maps joined by ", " (maps as
// sorted key=value), absent values as "".
func FieldValues(s *models.Schedule) map[string]string {
	ivs := make([]string, 0, len(s.Spec.Intervals))
	for _, iv := range s.Spec.Intervals {
		ivs = append(ivs, strings.TrimSpace(iv.Every+" "+iv.Offset))
	}
	tz := s.Spec.Timezone
	if tz == "" {
		tz = "UTC"
	}
	input := ""
	if len(s.Action.Input) > 0 {
		// Through `any` and back, as Update compares (1 == 1.0; key order).
		input = string(s.Action.Input)
		var doc any
		if json.Unmarshal(s.Action.Input, &doc) == nil {
			if raw, err := json.Marshal(doc); err == nil {
				input = string(raw)
			}
		}
	}
	return map[string]string{
		"cron_expressions": strings.Join(s.Spec.CronExpressions, ", "), "intervals": strings.Join(ivs, ", "), "timezone": tz,
		"workflow_type": s.Action.WorkflowType, "workflow_class": s.Action.WorkflowClass, "input": input,
		"execution_timeout_seconds": int64Text(s.Action.ExecutionTimeoutSeconds), "run_timeout_seconds": int64Text(s.Action.RunTimeoutSeconds),
		"retry_policy":   retryPolicyText(s.Action.RetryPolicy),
		"overlap_policy": s.OverlapPolicy, "jitter_seconds": strconv.Itoa(s.JitterSeconds), "max_runs": int64Text(s.MaxRuns),
		"pause_after_failures":   intText(s.PauseAfterFailures),
		"catchup_window_seconds": intText(s.CatchupWindowSeconds),
		"start_deadline_seconds": int64Text(s.StartDeadlineSeconds),
		"connection":             derefText(s.Connection), "queue": derefText(s.Queue),
		"labels": pairsText(s.Labels), "memo": pairsText(s.Memo), "search_attributes": pairsText(s.SearchAttributes), "note": s.Note,
	}
}

// retryPolicyText spells a retry policy on one line, every field named
// ("max_attempts=5 initial=2s coefficient=2 max=200s non_retryable=a,b");
// "" for none.
func retryPolicyText(p *models.RetryPolicy) string {
	if p == nil {
		return ""
	}
	p = normalizeRetryPolicy(p)
	return fmt.Sprintf("max_attempts=%d initial=%ds coefficient=%s max=%ds non_retryable=%s", *p.MaxAttempts,
		*p.InitialIntervalSeconds, strconv.FormatFloat(*p.BackoffCoefficient, 'g', -1, 64), *p.MaxIntervalSeconds,
		strings.Join(p.NonRetryableErrorTypes, ","))
}

func intText(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}

func int64Text(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}

func derefText(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func pairsText(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}

// sameJSON compares two values by their JSON encoding, which is how they
// are stored (so 1 and 1.0 in an input document compare equal).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}
