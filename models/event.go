package models

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"
)

// PayloadFromColumns lists, per event type, the payload keys stored only
// in the event's columns: workflow_instance_id and workflow_run_id of a
// ScheduleTriggered (the fire path's event) were ~110 of its ~500 bytes.
// The writer leaves them out (scheduling/audit.go) and ListScheduleEvents
// sets them again from the columns; events stored before migration 0009
// still hold them, with the same values.
var PayloadFromColumns = map[string][]string{
	"ScheduleTriggered": {"workflow_instance_id", "workflow_run_id"},
}

// ScheduleEvent is a row of workflow_schedule_history_events: the schedule's
// append-only audit stream.
type ScheduleEvent struct {
	bun.BaseModel `bun:"table:workflow_schedule_history_events,alias:se"`

	ID                 string          `bun:"id,pk"`
	WorkflowScheduleID string          `bun:"workflow_schedule_id,notnull"`
	Sequence           int64           `bun:"sequence,notnull"`
	EventType          string          `bun:"event_type,notnull"`
	Payload            json.RawMessage `bun:"payload,type:jsonb,notnull"`
	WorkflowInstanceID *string         `bun:"workflow_instance_id"`
	WorkflowRunID      *string         `bun:"workflow_run_id"`
	RecordedAt         time.Time       `bun:"recorded_at,notnull"`
}
