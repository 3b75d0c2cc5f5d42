// Package apijson is the JSON shape of Tideline's objects, shared by the
// API and the CLI's --output json so that both print exactly the same thing:
// snake_case names, RFC 3339 UTC times with microseconds, null for absent.
package apijson

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// Time renders an instant as CONTRACT §2 wants: RFC 3339, UTC, microseconds.
type Time time.Time

func (t Time) MarshalJSON() ([]byte, error) {
	return json.Marshal(scheduling.FormatTime(time.Time(t)))
}

// At wraps an instant.
func At(t time.Time) Time { return Time(t) }

// AtPtr wraps an optional instant.
func AtPtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := Time(*t)
	return &v
}

type BufferedAction struct {
	InstanceID     string `json:"instance_id"`
	OccurrenceTime Time   `json:"occurrence_time"`
	Kind           string `json:"kind"`
	BufferedAt     Time   `json:"buffered_at"`
}

type RecentAction struct {
	InstanceID     string `json:"instance_id"`
	RunID          string `json:"run_id"`
	Outcome        string `json:"outcome"`
	FiredAt        Time   `json:"fired_at"`
	OccurrenceTime Time   `json:"occurrence_time"`
	FireLagMs      int64  `json:"fire_lag_ms"`
	Reason         string `json:"reason"`
}

// LastRun is the schedule's last finished run (CONTRACT §10).
type LastRun struct {
	RunID        string  `json:"run_id"`
	Status       string  `json:"status"`
	FinishedAt   *Time   `json:"finished_at"`
	ErrorMessage *string `json:"error_message"`
}

