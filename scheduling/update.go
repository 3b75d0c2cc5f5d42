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

// Update changes the given fields and records ScheduleUpdated with exactly
// the fields whose value changed. An update that changes nothing records
// nothing. The next fire is recomputed from now when the spec (timezone
// included) or the jitter changed.
func (s *Service) Update(ctx context.Context, namespace, scheduleID string, in UpdateInput, cc *CommandContext) (*models.Schedule, error) {
	return s.mutate(ctx, namespace, scheduleID, cc, func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		cals, err := s.calendarsForChange(ctx, tx, namespace, in.Spec, &sch.Spec)
		if err != nil {
			return err
		}
		changed, err := s.applyUpdate(&sch.Schedule, in, rec.now, cals)
		if err != nil {
			return err
		}
		if len(changed) == 0 {
			return errUnchanged
		}
		if slices.Contains(changed, "action") {
			if err := s.keepTargetSecret(ctx, tx, &sch.Schedule, rec.now); err != nil {
				return err
			}
		}
		return rec.record(ctx, &sch.Schedule, updatedPayload(&sch.Schedule, changed), "", "")
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
	cals, err := s.calendarsForChange(ctx, s.db, namespace, in.Spec, &before.Spec)
	if err != nil {
		return nil, err
	}
	changed, err := s.applyUpdate(&after, in, s.now(), cals)
	if err != nil {
		return nil, err
	}
	return &UpdatePlan{Schedule: &after, ChangedFields: changed, Changes: DiffSchedules(before, &after)}, nil
}

// PlanCreate validates a new schedule as Create would (fields, spec that
// never fires, an ID that is taken, deleted or not) and returns it as it
// would be stored, writing nothing. `schedule apply` calls it for every
// document before it writes any, so that one bad document stops them all.
func (s *Service) PlanCreate(ctx context.Context, in CreateInput) (*models.Schedule, error) {
	in.Namespace = NamespaceOr(in.Namespace)
	cals, err := s.calendarsForChange(ctx, s.db, in.Namespace, &in.Spec, nil)
	if err != nil {
		return nil, err
	}
	sch, err := s.define(in, s.now(), cals)
	if err != nil {
		return nil, err
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

// define is a new schedule as Create stores it, in memory: the update of
// in's full definition onto a blank schedule, so a field is validated and
// written by the same code (Fields) on create and on update.
func (s *Service) define(in CreateInput, now time.Time, cals []*timespec.Calendar) (*models.Schedule, error) {
	v := &ValidationError{Code: CodeValidationFailed}
	if !ValidNamespace(in.Namespace) {
		v.Add("namespace", NamespaceRule)
	}
	if in.ScheduleID != "" && !ValidScheduleID(in.ScheduleID) {
		v.Add("schedule_id", "must be 1-200 characters of letters, digits, '.', '_' or '-', and not '.' or '..'")
	}
	sch := &models.Schedule{Namespace: in.Namespace, ScheduleID: in.ScheduleID, Status: models.StatusActive,
		BufferedActions: []models.BufferedAction{}, RecentActions: []models.RecentAction{}, CreatedAt: now, UpdatedAt: now}
	_, err := s.applyUpdate(sch, in.definition(), now, cals)
	var fields *ValidationError
	switch {
	case errors.As(err, &fields):
		v.Merge("", fields)
		if fields.Code != CodeValidationFailed {
			v.Code = fields.Code // spec_never_fires
		}
	case err != nil:
		return nil, err
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	// A blank schedule's spec (null lists) always differs from a given one,
	// so applyUpdate computed the next fire; a spec that never fires failed.
	if in.Paused {
		sch.Status = models.StatusPaused
		sch.NextFireAt, sch.NextNominalAt = nil, nil
	}
	return sch, nil
}

// applyUpdate validates in against sch and applies it in memory, returning
// the changed fields (as ScheduleUpdated lists them). It is the whole of
// an update but the write, shared by Update and the plans.
//
// cals are the namespace's calendars a spec may list (calendarsForChange).
func (s *Service) applyUpdate(sch *models.Schedule, in UpdateInput, now time.Time, cals []*timespec.Calendar) ([]string, error) {
	if sch.Status == models.StatusDeleted {
		return nil, conflict(CodeScheduleDeleted, "schedule %q is deleted and cannot be updated", sch.ScheduleID)
	}
	// Every given field is checked first, so one answer lists every
	// problem; then each is applied, in the table's order (Fields).
	u := &applying{svc: s, sch: sch, in: &in, v: &ValidationError{Code: CodeValidationFailed}, cals: cals}
	for _, f := range Fields {
		f.check(u)
	}
	if err := u.v.OrNil(); err != nil {
		return nil, err
	}
	var changed []string
	for _, f := range Fields {
		if f.apply(u) {
			changed = append(changed, f.Key)
		}
	}
	compiled := u.compiled
	if slices.Contains(changed, "spec") || slices.Contains(changed, "jitter_seconds") {
		if compiled == nil {
			var err error
			if compiled, err = timespec.Compile(sch.Spec, cals...); err != nil {
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

// DiffFields are the fields DiffSchedules compares, in display order (the
// parts of Fields): the console's edit form order, then what only the API
// can set.
var DiffFields = func() []string {
	var out []string
	for _, f := range Fields {
		out = append(out, f.Parts...)
	}
	return out
}()

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
// sorted key=value), absent values as "". Each field's spelling is its
// entry's in Fields.
func FieldValues(s *models.Schedule) map[string]string {
	out := make(map[string]string, len(DiffFields))
	for _, f := range Fields {
		f.texts(s, out)
	}
	return out
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
