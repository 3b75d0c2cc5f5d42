package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// Versions of a schedule (CONTRACT §16): every ScheduleCreated and
// ScheduleUpdated of its audit stream is a version, numbered 1, 2, 3… in
// stream order. Nothing else stores them: a version is read from its event,
// and a revert is an ordinary update recorded like any other.

// Settings are the definition fields beyond spec, action and overlap
// policy — every entry of the field table (Fields) but those three — by
// JSON key, each encoded as the field's own entry encodes it.
// ScheduleCreated and ScheduleUpdated carry them whole since versions
// exist, so every later version reads from its own event; events recorded
// before hold only spec, action and policy, and replay (below) recovers
// the rest where the stream allows. A key no field has (a newer release's)
// is kept in the event and ignored here.
type Settings map[string]json.RawMessage

// SettingFields are the keys of the settings, in table order.
var SettingFields = func() []string {
	var out []string
	for _, f := range Fields {
		if f.recorded() {
			out = append(out, f.Key)
		}
	}
	return out
}()

// settingsOf records every setting of s.
func settingsOf(s *models.Schedule) *Settings {
	st := make(Settings, len(SettingFields))
	for _, f := range Fields {
		if f.recorded() {
			st[f.Key] = f.encode(s)
		}
	}
	return &st
}

// applyTo sets the settings st holds on s.
func (st Settings) applyTo(s *models.Schedule) error {
	for _, f := range Fields {
		if raw, ok := st[f.Key]; ok && f.recorded() {
			if err := f.load(raw, s); err != nil {
				return fmt.Errorf("decode setting %s: %w", f.Key, err)
			}
		}
	}
	return nil
}

// updatedPayload is the ScheduleUpdated of an update that left s so.
func updatedPayload(s *models.Schedule, changed []string) *UpdatedPayload {
	return &UpdatedPayload{ChangedFields: changed, Spec: s.Spec, Action: s.Action, OverlapPolicy: s.OverlapPolicy,
		NextFireAt: InstantOf(s.NextFireAt), Settings: settingsOf(s)}
}

// Where a version came from (Version.Source): the command context's source,
// with the console's "ui" spelled "console", and "revert" for a revert from
// any surface (its command context still says which).
const (
	SourceConsole   = "console"
	SourceAPI       = "api"
	SourceCLI       = "cli"
	SourceApply     = "apply"
	SourceRevert    = "revert"
	SourceScheduler = "scheduler"
)

// ManagedByLabel=ManagedByApply marks the schedules `schedule apply` keeps;
// drift is looked for among them.
const (
	ManagedByLabel = "tideline.dev/managed-by"
	ManagedByApply = "apply"
)

// Version is one version of a schedule.
type Version struct {
	N          int64
	Sequence   int64 // of its event in the audit stream
	EventType  string
	RecordedAt time.Time
	Context    *CommandContext // nil when the event recorded none
	Source     string          // a Source… constant, or the context's own source, "" for none
	// ChangedFields are the fields this version changed (none for the
	// first, which created them all).
	ChangedFields []string
	RevertedTo    *int64
	// Schedule is the schedule as this version defined it: identity and
	// state are today's, the definition (spec, action, policy, settings)
	// the version's. Unrecorded settings are left empty.
	Schedule *models.Schedule
	// Unrecorded lists the settings the audit stream does not hold for this
	// version: set before versions existed and changed later by an update
	// that also predates them. Reverting leaves them as they are.
	Unrecorded []string
	// known are the settings the stream holds, by JSON name.
	known map[string]json.RawMessage
}

// Author is who made the version: the actor, else the surface.
func (v *Version) Author() string { return v.Context.author() }

// Versions lists every version of a schedule, oldest first. It answers for
// deleted schedules, like History. The events are read through the index
// on non-trigger events (migration 0011), so a stream of a million fires
// costs what a stream of none does.
func (s *Service) Versions(ctx context.Context, namespace, scheduleID string) ([]Version, error) {
	sch, err := s.Get(ctx, namespace, scheduleID)
	if err != nil {
		return nil, err
	}
	return versionsOf(ctx, s.db, sch)
}

// Version returns version n of a schedule.
func (s *Service) Version(ctx context.Context, namespace, scheduleID string, n int64) (*Version, error) {
	versions, err := s.Versions(ctx, namespace, scheduleID)
	if err != nil {
		return nil, err
	}
	return pickVersion(versions, scheduleID, n)
}

func versionsOf(ctx context.Context, db bun.IDB, sch *models.Schedule) ([]Version, error) {
	events, err := models.ListVersionEvents(ctx, db, []string{sch.ID})
	if err != nil {
		return nil, err
	}
	return replay(sch, events)
}

