package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
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
	Spec               *models.Spec
	Action             *models.Action
	OverlapPolicy      *string
	JitterSeconds      *int
	MaxRuns            Nullable[int64]
	Connection         Nullable[string]
	Queue              Nullable[string]
	Labels             *map[string]string
	Memo               *map[string]string
	SearchAttributes   *map[string]string
	Note               *string
	PauseAfterFailures Nullable[int]
}

// Update changes the given fields and records ScheduleUpdated with exactly
// the fields whose value changed. An update that changes nothing records
// nothing. The next fire is recomputed from now when the spec (timezone
// included) or the jitter changed.
func (s *Service) Update(ctx context.Context, namespace, scheduleID string, in UpdateInput, cc *CommandContext) (*models.Schedule, error) {
	return s.mutate(ctx, namespace, scheduleID, cc, func(ctx context.Context, _ bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		if sch.Status == models.StatusDeleted {
			return conflict("schedule_deleted", "schedule %q is deleted and cannot be updated", scheduleID)
		}
		v := &ValidationError{Code: "validation_failed"}
		var compiled *CompiledSpec
		if in.Spec != nil {
			if in.Spec.Timezone == "" {
				in.Spec.Timezone = "UTC"
			}
			compiled = compileField(v, *in.Spec)
		}
		if in.Action != nil {
			in.Action.RetryPolicy = normalizeRetryPolicy(in.Action.RetryPolicy)
			validateAction(v, *in.Action)
		}
		if in.PauseAfterFailures.Set {
			validatePauseAfterFailures(v, in.PauseAfterFailures.Value)
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
			return err
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
		if len(changed) == 0 {
			return errUnchanged
		}
		if slices.Contains(changed, "spec") || slices.Contains(changed, "jitter_seconds") {
			if compiled == nil {
				var err error
				if compiled, err = Compile(sch.Spec); err != nil {
					return fmt.Errorf("compile stored spec of %s: %w", scheduleID, err)
				}
			}
			s.scheduleNext(&sch.Schedule, compiled, rec.now)
			if sch.NextFireAt == nil {
				return &ValidationError{Code: "spec_never_fires", Fields: map[string]string{"spec": "has no future fire time"}}
			}
			if sch.Status != models.StatusActive {
				// Paused: the check above still holds; resume computes the fire.
				sch.NextFireAt, sch.NextNominalAt = nil, nil
			}
		}
		return rec.record(ctx, &sch.Schedule, EventScheduleUpdated, map[string]any{
			"changed_fields": changed, "spec": sch.Spec, "action": sch.Action,
			"overlap_policy": sch.OverlapPolicy, "next_fire_at": timeOrNil(sch.NextFireAt),
		}, "", "")
	})
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
