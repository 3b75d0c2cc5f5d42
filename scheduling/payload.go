package scheduling

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidelinehq/tideline/models"
)

// The audit payloads of docs/CONTRACT.md ("Audit events"), one struct per
// event type: the writer cannot forget a key or add one the contract does
// not know, and readers (the console, the ledger) decode the struct of the
// event's type instead of guessing at a map. Their JSON is the contract;
// payload_test.go checks every struct's keys against the table there.

// Payload is the payload of one audit event.
type Payload interface {
	// EventType is the event type the payload belongs to.
	EventType() string
	// Context is who asked for the change, when known.
	Context() *CommandContext
	setContext(cc *CommandContext)
}

// Recorded carries what every payload may carry: the command context.
type Recorded struct {
	CommandContext *CommandContext `json:"command_context,omitempty"`
}

// Context is who asked for the change; nil when the event does not say.
func (r Recorded) Context() *CommandContext       { return r.CommandContext }
func (r *Recorded) setContext(cc *CommandContext) { r.CommandContext = cc }

// Instant is a payload time: RFC 3339 UTC with microseconds in JSON
// (FormatTime), like every time of the API.
type Instant time.Time

// InstantOf is t as an Instant; nil stays nil.
func InstantOf(t *time.Time) *Instant {
	if t == nil {
		return nil
	}
	i := Instant(*t)
	return &i
}

// Time is the instant as a time.Time (UTC).
func (i Instant) Time() time.Time { return time.Time(i).UTC() }

func (i Instant) MarshalJSON() ([]byte, error) { return json.Marshal(FormatTime(time.Time(i))) }

func (i *Instant) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*i = Instant(t.UTC())
	return nil
}

// CreatedPayload is ScheduleCreated's.
type CreatedPayload struct {
	Spec          models.Spec   `json:"spec"`
	Action        models.Action `json:"action"`
	OverlapPolicy string        `json:"overlap_policy"`
	NextFireAt    *Instant      `json:"next_fire_at"` // null: never fires
	// Settings are the rest of the definition (versions.go); absent from
	// events recorded before versions, which are replayed instead.
	Settings *Settings `json:"settings,omitempty"`
	Recorded
}

// PausedPayload is SchedulePaused's.
type PausedPayload struct {
	PausedAt    Instant  `json:"paused_at"`
	Reason      string   `json:"reason,omitempty"`       // the operator's words, when given
	PausedUntil *Instant `json:"paused_until,omitempty"` // a timed pause's end
	Recorded
}

// ResumedPayload is ScheduleResumed's.
type ResumedPayload struct {
	NextFireAt  *Instant `json:"next_fire_at"`
	PausedUntil *Instant `json:"paused_until,omitempty"` // when the scheduler ended a timed pause
	Recorded
}

// UpdatedPayload is ScheduleUpdated's: the changed fields, and the spec,
// action, policy and settings as the update left them — the whole
// definition, so that every version reads from its own event.
type UpdatedPayload struct {
	ChangedFields []string      `json:"changed_fields"`
	Spec          models.Spec   `json:"spec"`
	Action        models.Action `json:"action"`
	OverlapPolicy string        `json:"overlap_policy"`
	NextFireAt    *Instant      `json:"next_fire_at"`
	Settings      *Settings     `json:"settings,omitempty"` // see CreatedPayload
	// RevertedTo is the version a revert went back to (Revert).
	RevertedTo *int64 `json:"reverted_to,omitempty"`
	Recorded
}

// TriggeredPayload is ScheduleTriggered's.
type TriggeredPayload struct {
	WorkflowInstanceID     string  `json:"workflow_instance_id"`
	WorkflowRunID          string  `json:"workflow_run_id"`
	Outcome                string  `json:"outcome"` // TriggerScheduled, TriggerManual, TriggerDrained or TriggerBackfilled
	EffectiveOverlapPolicy string  `json:"effective_overlap_policy"`
	TriggerNumber          int64   `json:"trigger_number"`
	OccurrenceTime         Instant `json:"occurrence_time"`
	Recorded
}

// SkippedPayload is ScheduleTriggerSkipped's. A skipped fire names its
// occurrence; a SkipMissed event covers MissedCount occurrences from
// FirstMissedAt to LastMissedAt instead.
type SkippedPayload struct {
	Reason              string   `json:"reason"` // a Skip… constant
	SkippedTriggerCount int64    `json:"skipped_trigger_count"`
	LastSkippedAt       Instant  `json:"last_skipped_at"`
	OccurrenceTime      *Instant `json:"occurrence_time,omitempty"`
	MissedCount         int64    `json:"missed_count,omitempty"`
	FirstMissedAt       *Instant `json:"first_missed_at,omitempty"`
	LastMissedAt        *Instant `json:"last_missed_at,omitempty"`
	Recorded
}

// DeletedPayload is ScheduleDeleted's.
type DeletedPayload struct {
	Reason    string  `json:"reason"` // DeleteByRequest or DeleteMaxRunsExhausted
	DeletedAt Instant `json:"deleted_at"`
	Recorded
}

func (CreatedPayload) EventType() string   { return EventScheduleCreated }
func (PausedPayload) EventType() string    { return EventSchedulePaused }
func (ResumedPayload) EventType() string   { return EventScheduleResumed }
func (UpdatedPayload) EventType() string   { return EventScheduleUpdated }
func (TriggeredPayload) EventType() string { return EventScheduleTriggered }
func (SkippedPayload) EventType() string   { return EventScheduleTriggerSkipped }
func (DeletedPayload) EventType() string   { return EventScheduleDeleted }

// Trigger outcomes: how a started fire came about (TriggeredPayload.Outcome,
// the run's trigger).
const (
	TriggerScheduled  = kindScheduled
	TriggerManual     = kindManual
	TriggerDrained    = kindDrained
	TriggerBackfilled = kindBackfill
)

// Delete reasons (DeletedPayload.Reason).
const (
	DeleteByRequest        = "deleted"
	DeleteMaxRunsExhausted = "max_runs_exhausted"
)

// DecodePayload reads an event's payload into the struct of its type.
func DecodePayload(eventType string, raw []byte) (Payload, error) {
	var p Payload
	switch eventType {
	case EventScheduleCreated:
		p = &CreatedPayload{}
	case EventSchedulePaused:
		p = &PausedPayload{}
	case EventScheduleResumed:
		p = &ResumedPayload{}
	case EventScheduleUpdated:
		p = &UpdatedPayload{}
	case EventScheduleTriggered:
		p = &TriggeredPayload{}
	case EventScheduleTriggerSkipped:
		p = &SkippedPayload{}
	case EventScheduleDeleted:
		p = &DeletedPayload{}
	default:
		return nil, fmt.Errorf("audit: unknown event type %q", eventType)
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, fmt.Errorf("decode %s payload: %w", eventType, err)
	}
	return p, nil
}

// EventTypes lists the audit event types in the contract's order.
var EventTypes = []string{EventScheduleCreated, EventSchedulePaused, EventScheduleResumed, EventScheduleUpdated,
	EventScheduleTriggered, EventScheduleTriggerSkipped, EventScheduleDeleted}
