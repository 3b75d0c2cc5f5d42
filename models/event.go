package models

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"
)

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