// RecentRun is one of the schedule's last 10 finished runs, newest first;
// duration_ms runs from its first start to its end (null if it never
// started: cancelled or timed out while pending).
type RecentRun struct {
	RunID          string `json:"run_id"`
	Status         string `json:"status"`
	OccurrenceTime *Time  `json:"occurrence_time"`
	DurationMs     *int64 `json:"duration_ms"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Schedule is the describe object of CONTRACT §2.
type Schedule struct {
	ID                   string            `json:"id"`
	ScheduleID           string            `json:"schedule_id"`
	Namespace            string            `json:"namespace"`
	Status               string            `json:"status"`
	Spec                 Spec              `json:"spec"`
	Action               Action            `json:"action"`
	OverlapPolicy        string            `json:"overlap_policy"`
	JitterSeconds        int               `json:"jitter_seconds"`
	MaxRuns              *int64            `json:"max_runs"`
	RemainingActions     *int64            `json:"remaining_actions"`
	Connection           *string           `json:"connection"`
	Queue                *string           `json:"queue"`
	Labels               map[string]string `json:"labels"`
	Memo                 map[string]string `json:"memo"`
	SearchAttributes     map[string]string `json:"search_attributes"`
	Note                 string            `json:"note"`
	FiresCount           int64             `json:"fires_count"`
	PauseAfterFailures   *int              `json:"pause_after_failures"`
	CatchupWindowSeconds *int              `json:"catchup_window_seconds"`
	StartDeadlineSeconds *int64            `json:"start_deadline_seconds"`
	LastRun              *LastRun          `json:"last_run"`
	ConsecutiveFailures  int64             `json:"consecutive_failures"`
	// Health is the schedule's health state (scheduling.HealthStateOf):
	// failing, stuck, overdue, skipping, ok or no_runs.
	Health              string      `json:"health,omitempty"`
	FailuresCount       int64       `json:"failures_count"`
	StartFailuresCount  int64       `json:"start_failures_count"`
	RecentRuns          []RecentRun `json:"recent_runs"`
	SkippedTriggerCount int64       `json:"skipped_trigger_count"`
	LastSkipReason      *string     `json:"last_skip_reason"`
	LastSkippedAt       *Time       `json:"last_skipped_at"`
	NextFireAt          *Time       `json:"next_fire_at"`
	// Ended: active, but the spec has no occurrence left (CONTRACT §16).
	Ended            bool             `json:"ended"`
	NextNominalAt    *Time            `json:"next_nominal_at"`
	LastFiredAt      *Time            `json:"last_fired_at"`
	LatestInstanceID *string          `json:"latest_instance_id"`
	LatestRunID      *string          `json:"latest_run_id"`
	BufferedActions  []BufferedAction `json:"buffered_actions"`
	RecentActions    []RecentAction   `json:"recent_actions"`
	PausedAt         *Time            `json:"paused_at"`
	PauseReason      *string          `json:"pause_reason"`
	PausedBy         *string          `json:"paused_by"`
	PausedUntil      *Time            `json:"paused_until"`
	DeletedAt        *Time            `json:"deleted_at"`
	CreatedAt        Time             `json:"created_at"`
	UpdatedAt        Time             `json:"updated_at"`
	FutureFireTimes  []Time           `json:"future_fire_times,omitempty"`
	SpecDescription  string           `json:"spec_description,omitempty"`
}

// FromSchedule renders a schedule.
func FromSchedule(s *models.Schedule) Schedule {
	out := Schedule{
		ID: s.ID, ScheduleID: s.ScheduleID, Namespace: s.Namespace, Status: s.Status, Spec: SpecOf(s.Spec), Action: ActionOf(s.Action),
		RemainingActions: s.RemainingActions, FiresCount: s.FiresCount, SkippedTriggerCount: s.SkippedTriggerCount,
		ConsecutiveFailures: s.Health.ConsecutiveFailures,
		Health:              s.HealthState, FailuresCount: s.Health.FailuresCount, StartFailuresCount: s.StartFailuresCount, RecentRuns: []RecentRun{},
		LastSkipReason: s.LastSkipReason, LastSkippedAt: AtPtr(s.LastSkippedAt), NextFireAt: AtPtr(s.NextFireAt), Ended: s.Ended(),
		NextNominalAt: AtPtr(s.NextNominalAt), LastFiredAt: AtPtr(s.LastFiredAt), LatestInstanceID: s.LatestInstanceID,
		LatestRunID: s.LatestRunID, PausedAt: AtPtr(s.PausedAt), PauseReason: s.PauseReason, PausedBy: s.PausedBy,
		PausedUntil: AtPtr(s.PausedUntil), DeletedAt: AtPtr(s.DeletedAt),
		CreatedAt: At(s.CreatedAt), UpdatedAt: At(s.UpdatedAt),
		BufferedActions: []BufferedAction{}, RecentActions: []RecentAction{},
	}
	setFields(&out, s) // overlap_policy, jitter_seconds, max_runs… (fields.go)
	for _, b := range s.BufferedActions {
		out.BufferedActions = append(out.BufferedActions, BufferedAction{InstanceID: b.InstanceID, OccurrenceTime: At(b.OccurrenceTime), Kind: b.Kind, BufferedAt: At(b.BufferedAt)})
	}
	if h := s.Health; h.LastRunID != nil {
		out.LastRun = &LastRun{RunID: *h.LastRunID, Status: deref(h.LastRunStatus), FinishedAt: AtPtr(h.LastRunFinishedAt), ErrorMessage: h.LastRunError}
	}
	for _, r := range s.Health.RecentRuns {
		out.RecentRuns = append(out.RecentRuns, RecentRun{RunID: r.RunID, Status: r.Status, OccurrenceTime: AtPtr(r.Occurrence()), DurationMs: r.DurationMs})
	}
	for _, a := range s.RecentActions {
		out.RecentActions = append(out.RecentActions, RecentAction{InstanceID: a.InstanceID, RunID: a.RunID, Outcome: a.Outcome,
			FiredAt: At(a.FiredAt), OccurrenceTime: At(a.OccurrenceTime), FireLagMs: a.FireLagMs, Reason: a.Reason})
	}
	return out
}

// FromDescription renders a schedule with its next fire times and description.
func FromDescription(d *scheduling.Description) Schedule {
	out := FromSchedule(d.Schedule)
	out.FutureFireTimes = make([]Time, 0, len(d.FutureFireTimes))
	for _, t := range d.FutureFireTimes {
		out.FutureFireTimes = append(out.FutureFireTimes, At(t))
	}
	out.SpecDescription = d.SpecDescription
	return out
}

type Event struct {
	ID                 string          `json:"id"`
	Sequence           int64           `json:"sequence"`
	EventType          string          `json:"event_type"`
	Payload            json.RawMessage `json:"payload"`
	WorkflowInstanceID *string         `json:"workflow_instance_id"`
	WorkflowRunID      *string         `json:"workflow_run_id"`
	RecordedAt         Time            `json:"recorded_at"`
}

type History struct {
	ScheduleID string  `json:"schedule_id"`
	Namespace  string  `json:"namespace"`
	Events     []Event `json:"events"`
	NextCursor *int64  `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
	// Total counts the listing's events over all pages.
	Total int64 `json:"total"`
	// Compacted is the compacted range the page crosses (SPEC §19), null
	// when it crosses none.
	Compacted *Compacted `json:"compacted"`
}