func pickVersion(versions []Version, scheduleID string, n int64) (*Version, error) {
	if n < 1 || n > int64(len(versions)) {
		return nil, &NotFoundError{Code: CodeVersionNotFound,
			Message: fmt.Sprintf("schedule %q has no version %d (it has %d)", scheduleID, n, len(versions))}
	}
	return &versions[n-1], nil
}

// versionEvent is what one version's event says.
type versionEvent struct {
	ev       *models.ScheduleEvent
	spec     models.Spec
	action   models.Action
	policy   string
	changed  []string
	reverted *int64
	cc       *CommandContext
	settings map[string]json.RawMessage // nil: recorded before versions
}

func readVersionEvent(ev *models.ScheduleEvent) (versionEvent, error) {
	out := versionEvent{ev: ev}
	p, err := DecodePayload(ev.EventType, ev.Payload)
	if err != nil {
		return out, err
	}
	switch p := p.(type) {
	case *CreatedPayload:
		out.spec, out.action, out.policy, out.cc = p.Spec, p.Action, p.OverlapPolicy, p.CommandContext
	case *UpdatedPayload:
		out.spec, out.action, out.policy, out.cc = p.Spec, p.Action, p.OverlapPolicy, p.CommandContext
		out.changed, out.reverted = p.ChangedFields, p.RevertedTo
	default:
		return out, fmt.Errorf("event %d is a %s, not a version", ev.Sequence, ev.EventType)
	}
	var raw struct {
		Settings map[string]json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(ev.Payload, &raw); err != nil {
		return out, fmt.Errorf("decode settings of event %d: %w", ev.Sequence, err)
	}
	out.settings = raw.Settings
	return out, nil
}

// replay turns a schedule's version events (oldest first) into versions.
// Spec, action and policy are in every event. Settings are in every event
// since versions; for older events, a setting is known where the stream
// proves it: going forward, a setting an update did not change keeps the
// previous version's value; going back, it had the next version's value
// (the current schedule stands after the last one). What neither proves —
// a value overwritten by an old update — is Unrecorded.
func replay(current *models.Schedule, events []models.ScheduleEvent) ([]Version, error) {
	read := make([]versionEvent, len(events))
	for i := range events {
		var err error
		if read[i], err = readVersionEvent(&events[i]); err != nil {
			return nil, fmt.Errorf("read versions of %s: %w", current.ScheduleID, err)
		}
	}
	unchanged := func(m map[string]json.RawMessage, changed []string) map[string]json.RawMessage {
		out := make(map[string]json.RawMessage, len(m))
		for k, v := range m {
			if !slices.Contains(changed, k) {
				out[k] = v
			}
		}
		return out
	}
	forward := make([]map[string]json.RawMessage, len(read))
	for i, e := range read {
		switch {
		case e.settings != nil:
			forward[i] = e.settings
		case i == 0:
			forward[i] = map[string]json.RawMessage{}
		default:
			forward[i] = unchanged(forward[i-1], e.changed)
		}
	}
	backward := make([]map[string]json.RawMessage, len(read))
	for i := len(read) - 1; i >= 0; i-- {
		switch {
		case read[i].settings != nil:
			backward[i] = read[i].settings
		case i == len(read)-1:
			backward[i] = *settingsOf(current)
		default:
			backward[i] = unchanged(backward[i+1], read[i+1].changed)
		}
	}
	out := make([]Version, len(read))
	for i, e := range read {
		known := make(map[string]json.RawMessage, len(SettingFields))
		for k, v := range backward[i] {
			known[k] = v
		}
		for k, v := range forward[i] {
			known[k] = v
		}
		sch := *current
		sch.Spec, sch.Action, sch.OverlapPolicy = e.spec, e.action, e.policy
		// An unrecorded setting reads as its blank value, not the current one.
		st := *settingsOf(&models.Schedule{})
		maps.Copy(st, known)
		if err := st.applyTo(&sch); err != nil {
			return nil, fmt.Errorf("read version %d of %s: %w", i+1, current.ScheduleID, err)
		}
		v := Version{N: int64(i + 1), Sequence: e.ev.Sequence, EventType: e.ev.EventType, RecordedAt: e.ev.RecordedAt,
			Context: e.cc, Source: versionSource(e.cc, e.reverted), ChangedFields: e.changed, RevertedTo: e.reverted,
			Schedule: &sch, known: known}
		if v.ChangedFields == nil {
			v.ChangedFields = []string{}
		}
		for _, f := range SettingFields {
			if _, ok := known[f]; !ok {
				v.Unrecorded = append(v.Unrecorded, f)
			}
		}
		out[i] = v
	}
	return out, nil
}

func versionSource(cc *CommandContext, reverted *int64) string {
	switch {
	case reverted != nil:
		return SourceRevert
	case cc == nil:
		return ""
	case cc.Source == "ui":
		return SourceConsole
	}
	return cc.Source
}

// revertInput is the update that takes current back to version v: every
// field the version records, the unrecorded ones left as they are.
func revertInput(v *Version, current *models.Schedule) (UpdateInput, error) {
	merged := *settingsOf(current)
	for k, raw := range v.known {
		if _, ok := merged[k]; ok {
			merged[k] = raw
		}
	}
	in, err := DecodePatch(merged)
	if err != nil {
		return UpdateInput{}, fmt.Errorf("revert to version %d: %w", v.N, err)
	}
	spec, action, policy := v.Schedule.Spec, v.Schedule.Action, v.Schedule.OverlapPolicy
	in.Spec, in.Action, in.OverlapPolicy = &spec, &action, &policy
	return in, nil
}

// RevertPlan is what reverting to a version would do, written nowhere: the
// console's confirm page.
type RevertPlan struct {
	Version *Version
	// Plan's ChangedFields are empty when the schedule already matches the
	// version (a revert would be refused with no_change).
	Plan *UpdatePlan
	// FireTimesBefore and FireTimesAfter are the next five canonical fire
	// times now and after the revert (none while paused).
	FireTimesBefore, FireTimesAfter []time.Time
}

// PlanRevert validates a revert to version n as Revert does and reports
// what it would change.
func (s *Service) PlanRevert(ctx context.Context, namespace, scheduleID string, n int64) (*RevertPlan, error) {
	before, err := s.Get(ctx, namespace, scheduleID)
	if err != nil {
		return nil, err
	}
	versions, err := versionsOf(ctx, s.db, before)
	if err != nil {
		return nil, err
	}
	v, err := pickVersion(versions, scheduleID, n)
	if err != nil {
		return nil, err
	}
	in, err := revertInput(v, before)
	if err != nil {
		return nil, err
	}
	after := *before
	cals, err := s.calendarsForChange(ctx, s.db, before.Namespace, in.Spec, &before.Spec)
	if err != nil {
		return nil, err
	}
	changed, err := s.applyUpdate(&after, in, s.now(), cals)
	if err != nil {
		return nil, err
	}
	plan := &RevertPlan{Version: v, Plan: &UpdatePlan{Schedule: &after, ChangedFields: changed, Changes: DiffSchedules(before, &after)}}
	plan.FireTimesBefore = s.fireTimes(ctx, before)
	plan.FireTimesAfter = s.fireTimes(ctx, &after)
	return plan, nil
}

// fireTimes are the next five canonical fire times of a schedule that can
// fire; none for a paused or deleted one.
func (s *Service) fireTimes(ctx context.Context, sch *models.Schedule) []time.Time {
	if sch.Status != models.StatusActive {
		return []time.Time{}
	}
	return s.describe(ctx, sch).FutureFireTimes
}

// Revert updates a schedule back to the definition of version n: an
// ordinary update (validated as one, recorded as ScheduleUpdated) whose
// payload says reverted_to: n. Paused or active stays as it is, like
// apply: pausing is an operator's act, not part of a definition. A revert
// that would change nothing is refused (409 no_change). The version is
// read under the schedule's row lock, so concurrent edits and reverts
// queue and each reads the stream its predecessor left.
func (s *Service) Revert(ctx context.Context, namespace, scheduleID string, n int64, cc *CommandContext) (*models.Schedule, error) {
	return s.mutate(ctx, namespace, scheduleID, cc, func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		if sch.Status == models.StatusDeleted {
			return conflict(CodeScheduleDeleted, "schedule %q is deleted and cannot be reverted", scheduleID)
		}
		versions, err := versionsOf(ctx, tx, &sch.Schedule)
		if err != nil {
			return err
		}
		v, err := pickVersion(versions, scheduleID, n)
		if err != nil {
			return err
		}
		in, err := revertInput(v, &sch.Schedule)
		if err != nil {
			return err
		}
		cals, err := s.calendarsForChange(ctx, tx, sch.Namespace, in.Spec, &sch.Spec)
		if err != nil {
			return err
		}
		changed, err := s.applyUpdate(&sch.Schedule, in, rec.now, cals)
		if err != nil {
			return err
		}
		if len(changed) == 0 {
			return conflict(CodeNoChange, "schedule %q already matches version %d: a revert would change nothing", scheduleID, n)
		}
		p := updatedPayload(&sch.Schedule, changed)
		p.RevertedTo = &n
		return rec.record(ctx, &sch.Schedule, p, "", "")
	})
}

