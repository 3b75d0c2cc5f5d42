package apijson

import (
	"encoding/json"

	"github.com/tidelinehq/tideline/models"
)

// The worker protocol (docs/CONTRACT.md, "Worker protocol"): the bodies a
// worker sends to POST /worker/… and what it gets back. The server
// (handlers/worker_api.go) and the Go worker (worker/) both use these, so
// the two cannot drift apart. Every request may name its namespace (else
// the request's); worker_id tells several workers of one token apart and is
// required on heartbeat, complete and fail (the lease is held by the token's
// principal and the worker_id of the poll that claimed the run).

// WorkerPoll is the body of POST /worker/poll.
type WorkerPoll struct {
	Namespace    string `json:"namespace,omitempty"`
	Connection   string `json:"connection,omitempty"`
	Queue        string `json:"queue,omitempty"`
	Limit        int    `json:"limit"`
	LeaseSeconds int    `json:"lease_seconds,omitempty"`
	WaitSeconds  int    `json:"wait_seconds"` // long-poll up to this long when nothing is pending
	WorkerID     string `json:"worker_id,omitempty"`
}

// WorkerPollResult answers a poll: the runs claimed, maybe none.
type WorkerPollResult struct {
	Runs []ClaimedRun `json:"runs"`
}

// ClaimedRun is a run leased to the worker that polled.
type ClaimedRun struct {
	RunID      string `json:"run_id"`
	InstanceID string `json:"instance_id"`
	// ScheduleID is null for a run started directly, not by a schedule.
	ScheduleID          *string         `json:"schedule_id"`
	Namespace           string          `json:"namespace"`
	WorkflowType        string          `json:"workflow_type"`
	WorkflowClass       string          `json:"workflow_class"`
	Trigger             string          `json:"trigger"`         // scheduled | manual | drained | backfilled | direct
	OccurrenceTime      *Time           `json:"occurrence_time"` // the fire's nominal time; null for a direct run
	Input               json.RawMessage `json:"input"`
	Attempt             int             `json:"attempt"`
	LeaseExpiresAt      *Time           `json:"lease_expires_at"`
	RunDeadlineAt       *Time           `json:"run_deadline_at"`
	ExecutionDeadlineAt *Time           `json:"execution_deadline_at"`
}

// FromClaimed renders claimed runs.
func FromClaimed(runs []models.Run) WorkerPollResult {
	out := WorkerPollResult{Runs: make([]ClaimedRun, 0, len(runs))}
	for _, r := range runs {
		out.Runs = append(out.Runs, ClaimedRun{RunID: r.ID, InstanceID: r.InstanceID, ScheduleID: r.ScheduleID, Namespace: r.Namespace,
			WorkflowType: r.WorkflowType, WorkflowClass: r.WorkflowClass, Trigger: r.Trigger, OccurrenceTime: AtPtr(r.OccurrenceTime),
			Input: RawOrNull(r.Input), Attempt: r.Attempt, LeaseExpiresAt: AtPtr(r.LeaseExpiresAt), RunDeadlineAt: AtPtr(r.RunDeadlineAt),
			ExecutionDeadlineAt: AtPtr(r.ExecutionDeadlineAt)})
	}
	return out
}

// WorkerHeartbeat is the body of POST /worker/runs/{run_id}/heartbeat.
type WorkerHeartbeat struct {
	Namespace    string `json:"namespace,omitempty"`
	WorkerID     string `json:"worker_id"`               // required
	LeaseSeconds int    `json:"lease_seconds,omitempty"` // 0: the server's default
}

// WorkerHeartbeatResult answers a heartbeat.
type WorkerHeartbeatResult struct {
	CancelRequested bool  `json:"cancel_requested"`
	LeaseExpiresAt  *Time `json:"lease_expires_at"`
}

// FromHeartbeat renders a heartbeat's answer for the run it extended.
func FromHeartbeat(r *models.Run) WorkerHeartbeatResult {
	return WorkerHeartbeatResult{CancelRequested: r.CancelRequestedAt != nil, LeaseExpiresAt: AtPtr(r.LeaseExpiresAt)}
}

// WorkerComplete is the body of POST /worker/runs/{run_id}/complete; the
// answer is the Run.
type WorkerComplete struct {
	Namespace string          `json:"namespace,omitempty"`
	WorkerID  string          `json:"worker_id"` // required
	Output    json.RawMessage `json:"output,omitempty"`
}

// WorkerFail is the body of POST /worker/runs/{run_id}/fail; the answer is
// the Run.
type WorkerFail struct {
	Namespace string `json:"namespace,omitempty"`
	WorkerID  string `json:"worker_id"` // required
	Message   string `json:"message"`
	Type      string `json:"type"`
	// NonRetryable ends the run at once, whatever its retry policy.
	NonRetryable bool `json:"non_retryable,omitempty"`
}

// Health answers GET /healthz and /readyz: "ok", "ready" or "unavailable"
// with the reason.
type Health struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}