// Compacted is the part of an audit stream that audit compaction removed:
// its fire and skip events from from_sequence through to_sequence.
type Compacted struct {
	FromSequence int64 `json:"from_sequence"`
	ToSequence   int64 `json:"to_sequence"`
	Fires        int64 `json:"fires"`
	Skips        int64 `json:"skips"`
}

// FromHistory renders one page of an audit stream.
func FromHistory(p *scheduling.HistoryPage) History {
	out := History{ScheduleID: p.ScheduleID, Namespace: p.Namespace, Events: make([]Event, 0, len(p.Events)), NextCursor: p.NextCursor, HasMore: p.HasMore, Total: p.Total}
	if c := p.Compacted; c != nil {
		out.Compacted = &Compacted{FromSequence: c.FromSequence, ToSequence: c.ToSequence, Fires: c.Fires, Skips: c.Skips}
	}
	for _, e := range p.Events {
		out.Events = append(out.Events, FromEvent(e))
	}
	return out
}

// FromEvent renders one audit event.
func FromEvent(e models.ScheduleEvent) Event {
	return Event{ID: e.ID, Sequence: e.Sequence, EventType: e.EventType, Payload: e.Payload,
		WorkflowInstanceID: e.WorkflowInstanceID, WorkflowRunID: e.WorkflowRunID, RecordedAt: At(e.RecordedAt)}
}

type Run struct {
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
	OccurrenceTime      *Time           `json:"occurrence_time"`
	WorkerID            *string         `json:"worker_id"`
	LeaseExpiresAt      *Time           `json:"lease_expires_at"`
	RunDeadlineAt       *Time           `json:"run_deadline_at"`
	ExecutionDeadlineAt *Time           `json:"execution_deadline_at"`
	CancelRequested     bool            `json:"cancel_requested"`
	FailureMessage      *string         `json:"failure_message"`
	FailureType         *string         `json:"failure_type"`
	AvailableAt         *Time           `json:"available_at"` // a pending run waiting to retry: not before this
	RetryPolicy         *RetryPolicy    `json:"retry_policy"`
	CreatedAt           Time            `json:"created_at"`
	StartedAt           *Time           `json:"started_at"`
	FinishedAt          *Time           `json:"finished_at"`
}

// RawOrNull renders an absent JSON document as null.
func RawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// FromRun renders a run.
func FromRun(r *models.Run) Run {
	return Run{
		RunID: r.ID, InstanceID: r.InstanceID, Namespace: r.Namespace, ScheduleID: r.ScheduleID,
		WorkflowType: r.WorkflowType, WorkflowClass: r.WorkflowClass, Status: r.Status, Trigger: r.Trigger,
		Connection: r.Connection, Queue: r.Queue, Attempt: r.Attempt, Input: RawOrNull(r.Input), Output: RawOrNull(r.Output),
		OccurrenceTime: AtPtr(r.OccurrenceTime), WorkerID: r.WorkerID, LeaseExpiresAt: AtPtr(r.LeaseExpiresAt),
		RunDeadlineAt: AtPtr(r.RunDeadlineAt), ExecutionDeadlineAt: AtPtr(r.ExecutionDeadlineAt),
		CancelRequested: r.CancelRequestedAt != nil, FailureMessage: r.FailureMessage, FailureType: r.FailureType,
		AvailableAt: AtPtr(r.AvailableAt), RetryPolicy: RetryPolicyOf(r.RetryPolicy),
		CreatedAt: At(r.CreatedAt), StartedAt: AtPtr(r.StartedAt), FinishedAt: AtPtr(r.FinishedAt),
	}
}