// FieldComparison is one field of two versions side by side.
type FieldComparison struct {
	Field    string
	From, To string // display spelling (FieldValues)
	Changed  bool
	// Unrecorded: the stream does not hold this field for one of the two.
	Unrecorded bool
}

// VersionDiff compares two versions of a schedule field by field.
type VersionDiff struct {
	From, To *Version
	Fields   []FieldComparison // every field of DiffFields, in its order
	Changes  []FieldChange     // the changed ones
}

// DiffVersions compares versions from and to of a schedule (either order).
func (s *Service) DiffVersions(ctx context.Context, namespace, scheduleID string, from, to int64) (*VersionDiff, error) {
	versions, err := s.Versions(ctx, namespace, scheduleID)
	if err != nil {
		return nil, err
	}
	a, err := pickVersion(versions, scheduleID, from)
	if err != nil {
		return nil, err
	}
	b, err := pickVersion(versions, scheduleID, to)
	if err != nil {
		return nil, err
	}
	d := &VersionDiff{From: a, To: b, Changes: []FieldChange{}}
	va, vb := FieldValues(a.Schedule), FieldValues(b.Schedule)
	for _, f := range DiffFields {
		c := FieldComparison{Field: f, From: va[f], To: vb[f], Unrecorded: slices.Contains(a.Unrecorded, f) || slices.Contains(b.Unrecorded, f)}
		c.Changed = !c.Unrecorded && c.From != c.To
		if c.Changed {
			d.Changes = append(d.Changes, FieldChange{Field: f, From: c.From, To: c.To})
		}
		d.Fields = append(d.Fields, c)
	}
	return d, nil
}

