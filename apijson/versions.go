package apijson

import (
	"encoding/json"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// The shapes of a schedule's versions (CONTRACT §15): GET
// /schedules/{id}/versions, /versions/{n}, /versions/diff and POST
// /versions/{n}/revert.

// Version is one version in a listing.
type Version struct {
	N          int64  `json:"n"`
	Sequence   int64  `json:"sequence"` // of its audit event
	EventType  string `json:"event_type"`
	RecordedAt Time   `json:"recorded_at"`
	// Actor is who made it ("" when unrecorded); Source where from:
	// console, api, cli, apply, revert (or scheduler; "" when unrecorded).
	Actor          string                     `json:"actor"`
	Source         string                     `json:"source"`
	CommandContext *scheduling.CommandContext `json:"command_context"`
	ChangedFields  []string                   `json:"changed_fields"` // [] for version 1
	RevertedTo     *int64                     `json:"reverted_to"`
	// UnrecordedFields are settings the audit stream does not hold for this
	// version (events recorded before versions existed); its definition
	// shows them empty and a revert leaves them as they are.
	UnrecordedFields []string `json:"unrecorded_fields"`
}

// VersionList answers GET /schedules/{id}/versions, oldest first.
type VersionList struct {
	ScheduleID string    `json:"schedule_id"`
	Namespace  string    `json:"namespace"`
	Versions   []Version `json:"versions"`
}

// VersionDetail answers GET /schedules/{id}/versions/{n}: the version and
// its whole definition as `schedule export` writes it.
type VersionDetail struct {
	Version
	ScheduleID string         `json:"schedule_id"`
	Namespace  string         `json:"namespace"`
	Definition CreateSchedule `json:"definition"`
}

// FieldComparison is one field of two versions side by side.
type FieldComparison struct {
	Field      string `json:"field"`
	From       string `json:"from"`
	To         string `json:"to"`
	Changed    bool   `json:"changed"`
	Unrecorded bool   `json:"unrecorded"`
}

// VersionDiff answers GET /schedules/{id}/versions/diff?from=A&to=B.
type VersionDiff struct {
	ScheduleID string            `json:"schedule_id"`
	From       int64             `json:"from"`
	To         int64             `json:"to"`
	Changes    []FieldChange     `json:"changes"`
	Fields     []FieldComparison `json:"fields"`
}

// RevertPlan answers POST /schedules/{id}/versions/{n}/revert?dry_run=true.
type RevertPlan struct {
	UpdatePlan
	Version         int64  `json:"version"`
	FireTimesBefore []Time `json:"fire_times_before"`
	FireTimesAfter  []Time `json:"fire_times_after"`
}

// RevertRequest is the optional body of a revert.
type RevertRequest struct {
	Reason string `json:"reason,omitempty"`
}

// FromVersion renders a version of a listing.
func FromVersion(v *scheduling.Version) Version {
	out := Version{N: v.N, Sequence: v.Sequence, EventType: v.EventType, RecordedAt: Time(v.RecordedAt),
		Source: v.Source, CommandContext: v.Context, ChangedFields: v.ChangedFields, RevertedTo: v.RevertedTo,
		UnrecordedFields: v.Unrecorded}
	if v.Context != nil {
		out.Actor = v.Context.Actor
	}
	if out.UnrecordedFields == nil {
		out.UnrecordedFields = []string{}
	}
	return out
}

// FromVersions renders a listing.
func FromVersions(s *models.Schedule, versions []scheduling.Version) VersionList {
	out := VersionList{ScheduleID: s.ScheduleID, Namespace: s.Namespace, Versions: make([]Version, 0, len(versions))}
	for i := range versions {
		out.Versions = append(out.Versions, FromVersion(&versions[i]))
	}
	return out
}

// FromVersionDetail renders one version with its definition.
func FromVersionDetail(v *scheduling.Version) VersionDetail {
	s := FromSchedule(v.Schedule)
	return VersionDetail{Version: FromVersion(v), ScheduleID: s.ScheduleID, Namespace: s.Namespace, Definition: ExportOf(&s)}
}

// FromVersionDiff renders a comparison.
func FromVersionDiff(scheduleID string, d *scheduling.VersionDiff) VersionDiff {
	out := VersionDiff{ScheduleID: scheduleID, From: d.From.N, To: d.To.N, Changes: make([]FieldChange, 0, len(d.Changes)),
		Fields: make([]FieldComparison, 0, len(d.Fields))}
	for _, c := range d.Changes {
		out.Changes = append(out.Changes, FieldChange(c))
	}
	for _, f := range d.Fields {
		out.Fields = append(out.Fields, FieldComparison(f))
	}
	return out
}

// FromRevertPlan renders a revert's dry run.
func FromRevertPlan(p *scheduling.RevertPlan) RevertPlan {
	times := func(list []time.Time) []Time {
		out := make([]Time, 0, len(list))
		for _, t := range list {
			out = append(out, Time(t))
		}
		return out
	}
	return RevertPlan{UpdatePlan: FromUpdatePlan(p.Plan), Version: p.Version.N,
		FireTimesBefore: times(p.FireTimesBefore), FireTimesAfter: times(p.FireTimesAfter)}
}

// ExportOf is a schedule as a document of an export file (and as a
// version's definition): what create accepts, no state (counters, next
// fire), paused as at creation.
func ExportOf(s *Schedule) CreateSchedule {
	// Every field of the field table (scheduling.Fields) is carried over by
	// its key, so a new field is exported without a line here.
	doc := CreateSchedule{ScheduleID: s.ScheduleID}
	var all map[string]json.RawMessage
	if raw, err := json.Marshal(s); err == nil && json.Unmarshal(raw, &all) == nil {
		fields := map[string]json.RawMessage{}
		for _, key := range scheduling.FieldKeys() {
			if v, ok := all[key]; ok {
				fields[key] = v
			}
		}
		if raw, err := json.Marshal(fields); err == nil {
			_ = json.Unmarshal(raw, &doc)
		}
	}
	doc.Paused = s.Status == models.StatusPaused
	return doc
}