type RunEvent struct {
	Sequence   int64           `json:"sequence"`
	EventType  string          `json:"event_type"`
	Payload    json.RawMessage `json:"payload"`
	RecordedAt Time            `json:"recorded_at"`
}

// FromRunEvents renders a run's history.
func FromRunEvents(events []models.RunEvent) []RunEvent {
	out := make([]RunEvent, 0, len(events))
	for _, e := range events {
		out = append(out, RunEvent{Sequence: e.Sequence, EventType: e.EventType, Payload: e.Payload, RecordedAt: At(e.RecordedAt)})
	}
	return out
}

type TickRow struct {
	ScheduleID     string  `json:"schedule_id"`
	Namespace      string  `json:"namespace"`
	Outcome        string  `json:"outcome"`
	InstanceID     *string `json:"instance_id"`
	RunID          *string `json:"run_id"`
	Reason         *string `json:"reason"`
	OccurrenceTime *Time   `json:"occurrence_time"`
	LastFiredAt    *Time   `json:"last_fired_at"`
	NextFireAt     *Time   `json:"next_fire_at"`
}

// NilIfEmpty renders "" as null.
func NilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// FromTickRows renders tick rows for the API and `tideline tick --json`.
func FromTickRows(rows []scheduling.TickRow) []TickRow {
	out := make([]TickRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, TickRow{ScheduleID: r.ScheduleID, Namespace: r.Namespace, Outcome: r.Outcome,
			InstanceID: NilIfEmpty(r.InstanceID), RunID: NilIfEmpty(r.RunID), Reason: NilIfEmpty(r.Reason),
			OccurrenceTime: AtPtr(r.OccurrenceTime), LastFiredAt: AtPtr(r.LastFiredAt), NextFireAt: AtPtr(r.NextFireAt)})
	}
	return out
}

// Trigger is the answer to a manual trigger.
type Trigger struct {
	Outcome     string  `json:"outcome"`
	InstanceID  *string `json:"instance_id"`
	RunID       *string `json:"run_id"`
	Reason      *string `json:"reason"`
	BufferDepth int     `json:"buffer_depth"`
}

// FromTrigger renders a trigger's result.
func FromTrigger(r scheduling.FireResult) Trigger {
	return Trigger{r.Outcome, NilIfEmpty(r.InstanceID), NilIfEmpty(r.RunID), NilIfEmpty(r.Reason), r.BufferDepth}
}

// BackfillResult is one occurrence of a backfill.
type BackfillResult struct {
	OccurrenceTime Time    `json:"occurrence_time"`
	InstanceID     *string `json:"instance_id"`
	RunID          *string `json:"run_id"`
	Outcome        string  `json:"outcome"`
	Reason         *string `json:"reason"`
}

// Backfill is the answer to a backfill.
type Backfill struct {
	Outcome     string           `json:"outcome"`
	Occurrences int              `json:"occurrences"`
	Results     []BackfillResult `json:"results"`
}

// FromBackfill renders a backfill report.
func FromBackfill(rep *scheduling.BackfillReport) Backfill {
	out := Backfill{Outcome: rep.Outcome, Occurrences: rep.Occurrences, Results: make([]BackfillResult, 0, len(rep.Results))}
	for _, r := range rep.Results {
		out.Results = append(out.Results, BackfillResult{OccurrenceTime: At(r.OccurrenceTime), InstanceID: NilIfEmpty(r.InstanceID),
			RunID: NilIfEmpty(r.RunID), Outcome: r.Outcome, Reason: NilIfEmpty(r.Reason)})
	}
	return out
}

// SchedulePage is one page of GET /schedules.
type SchedulePage struct {
	Schedules  []Schedule `json:"schedules"`
	NextCursor *string    `json:"next_cursor"`
	HasMore    bool       `json:"has_more"`
}

