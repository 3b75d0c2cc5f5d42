package models

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"
)

// Run statuses. A run is active while pending or running.
const (
	RunPending    = "pending"
	RunRunning    = "running"
	RunCompleted  = "completed"
	RunFailed     = "failed"
	RunCancelled  = "cancelled"
	RunTerminated = "terminated"
	RunTimedOut   = "timed_out"
)

// ActiveRunStatuses are the statuses the overlap policy treats as "running".
var ActiveRunStatuses = []string{RunPending, RunRunning}

// Run is a row of workflow_runs: one execution, claimed and finished by a worker.
type Run struct {
	bun.BaseModel `bun:"table:workflow_runs,alias:r"`

	ID        string `bun:"id,pk"` // the run_id (ULID)
	Namespace string `bun:"namespace,notnull"`
	// InstanceID is unique in the namespace: one occurrence, one run (the
	// workflow_instances table of old folded into its run).
	InstanceID          string          `bun:"instance_id,notnull"`
	WorkflowScheduleID  *string         `bun:"workflow_schedule_id"`
	ScheduleID          *string         `bun:"schedule_id"`
	WorkflowType        string          `bun:"workflow_type,notnull"`
	WorkflowClass       string          `bun:"workflow_class,notnull"`
	Input               json.RawMessage `bun:"input,type:jsonb"`
	Output              json.RawMessage `bun:"output,type:jsonb"`
	Status              string          `bun:"status,notnull"`
	Trigger             string          `bun:"trigger,notnull"` // scheduled | manual | drained | backfilled | direct
	Connection          string          `bun:"connection,notnull"`
	Queue               string          `bun:"queue,notnull"`
	Attempt             int             `bun:"attempt,notnull"`
	OccurrenceTime      *time.Time      `bun:"occurrence_time"`
	WorkerID            *string         `bun:"worker_id"`
	WorkerPrincipal     *string         `bun:"worker_principal"` // the token holding the lease, with WorkerID
	LeaseExpiresAt      *time.Time      `bun:"lease_expires_at"`
	RunDeadlineAt       *time.Time      `bun:"run_deadline_at"`
	ExecutionDeadlineAt *time.Time      `bun:"execution_deadline_at"`
	CancelRequestedAt   *time.Time      `bun:"cancel_requested_at"`
	FailureMessage      *string         `bun:"failure_message"`
	FailureType         *string         `bun:"failure_type"`
	// AvailableAt holds a pending run back until its next attempt is due.
	AvailableAt       *time.Time   `bun:"available_at"`
	RetryPolicy       *RetryPolicy `bun:"retry_policy,type:jsonb"`
	RunTimeoutSeconds *int64       `bun:"run_timeout_seconds"`
	// StartDeadlineAt is when a still-pending run is reported as not
	// started; cleared when a worker claims it or once reported.
	StartDeadlineAt *time.Time `bun:"start_deadline_at"`
	LastSequence    int64      `bun:"last_sequence,notnull"`
	CreatedAt       time.Time  `bun:"created_at,notnull"`
	StartedAt       *time.Time `bun:"started_at"`
	FinishedAt      *time.Time `bun:"finished_at"`
	UpdatedAt       time.Time  `bun:"updated_at,notnull"`
}

// StartedRun is a new run with what its ScheduleTriggered provenance event
// says beyond the run's own columns. The provenance is not part of Run:
// the workers' claim and every transition read and write Run, and have no
// use for it. Runs started before migration 0009 have none (their event is
// a row of workflow_history_events).
type StartedRun struct {
	Run                  `bun:",extend"`
	TriggerNumber        *int64  `bun:"trigger_number"`
	TriggerCron          *string `bun:"trigger_cron"`
	TriggerTimezone      *string `bun:"trigger_timezone"`
	TriggerOverlapPolicy *string `bun:"trigger_overlap_policy"`
}

// HasProvenance reports whether the run carries its ScheduleTriggered event.
func (r *StartedRun) HasProvenance() bool { return r.TriggerNumber != nil }

// Active reports whether the run still counts for overlap policies.
func (r *Run) Active() bool { return r.Status == RunPending || r.Status == RunRunning }

// RunEvent is a row of workflow_history_events: the per-run history.
type RunEvent struct {
	bun.BaseModel `bun:"table:workflow_history_events,alias:he"`

	ID            string          `bun:"id,pk"`
	WorkflowRunID string          `bun:"workflow_run_id,notnull"`
	Sequence      int64           `bun:"sequence,notnull"`
	EventType     string          `bun:"event_type,notnull"`
	Payload       json.RawMessage `bun:"payload,type:jsonb,notnull"`
	RecordedAt    time.Time       `bun:"recorded_at,notnull"`
}
