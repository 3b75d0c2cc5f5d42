package models

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"
)

// ScheduleEvent is a row of workflow_schedule_history_events: the schedule's
// append-only audit stream.
//
// Payload is the stored form, which is not always what readers are served:
// a ScheduleTriggered (one per fire, most of the stream) keeps its facts in
// the typed columns below and its instance and run in the two above them.
// scheduling/audit.go writes that form (storedForm) and turns a row back
// into its served payload (servedPayload); nothing else reads it.
type ScheduleEvent struct {
	bun.BaseModel `bun:"table:workflow_schedule_history_events,alias:se"`

	// The event's own ID, served with it. The stream's key is
	// (WorkflowScheduleID, Sequence): PostgreSQL's primary key since
	// migration 0029, which dropped the index on ID; SQLite keeps ID as
	// its primary key. Look events up by the key, never by ID.
	ID                 string          `bun:"id,pk"`
	WorkflowScheduleID string          `bun:"workflow_schedule_id,notnull"`
	Sequence           int64           `bun:"sequence,notnull"`
	EventType          string          `bun:"event_type,notnull"`
	Payload            json.RawMessage `bun:"payload,type:jsonb,notnull"`
	WorkflowInstanceID *string         `bun:"workflow_instance_id"`
	WorkflowRunID      *string         `bun:"workflow_run_id"`
	RecordedAt         time.Time       `bun:"recorded_at,notnull"`

	// A ScheduleTriggered's facts since migration 0012; nil on other event
	// types and on ScheduleTriggered events stored before it (their payload
	// holds them).
	TriggerNumber          *int64     `bun:"trigger_number"`
	OccurrenceTime         *time.Time `bun:"occurrence_time"`
	TriggerOutcome         *string    `bun:"trigger_outcome"`
	EffectiveOverlapPolicy *string    `bun:"effective_overlap_policy"`
}