// FromSchedulePage renders a page of schedules.
func FromSchedulePage(p *scheduling.SchedulePage) SchedulePage {
	out := SchedulePage{Schedules: make([]Schedule, 0, len(p.Schedules)), NextCursor: NilIfEmpty(p.NextCursor), HasMore: p.HasMore}
	for i := range p.Schedules {
		out.Schedules = append(out.Schedules, FromSchedule(&p.Schedules[i]))
	}
	return out
}

// RunPage is one page of GET /runs.
type RunPage struct {
	Runs       []Run   `json:"runs"`
	NextCursor *string `json:"next_cursor"`
	HasMore    bool    `json:"has_more"`
	// Scanned is set when a workflow_type page stopped after examining
	// this many runs (scheduling.MaxRunTypeScan): its runs are the matches
	// among those, possibly none, and next_cursor goes on before them.
	Scanned int `json:"scanned,omitempty"`
}

// FromRunPage renders a page of runs.
func FromRunPage(p *scheduling.RunPage) RunPage {
	out := RunPage{Runs: make([]Run, 0, len(p.Runs)), NextCursor: NilIfEmpty(p.NextCursor), HasMore: p.HasMore, Scanned: p.Scanned}
	for i := range p.Runs {
		out.Runs = append(out.Runs, FromRun(&p.Runs[i]))
	}
	return out
}

// Attempt is one execution of a run (GET /runs/{id}).
type Attempt struct {
	Attempt    int    `json:"attempt"`
	WorkerID   string `json:"worker_id"`
	StartedAt  Time   `json:"started_at"`
	EndedAt    *Time  `json:"ended_at"`
	DurationMs *int64 `json:"duration_ms"`
	Outcome    string `json:"outcome"`
	ErrorType  string `json:"error_type,omitempty"`
	Message    string `json:"message,omitempty"`
	// HTTPStatus is an HTTP target's answer to the attempt, if any came.
	HTTPStatus *int `json:"http_status,omitempty"`
}

// FromAttempts renders a run's attempts.
func FromAttempts(list []scheduling.Attempt) []Attempt {
	out := make([]Attempt, 0, len(list))
	for _, a := range list {
		item := Attempt{Attempt: a.Number, WorkerID: a.WorkerID, StartedAt: At(a.StartedAt), EndedAt: AtPtr(a.EndedAt),
			Outcome: a.Outcome, ErrorType: a.ErrorType, Message: a.Message, HTTPStatus: a.HTTPStatus}
		if a.EndedAt != nil {
			ms := a.EndedAt.Sub(a.StartedAt).Milliseconds()
			item.DurationMs = &ms
		}
		out = append(out, item)
	}
	return out
}

// UnmarshalJSON reads any RFC 3339 instant, as the API accepts on input; the
// Go client decodes responses with it.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("decode time: %w", err)
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("decode time: %w", err)
	}
	*t = Time(parsed.UTC())
	return nil
}

// T is the instant as a time.Time.
func (t Time) T() time.Time { return time.Time(t) }

// TimePtr unwraps an optional instant.
func TimePtr(t *Time) *time.Time {
	if t == nil {
		return nil
	}
	v := time.Time(*t)
	return &v
}

// ErrorBody is every API error response (CONTRACT §8).
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error's code, message and per-field messages.
type ErrorDetail struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
	// Schedules names the schedules in the way (409 calendar_in_use).
	Schedules []string `json:"schedules,omitempty"`
}