// Drift is whether a schedule kept by apply was edited outside it: its
// latest version is not apply's, though an earlier one is. A revert counts
// as such an edit (the file was not applied). Schedules apply never wrote
// have no drift.
type Drift struct {
	Drifted bool
	// LastApply is the number of the last version apply wrote (0: none);
	// Latest the newest version's number, Source and Author.
	LastApply      int64
	Latest         int64
	LatestSource   string
	LatestAuthor   string
	LatestRecorded time.Time
}

// DriftOf reports the drift of the given schedules (one query, through the
// index of non-trigger events), keyed by schedule ULID; schedules not
// labelled as managed by apply are left out.
func (s *Service) DriftOf(ctx context.Context, schedules []models.Schedule) (map[string]Drift, error) {
	var ids []string
	for i := range schedules {
		if schedules[i].Labels[ManagedByLabel] == ManagedByApply {
			ids = append(ids, schedules[i].ID)
		}
	}
	out := map[string]Drift{}
	for chunk := range slices.Chunk(ids, 500) {
		events, err := models.ListVersionEvents(ctx, s.db, chunk)
		if err != nil {
			return nil, err
		}
		for i := range events {
			e, err := readVersionEvent(&events[i])
			if err != nil {
				return nil, fmt.Errorf("read drift: %w", err)
			}
			d := out[events[i].WorkflowScheduleID]
			d.Latest++
			d.LatestSource = versionSource(e.cc, e.reverted)
			d.LatestAuthor = e.cc.author()
			d.LatestRecorded = events[i].RecordedAt
			if d.LatestSource == SourceApply {
				d.LastApply = d.Latest
			}
			d.Drifted = d.LastApply > 0 && d.Latest > d.LastApply
			out[events[i].WorkflowScheduleID] = d
		}
	}
	return out, nil
}

// MaxDriftScan bounds how many schedules labelled as managed by apply one
// Drifted call examines.
const MaxDriftScan = 10_000

// Drifted lists the live schedules of a namespace that drifted from their
// last apply (Drift), by schedule ID, with their drift; it examines the
// schedules labelled as managed by apply, at most MaxDriftScan of them.
func (s *Service) Drifted(ctx context.Context, namespace string) ([]models.Schedule, map[string]Drift, error) {
	f := ListFilter{Namespace: namespace, Label: ManagedByLabel + "=" + ManagedByApply, Limit: MaxListLimit}
	var drifted []models.Schedule
	drift := map[string]Drift{}
	for seen := 0; seen < MaxDriftScan; {
		page, err := s.List(ctx, f)
		if err != nil {
			return nil, nil, err
		}
		seen += len(page.Schedules)
		d, err := s.DriftOf(ctx, page.Schedules)
		if err != nil {
			return nil, nil, err
		}
		for _, sch := range page.Schedules {
			if d[sch.ID].Drifted {
				drifted = append(drifted, sch)
				drift[sch.ID] = d[sch.ID]
			}
		}
		if !page.HasMore || page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	return drifted, drift, nil
}
