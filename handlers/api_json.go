package handlers

import (
	"encoding/json"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// jsonTime renders an instant as SPEC §2 wants: RFC 3339, UTC, microseconds.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	return json.Marshal(scheduling.FormatTime(time.Time(t)))
}

func jt(t time.Time) jsonTime { return jsonTime(t) }

func jtp(t *time.Time) *jsonTime {
	if t == nil {
		return nil
	}
	v := jsonTime(*t)
	return &v
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

// scheduleJSON is the describe object of SPEC §2.
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
		CreatedAt: jt(s.CreatedAt), UpdatedAt: jt(s.UpdatedAt),
		BufferedActions: []bufferedActionJSON{}, RecentActions: []recentActionJSON{},
	}
	for _, b := range s.BufferedActions {
		out.BufferedActions = append(out.BufferedActions, bufferedActionJSON{InstanceID: b.InstanceID, OccurrenceTime: jt(b.OccurrenceTime), Kind: b.Kind, BufferedAt: jt(b.BufferedAt)})
	}
	for _, a := range s.RecentActions {
		out.RecentActions = append(out.RecentActions, recentActionJSON{InstanceID: a.InstanceID, RunID: a.RunID, Outcome: a.Outcome,
			FiredAt: jt(a.FiredAt), OccurrenceTime: jt(a.OccurrenceTime), FireLagMs: a.FireLagMs, Reason: a.Reason})
	}
	return out
}

func toDescriptionJSON(d *scheduling.Description) scheduleJSON {
	out := toScheduleJSON(d.Schedule)
	out.FutureFireTimes = make([]jsonTime, 0, len(d.FutureFireTimes))
	for _, t := range d.FutureFireTimes {
		out.FutureFireTimes = append(out.FutureFireTimes, jt(t))
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

type historyJSON struct {
	ScheduleID string      `json:"schedule_id"`
	Namespace  string      `json:"namespace"`
	Events     []eventJSON `json:"events"`
	NextCursor *int64      `json:"next_cursor"`
	HasMore    bool        `json:"has_more"`
}

func toHistoryJSON(p *scheduling.HistoryPage) historyJSON {
	out := historyJSON{ScheduleID: p.ScheduleID, Namespace: p.Namespace, Events: make([]eventJSON, 0, len(p.Events)), NextCursor: p.NextCursor, HasMore: p.HasMore}
	for _, e := range p.Events {
		out.Events = append(out.Events, eventJSON{ID: e.ID, Sequence: e.Sequence, EventType: e.EventType, Payload: e.Payload,
			WorkflowInstanceID: e.WorkflowInstanceID, WorkflowRunID: e.WorkflowRunID, RecordedAt: jt(e.RecordedAt)})
	}
	return out
}

type runJSON struct {
	RunID               string          `json:"run_id"`
	InstanceID          string          `json:"instance_id"`
	Namespace           string          `json:"namespace"`
	ScheduleID          *string         `json:"schedule_id"`
	WorkflowType        string          `json:"workflow_type"`
	WorkflowClass       string          `json:"workflow_class"`
	Status              string          `json:"status"`
	Trigger             string          `json:"trigger"`
	Connection          string          `json:"connection"`
	Queue               string          `json:"queue"`
	Attempt             int             `json:"attempt"`
	Input               json.RawMessage `json:"input"`
	Output              json.RawMessage `json:"output"`
	OccurrenceTime      *jsonTime       `json:"occurrence_time"`
	WorkerID            *string         `json:"worker_id"`
	LeaseExpiresAt      *jsonTime       `json:"lease_expires_at"`
	RunDeadlineAt       *jsonTime       `json:"run_deadline_at"`
	ExecutionDeadlineAt *jsonTime       `json:"execution_deadline_at"`
	CancelRequested     bool            `json:"cancel_requested"`
	FailureMessage      *string         `json:"failure_message"`
	FailureType         *string         `json:"failure_type"`
	CreatedAt           jsonTime        `json:"created_at"`
	StartedAt           *jsonTime       `json:"started_at"`
	FinishedAt          *jsonTime       `json:"finished_at"`
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func toRunJSON(r *models.Run) runJSON {
	return runJSON{
		RunID: r.ID, InstanceID: r.InstanceID, Namespace: r.Namespace, ScheduleID: r.ScheduleID,
		WorkflowType: r.WorkflowType, WorkflowClass: r.WorkflowClass, Status: r.Status, Trigger: r.Trigger,
		Connection: r.Connection, Queue: r.Queue, Attempt: r.Attempt, Input: rawOrNull(r.Input), Output: rawOrNull(r.Output),
		OccurrenceTime: jtp(r.OccurrenceTime), WorkerID: r.WorkerID, LeaseExpiresAt: jtp(r.LeaseExpiresAt),
		RunDeadlineAt: jtp(r.RunDeadlineAt), ExecutionDeadlineAt: jtp(r.ExecutionDeadlineAt),
		CancelRequested: r.CancelRequestedAt != nil, FailureMessage: r.FailureMessage, FailureType: r.FailureType,
		CreatedAt: jt(r.CreatedAt), StartedAt: jtp(r.StartedAt), FinishedAt: jtp(r.FinishedAt),
	}
}

type runEventJSON struct {
	Sequence   int64           `json:"sequence"`
	EventType  string          `json:"event_type"`
	Payload    json.RawMessage `json:"payload"`
	RecordedAt jsonTime        `json:"recorded_at"`
}

func toRunEventsJSON(events []models.RunEvent) []runEventJSON {
	out := make([]runEventJSON, 0, len(events))
	for _, e := range events {
		out = append(out, runEventJSON{Sequence: e.Sequence, EventType: e.EventType, Payload: e.Payload, RecordedAt: jt(e.RecordedAt)})
	}
	return out
}

type tickRowJSON struct {
	ScheduleID     string    `json:"schedule_id"`
	Namespace      string    `json:"namespace"`
	Outcome        string    `json:"outcome"`
	InstanceID     *string   `json:"instance_id"`
	RunID          *string   `json:"run_id"`
	Reason         *string   `json:"reason"`
	OccurrenceTime *jsonTime `json:"occurrence_time"`
	LastFiredAt    *jsonTime `json:"last_fired_at"`
	NextFireAt     *jsonTime `json:"next_fire_at"`
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// TickRowsJSON renders tick rows for the API and `tideline tick --json`.
func TickRowsJSON(rows []scheduling.TickRow) any {
	out := make([]tickRowJSON, 0, len(rows))
	for _, r := range rows {
		out = append(out, tickRowJSON{ScheduleID: r.ScheduleID, Namespace: r.Namespace, Outcome: r.Outcome,
			InstanceID: nilIfEmpty(r.InstanceID), RunID: nilIfEmpty(r.RunID), Reason: nilIfEmpty(r.Reason),
			OccurrenceTime: jtp(r.OccurrenceTime), LastFiredAt: jtp(r.LastFiredAt), NextFireAt: jtp(r.NextFireAt)})
	}
	return out
}