// CreateSchedule is the body of POST /schedules. It is also one document
// of a `schedule apply` file, which is why every field but schedule_id may
// be left out.
type CreateSchedule struct {
	ScheduleID       string            `json:"schedule_id"`
	Spec             *Spec             `json:"spec"`
	Cron             string            `json:"cron,omitempty"` // shorthand for spec.cron_expressions: [cron]
	Action           Action            `json:"action"`
	OverlapPolicy    string            `json:"overlap_policy,omitempty"`
	JitterSeconds    int               `json:"jitter_seconds,omitempty"`
	MaxRuns          *int64            `json:"max_runs"`
	Connection       *string           `json:"connection"`
	Queue            *string           `json:"queue"`
	Labels           map[string]string `json:"labels,omitempty"`
	Memo             map[string]string `json:"memo,omitempty"`
	SearchAttributes map[string]string `json:"search_attributes,omitempty"`
	Note             string            `json:"note,omitempty"`
	Paused           bool              `json:"paused,omitempty"`
	// PauseAfterFailures pauses the schedule after that many consecutive
	// unsuccessful runs; nil never does.
	PauseAfterFailures *int `json:"pause_after_failures,omitempty"`
	// CatchupWindowSeconds is the missed-fire policy; nil is Part I's rule.
	CatchupWindowSeconds *int `json:"catchup_window_seconds,omitempty"`
	// StartDeadlineSeconds reports runs still pending that long after
	// their occurrence (run_not_started); nil never does.
	StartDeadlineSeconds *int64 `json:"start_deadline_seconds,omitempty"`
}

// Input is the service's form of a create body in namespace: the one
// translation the API and the CLI's direct mode share. The field table's
// fields are read from the body as it is sent (fieldsOf).
func (c CreateSchedule) Input(namespace string) (scheduling.CreateInput, error) {
	var spec models.Spec
	if c.Spec != nil {
		spec = c.Spec.Model()
	}
	if c.Cron != "" {
		spec.CronExpressions = append([]string{c.Cron}, spec.CronExpressions...)
	}
	fields, err := fieldsOf(c)
	if err != nil {
		return scheduling.CreateInput{}, fmt.Errorf("read the create body's fields: %w", err)
	}
	return scheduling.CreateInput{Namespace: namespace, ScheduleID: c.ScheduleID, Spec: spec, Action: c.Action.Model(),
		Paused: c.Paused, Fields: fields}, nil
}

// NullableFields are the PATCH fields that an explicit null clears (the
// field table's, scheduling.Fields).
var NullableFields = scheduling.NullableKeys()

// SchedulePatch is the body of PATCH /schedules/{id}: nil fields are left
// out (unchanged); Clear names nullable fields to send as null.
type SchedulePatch struct {
	Spec                 *Spec              `json:"spec,omitempty"`
	Action               *Action            `json:"action,omitempty"`
	OverlapPolicy        *string            `json:"overlap_policy,omitempty"`
	JitterSeconds        *int               `json:"jitter_seconds,omitempty"`
	MaxRuns              *int64             `json:"max_runs,omitempty"`
	Connection           *string            `json:"connection,omitempty"`
	Queue                *string            `json:"queue,omitempty"`
	Labels               *map[string]string `json:"labels,omitempty"`
	Memo                 *map[string]string `json:"memo,omitempty"`
	SearchAttributes     *map[string]string `json:"search_attributes,omitempty"`
	Note                 *string            `json:"note,omitempty"`
	PauseAfterFailures   *int               `json:"pause_after_failures,omitempty"`
	CatchupWindowSeconds *int               `json:"catchup_window_seconds,omitempty"`
	StartDeadlineSeconds *int64             `json:"start_deadline_seconds,omitempty"`
	// Clear lists fields of NullableFields to set to null.
	Clear []string `json:"-"`
	// Set gives fields as JSON values by key, over the struct fields: a
	// field of the table (scheduling.Fields) needs no struct field here to
	// be sent (the CLI's --clear sends each field's empty value this way).
	Set map[string]json.RawMessage `json:"-"`
}

// MarshalJSON adds the cleared fields as explicit nulls, which is what
// tells PATCH "clear" apart from "leave alone".
func (p SchedulePatch) MarshalJSON() ([]byte, error) {
	type plain SchedulePatch
	b, err := json.Marshal(plain(p))
	if err != nil || len(p.Clear) == 0 && len(p.Set) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range p.Set {
		m[k] = v
	}
	for _, f := range p.Clear {
		m[f] = json.RawMessage("null")
	}
	return json.Marshal(m)
}

