package cli

import (
	"encoding/json"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// The JSON the CLI prints has the JSON API's shapes (SPEC §2, §6), so a
// script can switch between `tideline … --output json` and the API. The
// handlers package keeps its describe and history encoders unexported;
// TestJSONMatchesAPI keeps these copies identical to them.

// jsonTime renders an instant as RFC 3339 UTC with microseconds.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	return json.Marshal(scheduling.FormatTime(time.Time(t)))
}

func jtp(t *time.Time) *jsonTime {
	if t == nil {
		return nil
	}
	v := jsonTime(*t)
	return &v
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type bufferedActionJSON struct {
	InstanceID     string   `json:"instance_id"`
	OccurrenceTime jsonTime `json:"occurrence_time"`
	Kind           string   `json:"kind"`
	BufferedAt     jsonTime `json:"buffered_at"`
}

type recentActionJSON struct {
	InstanceID     string   `json:"instance_id"`
	RunID          string   `json:"run_id"`
	Outcome        string   `json:"outcome"`
	FiredAt        jsonTime `json:"fired_at"`
	OccurrenceTime jsonTime `json:"occurrence_time"`
	FireLagMs      int64    `json:"fire_lag_ms"`
	Reason         string   `json:"reason"`
}

type scheduleJSON struct {
	ID                  string               `json:"id"`
	ScheduleID          string               `json:"schedule_id"`
	Namespace           string               `json:"namespace"`
	Status              string               `json:"status"`
	Spec                models.Spec          `json:"spec"`
	Action              models.Action        `json:"action"`
	OverlapPolicy       string               `json:"overlap_policy"`
	JitterSeconds       int                  `json:"jitter_seconds"`
	MaxRuns             *int64               `json:"max_runs"`
	RemainingActions    *int64               `json:"remaining_actions"`
	Connection          *string              `json:"connection"`
	Queue               *string              `json:"queue"`
	Labels              map[string]string    `json:"labels"`
	Memo                map[string]string    `json:"memo"`
	SearchAttributes    map[string]string    `json:"search_attributes"`
	Note                string               `json:"note"`
	FiresCount          int64                `json:"fires_count"`
	FailuresCount       int64                `json:"failures_count"`
	SkippedTriggerCount int64                `json:"skipped_trigger_count"`
	LastSkipReason      *string              `json:"last_skip_reason"`
	LastSkippedAt       *jsonTime            `json:"last_skipped_at"`
	NextFireAt          *jsonTime            `json:"next_fire_at"`
	NextNominalAt       *jsonTime            `json:"next_nominal_at"`
	LastFiredAt         *jsonTime            `json:"last_fired_at"`
	LatestInstanceID    *string              `json:"latest_instance_id"`
	LatestRunID         *string              `json:"latest_run_id"`
	BufferedActions     []bufferedActionJSON `json:"buffered_actions"`
	RecentActions       []recentActionJSON   `json:"recent_actions"`
	PausedAt            *jsonTime            `json:"paused_at"`
	DeletedAt           *jsonTime            `json:"deleted_at"`
	CreatedAt           jsonTime             `json:"created_at"`
	UpdatedAt           jsonTime             `json:"updated_at"`
	FutureFireTimes     []jsonTime           `json:"future_fire_times,omitempty"`
	SpecDescription     string               `json:"spec_description,omitempty"`
}

func toScheduleJSON(s *models.Schedule) scheduleJSON {
	out := scheduleJSON{
		ID: s.ID, ScheduleID: s.ScheduleID, Namespace: s.Namespace, Status: s.Status, Spec: s.Spec, Action: s.Action,
		OverlapPolicy: s.OverlapPolicy, JitterSeconds: s.JitterSeconds, MaxRuns: s.MaxRuns, RemainingActions: s.RemainingActions,
		Connection: s.Connection, Queue: s.Queue, Labels: s.Labels, Memo: s.Memo, SearchAttributes: s.SearchAttributes,
		Note: s.Note, FiresCount: s.FiresCount, FailuresCount: s.FailuresCount, SkippedTriggerCount: s.SkippedTriggerCount,
		LastSkipReason: s.LastSkipReason, LastSkippedAt: jtp(s.LastSkippedAt), NextFireAt: jtp(s.NextFireAt),
		NextNominalAt: jtp(s.NextNominalAt), LastFiredAt: jtp(s.LastFiredAt), LatestInstanceID: s.LatestInstanceID,
		LatestRunID: s.LatestRunID, PausedAt: jtp(s.PausedAt), DeletedAt: jtp(s.DeletedAt),
		CreatedAt: jsonTime(s.CreatedAt), UpdatedAt: jsonTime(s.UpdatedAt),
		BufferedActions: []bufferedActionJSON{}, RecentActions: []recentActionJSON{},
	}
	for _, b := range s.BufferedActions {
		out.BufferedActions = append(out.BufferedActions, bufferedActionJSON{InstanceID: b.InstanceID,
			OccurrenceTime: jsonTime(b.OccurrenceTime), Kind: b.Kind, BufferedAt: jsonTime(b.BufferedAt)})
	}
	for _, a := range s.RecentActions {
		out.RecentActions = append(out.RecentActions, recentActionJSON{InstanceID: a.InstanceID, RunID: a.RunID, Outcome: a.Outcome,
			FiredAt: jsonTime(a.FiredAt), OccurrenceTime: jsonTime(a.OccurrenceTime), FireLagMs: a.FireLagMs, Reason: a.Reason})
	}
	return out
}

func toDescriptionJSON(d *scheduling.Description) scheduleJSON {
	out := toScheduleJSON(d.Schedule)
	out.FutureFireTimes = make([]jsonTime, 0, len(d.FutureFireTimes))
	for _, t := range d.FutureFireTimes {
		out.FutureFireTimes = append(out.FutureFireTimes, jsonTime(t))
	}
	out.SpecDescription = d.SpecDescription
	return out
}

type eventJSON struct {
	ID                 string          `json:"id"`
	Sequence           int64           `json:"sequence"`
	EventType          string          `json:"event_type"`
	Payload            json.RawMessage `json:"payload"`
	WorkflowInstanceID *string         `json:"workflow_instance_id"`
	WorkflowRunID      *string         `json:"workflow_run_id"`
	RecordedAt         jsonTime        `json:"recorded_at"`
}

func toEventJSON(e models.ScheduleEvent) eventJSON {
	return eventJSON{ID: e.ID, Sequence: e.Sequence, EventType: e.EventType, Payload: e.Payload,
		WorkflowInstanceID: e.WorkflowInstanceID, WorkflowRunID: e.WorkflowRunID, RecordedAt: jsonTime(e.RecordedAt)}
}

// historyJSON is the history read contract's envelope (SPEC §6).
type historyJSON struct {
	ScheduleID string      `json:"schedule_id"`
	Namespace  string      `json:"namespace"`
	Events     []eventJSON `json:"events"`
	NextCursor *int64      `json:"next_cursor"`
	HasMore    bool        `json:"has_more"`
}

type triggerJSON struct {
	Outcome     string  `json:"outcome"`
	InstanceID  *string `json:"instance_id"`
	RunID       *string `json:"run_id"`
	Reason      *string `json:"reason"`
	BufferDepth int     `json:"buffer_depth"`
}

type backfillResultJSON struct {
	OccurrenceTime jsonTime `json:"occurrence_time"`
	InstanceID     *string  `json:"instance_id"`
	RunID          *string  `json:"run_id"`
	Outcome        string   `json:"outcome"`
	Reason         *string  `json:"reason"`
}

type backfillJSON struct {
	Outcome     string               `json:"outcome"`
	Occurrences int                  `json:"occurrences"`
	Results     []backfillResultJSON `json:"results"`
}

func toBackfillJSON(rep *scheduling.BackfillReport) backfillJSON {
	out := backfillJSON{Outcome: rep.Outcome, Occurrences: rep.Occurrences, Results: make([]backfillResultJSON, 0, len(rep.Results))}
	for _, r := range rep.Results {
		out.Results = append(out.Results, backfillResultJSON{OccurrenceTime: jsonTime(r.OccurrenceTime), InstanceID: nilIfEmpty(r.InstanceID),
			RunID: nilIfEmpty(r.RunID), Outcome: r.Outcome, Reason: nilIfEmpty(r.Reason)})
	}
	return out
}