// Input is the service's form of a patch: a nullable field is set when it
// is given or named in Clear. The patch is read as the PATCH body it is
// sent as (scheduling.DecodePatch), so the API, the CLI's direct mode and
// the console decode into one patch type by one decoder.
func (p SchedulePatch) Input() (scheduling.UpdateInput, error) {
	raw, err := BodyOf(p)
	if err != nil {
		return scheduling.UpdateInput{}, fmt.Errorf("patch: %w", err)
	}
	return scheduling.DecodePatch(raw)
}

// Empty reports whether the patch changes nothing: its body is {}.
func (p SchedulePatch) Empty() bool {
	body, err := json.Marshal(p)
	return err == nil && string(body) == "{}"
}

// FieldChange is one field an update changes, in display spelling.
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// UpdatePlan answers PATCH /schedules/{id}?dry_run=true: what the update
// would change, and the schedule as it would be. Nothing is written.
type UpdatePlan struct {
	ChangedFields []string      `json:"changed_fields"`
	Changes       []FieldChange `json:"changes"`
	Schedule      Schedule      `json:"schedule"`
}

// FromUpdatePlan renders an update plan.
func FromUpdatePlan(p *scheduling.UpdatePlan) UpdatePlan {
	out := UpdatePlan{ChangedFields: p.ChangedFields, Changes: make([]FieldChange, 0, len(p.Changes)), Schedule: FromSchedule(p.Schedule)}
	if out.ChangedFields == nil {
		out.ChangedFields = []string{}
	}
	for _, c := range p.Changes {
		out.Changes = append(out.Changes, FieldChange(c))
	}
	return out
}

// PauseRequest is the body of POST /schedules/{id}/pause.
type PauseRequest struct {
	Reason      string `json:"reason,omitempty"`
	PausedUntil string `json:"paused_until,omitempty"`
	Until       string `json:"until,omitempty"` // a shorter alias of paused_until
}

// TriggerRequest is the body of POST /schedules/{id}/trigger.
type TriggerRequest struct {
	OverlapPolicy string `json:"overlap_policy,omitempty"`
}

// BackfillRequest is the body of POST /schedules/{id}/backfill.
type BackfillRequest struct {
	From          string `json:"from"`
	To            string `json:"to"`
	OverlapPolicy string `json:"overlap_policy,omitempty"`
	DryRun        bool   `json:"dry_run,omitempty"`
	// The job's pacing (SPEC §18); ignored by a dry run.
	MaxPerMinute      *int   `json:"max_per_minute,omitempty"`
	MaxConcurrentRuns *int   `json:"max_concurrent_runs,omitempty"`
	Reason            string `json:"reason,omitempty"`
}

// RunActionRequest is the body of POST /runs/{id}/cancel|terminate.
type RunActionRequest struct {
	Reason string `json:"reason,omitempty"`
}

// RetryMatchingRequest is the body of POST /runs/retry: which failed or
// timed-out runs get one more attempt (status failed or timed_out; both
// when empty), optionally of one schedule.
type RetryMatchingRequest struct {
	Status     string `json:"status,omitempty"`
	ScheduleID string `json:"schedule_id,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// RetryMatchingResult answers POST /runs/retry: how many were retried, and
// whether more match than one request retries.
type RetryMatchingResult struct {
	Retried int  `json:"retried"`
	More    bool `json:"more"`
}

// PreviewRequest is the body of POST /schedules/preview.
type PreviewRequest struct {
	Spec  Spec   `json:"spec"`
	After string `json:"after,omitempty"`
	Count *int   `json:"count,omitempty"`
}

// Preview answers POST /schedules/preview.
type Preview struct {
	Description string `json:"description"`
	FireTimes   []Time `json:"fire_times"`
	// Items are the next occurrences with their status (CONTRACT §16):
	// planned, excluded (with the calendar) or moved (with the calendar
	// and moved_from); fire_times are the planned and moved ones.
	Items []PreviewItem `json:"items"`
}

// PreviewItem is one previewed occurrence.
type PreviewItem struct {
	At        Time   `json:"at"`
	Status    string `json:"status"`
	Calendar  string `json:"calendar,omitempty"`
	MovedFrom *Time  `json:"moved_from,omitempty"`
}

// TickRequest is the body of POST /tick.
type TickRequest struct {
	Limit int `json:"limit,omitempty"`
}

// Tick answers POST /tick.
type Tick struct {
	Rows []TickRow `json:"rows"`
}

// RunDetail answers GET /runs/{run_id}: the run, its attempts and its history.
type RunDetail struct {
	Run
	Attempts []Attempt  `json:"attempts"`
	History  []RunEvent `json:"history"`
}

// ManagedByLabel marks schedules that `tideline schedule apply` owns: it
// sets ManagedByLabel=ManagedByApply on everything it creates or updates,
// `apply --prune` deletes only schedules carrying it, and the console warns
// before an edit of one (the next apply would undo it).
const (
	ManagedByLabel = scheduling.ManagedByLabel
	ManagedByApply = scheduling.ManagedByApply
)

// Occurrence is one row of GET /schedules/{id}/occurrences (CONTRACT §12).
type Occurrence struct {
	OccurrenceTime Time `json:"occurrence_time"`
	// WallTime is the wall-clock time of the schedule's zone it stands for,
	// without offset ("2026-03-08T02:30:00"); DSTShiftSeconds is how far a
	// spring-forward gap moved it (0 when none); DSTRepeated marks the second
	// pass of a fall-back hour.
	WallTime        string  `json:"wall_time"`
	DSTShiftSeconds int64   `json:"dst_shift_seconds"`
	DSTRepeated     bool    `json:"dst_repeated"`
	Fate            string  `json:"fate"`
	InstanceID      *string `json:"instance_id"`
	RunID           *string `json:"run_id"`
	RunStatus       *string `json:"run_status"`
	Trigger         *string `json:"trigger"`
	FireLagMs       *int64  `json:"fire_lag_ms"`
	Reason          *string `json:"reason"`
	// Calendar is the calendar that excluded or moved the occurrence;
	// MovedTo where a moved one fired (fate moved), MovedFrom the time a
	// fire was moved from (CONTRACT §19).
	Calendar  *string `json:"calendar"`
	MovedFrom *Time   `json:"moved_from"`
	MovedTo   *Time   `json:"moved_to"`
}

// OccurrencePage is the answer of GET /schedules/{id}/occurrences.
type OccurrencePage struct {
	ScheduleID  string       `json:"schedule_id"`
	Namespace   string       `json:"namespace"`
	Timezone    string       `json:"timezone"`
	From        Time         `json:"from"`
	To          Time         `json:"to"`
	Occurrences []Occurrence `json:"occurrences"`
	NextCursor  *string      `json:"next_cursor"`
	HasMore     bool         `json:"has_more"`
}

// WallTimeLayout spells an occurrence's wall time.
const WallTimeLayout = "2006-01-02T15:04:05"

// FromLedger renders a ledger page.
func FromLedger(p *scheduling.LedgerPage) OccurrencePage {
	out := OccurrencePage{ScheduleID: p.ScheduleID, Namespace: p.Namespace, Timezone: p.Timezone, From: At(p.From), To: At(p.To),
		Occurrences: make([]Occurrence, 0, len(p.Occurrences)), HasMore: p.HasMore}
	if p.HasMore {
		out.NextCursor = &p.NextCursor
	}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	for _, o := range p.Occurrences {
		row := Occurrence{OccurrenceTime: At(o.Time), WallTime: o.Wall.Format(WallTimeLayout), DSTShiftSeconds: int64(o.Shift / time.Second),
			DSTRepeated: o.Repeated, Fate: o.Fate, InstanceID: opt(o.InstanceID), RunID: opt(o.RunID), RunStatus: opt(o.RunStatus),
			Trigger: opt(o.Trigger), Reason: opt(o.Reason), Calendar: opt(o.Calendar), MovedFrom: AtPtr(o.MovedFrom), MovedTo: AtPtr(o.MovedTo)}
		if o.FireLag != nil {
			ms := o.FireLag.Milliseconds()
			row.FireLagMs = &ms
		}
		out.Occurrences = append(out.Occurrences, row)
	}
	return out
}

// ptrModel translates an optional wire value.
func ptrModel[W, M any](w *W, model func(W) M) *M {
	if w == nil {
		return nil
	}
	m := model(*w)
	return &m
}
