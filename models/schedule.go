// Package models holds the bun structs that map Tideline's tables and the query
// functions over them. Every function takes a bun.IDB so that it runs the same
// on a *bun.DB and inside a transaction; business rules live in scheduling/.
package models

import (
	"encoding/json"
	"time"

	"github.com/uptrace/bun"
)

// Schedule statuses.
const (
	StatusActive  = "active"
	StatusPaused  = "paused"
	StatusDeleted = "deleted"
)

// Spec is the stored "when" of a schedule (CONTRACT §2/§3). It is plain data; the
// scheduling package compiles it into something that can compute fire times.
type Spec struct {
	CronExpressions []string   `json:"cron_expressions"`
	Intervals       []Interval `json:"intervals"`
	Timezone        string     `json:"timezone"`
	// StartAt and EndAt (RFC 3339, optional) bound the spec: no occurrence
	// before StartAt or after EndAt, both inclusive (CONTRACT §16).
	StartAt string `json:"start_at,omitempty"`
	EndAt   string `json:"end_at,omitempty"`
	// At lists one-off instants (RFC 3339, whole seconds) fired in
	// addition to the cron expressions and intervals.
	At []string `json:"at,omitempty"`
	// ExcludeCalendars names calendars of the namespace whose dates the
	// spec does not fire on; OnExcluded is skip (default),
	// previous_business_day or next_business_day (CONTRACT §16).
	ExcludeCalendars []string `json:"exclude_calendars,omitempty"`
	OnExcluded       string   `json:"on_excluded,omitempty"`
}

// Interval is one fixed-length repetition: ISO-8601 durations, e.g. every
// "PT1H" with offset "PT5M" fires at :05 of every hour (UTC epoch aligned).
type Interval struct {
	Every  string `json:"every"`
	Offset string `json:"offset,omitempty"`
}

// Action is the "what": the workflow a fire starts.
type Action struct {
	WorkflowType  string `json:"workflow_type"`
	WorkflowClass string `json:"workflow_class,omitempty"`
	// Input is kept as the caller's JSON document: decoding it into Go
	// values would round big integers through float64.
	Input                   json.RawMessage `json:"input,omitempty"`
	ExecutionTimeoutSeconds *int64          `json:"execution_timeout_seconds"`
	RunTimeoutSeconds       *int64          `json:"run_timeout_seconds"`
	// RetryPolicy retries failed attempts of the same run; nil runs once.
	RetryPolicy *RetryPolicy `json:"retry_policy"`
	// Target is who executes the runs (CONTRACT §15); nil is a worker.
	Target *Target `json:"target,omitempty"`
}

// Target kinds.
const (
	TargetWorker = "worker"
	TargetHTTP   = "http"
)

// Target is an action's executor other than a worker: today an HTTP
// endpoint the server calls once per attempt (CONTRACT §15).
type Target struct {
	Kind           string            `json:"kind"`
	URL            string            `json:"url,omitempty"`
	Method         string            `json:"method,omitempty"`
	Headers        map[string]string `json:"headers,omitempty"`
	Auth           string            `json:"auth,omitempty"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
	// Secret is write-only. It travels from a request to its own table
	// (ScheduleSecret) in the same transaction and is never part of the
	// action column, so never of the audit stream, history, export or any
	// answer. nil keeps the stored secret, "" removes it.
	Secret *string `json:"-"`
	// SecretVersion counts the secrets set (0: none), so that a rotation
	// is a change the audit stream records without the value.
	SecretVersion int `json:"secret_version,omitempty"`
}

// ScheduleSecret is a row of workflow_schedule_secrets (migration 0014):
// the HTTP target's signing secret, read only by the executor.
type ScheduleSecret struct {
	bun.BaseModel `bun:"table:workflow_schedule_secrets,alias:ss"`

	ScheduleULID string    `bun:"schedule_ulid,pk"`
	TargetSecret string    `bun:"target_secret,notnull"`
	UpdatedAt    time.Time `bun:"updated_at,notnull"`
}

// RetryPolicy says how a failed attempt is retried (CONTRACT §10). The fields
// are pointers so that an absent field (default) differs from a given 0
// (refused); the service stores the policy with every default filled in,
// so what a client reads back is what applies.
type RetryPolicy struct {
	MaxAttempts            *int     `json:"max_attempts"`
	InitialIntervalSeconds *int64   `json:"initial_interval_seconds"`
	BackoffCoefficient     *float64 `json:"backoff_coefficient"`
	MaxIntervalSeconds     *int64   `json:"max_interval_seconds"`
	NonRetryableErrorTypes []string `json:"non_retryable_error_types"`
}

// BufferedAction is a fire that the overlap policy parked until the running
// workflow finishes. Draining it keeps its instance ID.
type BufferedAction struct {
	InstanceID     string    `json:"instance_id"`
	OccurrenceTime time.Time `json:"occurrence_time"`
	Kind           string    `json:"kind"` // scheduled | manual
	BufferedAt     time.Time `json:"buffered_at"`
}

// RecentAction is one of a schedule's last ten actions: a fire that
// started a run, was skipped or was buffered. RecentActionRow stores it.
type RecentAction struct {
	InstanceID     string
	RunID          string
	Outcome        string
	FiredAt        time.Time
	OccurrenceTime time.Time
	FireLagMs      int64
	Reason         string
}

// RecentActionsKept is how many actions a schedule's ring holds.
const RecentActionsKept = 10

// RecentActionRow is action N of a schedule (numbered from 0 by
// Schedule.ActionsCount), as SaveRecentActions records it in the
// schedule's ring (RingRow), and a row of workflow_schedule_recent_actions,
// the ring of ten rows a schedule that releases before migration 0033
// write (slot N % RecentActionsKept, over the action ten before it). This
// release no longer writes that table and reads it beside the rings
// (RecentActionsOf) for the actions the previous release records during a
// rolling upgrade and those recorded before it.
//
// Action is what the row holds; the columns after it store it, in one of
// two shapes (migration 0027, recent_actions.go): the compact one, with
// the outcome and reason as Code, the run ID's 16 bytes in RunULID and
// the values a read can recompute left NULL, or the one before 0027
// (Outcome set).
type RecentActionRow struct {
	bun.BaseModel `bun:"table:workflow_schedule_recent_actions,alias:ra"`

	ScheduleULID string       `bun:"schedule_ulid,pk"`
	Slot         int          `bun:"slot,pk"`
	N            int64        `bun:"n,notnull"`
	Action       RecentAction `bun:"-"`
	// ScheduleID is the schedule's, which the instance ID of a scheduled
	// or backfilled fire contains; a row written without it keeps its
	// instance ID. Read with the row.
	ScheduleID string `bun:"schedule_id,scanonly"`

	Code           *int16    `bun:"code"`
	RunULID        []byte    `bun:"run_ulid"`
	Outcome        *string   `bun:"outcome"`
	InstanceID     *string   `bun:"instance_id"`
	RunID          *string   `bun:"run_id"`
	FiredAt        time.Time `bun:"fired_at,notnull"`
	OccurrenceTime time.Time `bun:"occurrence_time,notnull"`
	FireLagMs      *int64    `bun:"fire_lag_ms"`
	Reason         *string   `bun:"reason"`
}

// Schedule is a row of workflow_schedules.
type Schedule struct {
	bun.BaseModel `bun:"table:workflow_schedules,alias:s"`

	ID                 string            `bun:"id,pk"`
	Namespace          string            `bun:"namespace,notnull"`
	ScheduleID         string            `bun:"schedule_id,notnull"`
	Status             string            `bun:"status,notnull"`
	Spec               Spec              `bun:"spec,type:jsonb,notnull"`
	Action             Action            `bun:"action,type:jsonb,notnull"`
	OverlapPolicy      string            `bun:"overlap_policy,notnull"`
	JitterSeconds      int               `bun:"jitter_seconds,notnull"`
	MaxRuns            *int64            `bun:"max_runs"`
	RemainingActions   *int64            `bun:"remaining_actions"`
	Connection         *string           `bun:"connection"`
	Queue              *string           `bun:"queue"`
	Labels             map[string]string `bun:"labels,type:jsonb,notnull"`
	Memo               map[string]string `bun:"memo,type:jsonb,notnull"`
	SearchAttributes   map[string]string `bun:"search_attributes,type:jsonb,notnull"`
	Note               string            `bun:"note,notnull"`
	FiresCount         int64             `bun:"fires_count,notnull"`
	StartFailuresCount int64             `bun:"start_failures_count,notnull"` // fires that could not start
	PauseAfterFailures *int              `bun:"pause_after_failures"`
	// CatchupWindowSeconds is the missed-fire policy (CONTRACT §12): nil fires
	// an overdue schedule once and drops the rest; a window fires every
	// occurrence younger than it, in order.
	CatchupWindowSeconds *int `bun:"catchup_window_seconds"`
	// StartDeadlineSeconds reports a run still pending this long after its
	// occurrence (run_not_started); nil never does.
	StartDeadlineSeconds *int64           `bun:"start_deadline_seconds"`
	SkippedTriggerCount  int64            `bun:"skipped_trigger_count,notnull"`
	LastSkipReason       *string          `bun:"last_skip_reason"`
	LastSkippedAt        *time.Time       `bun:"last_skipped_at"`
	NextFireAt           *time.Time       `bun:"next_fire_at"`
	NextNominalAt        *time.Time       `bun:"next_nominal_at"`
	LastFiredAt          *time.Time       `bun:"last_fired_at"`
	LatestInstanceID     *string          `bun:"latest_instance_id"`
	LatestRunID          *string          `bun:"latest_run_id"`
	BufferedActions      []BufferedAction `bun:"buffered_actions,type:jsonb,notnull"`
	// BufferDepth mirrors len(BufferedActions) so that the drain phase can use
	// a partial index instead of inspecting JSON.
	BufferDepth int `bun:"buffer_depth,notnull"`
	// ActionsCount numbers the schedule's recent actions: the next one is
	// action ActionsCount of its ring (RecentActionRow).
	ActionsCount int64 `bun:"actions_count,notnull"`
	// LastSequence is the audit stream's high-water mark. Appending an event
	// increments it under the schedule's row lock, which is what makes the
	// per-schedule sequence gap-free under concurrent writers.
	LastSequence int64      `bun:"last_sequence,notnull"`
	PausedAt     *time.Time `bun:"paused_at"`
	PauseReason  *string    `bun:"pause_reason"`
	PausedBy     *string    `bun:"paused_by"` // the actor, else the source, of the pause
	PausedUntil  *time.Time `bun:"paused_until"`
	DeletedAt    *time.Time `bun:"deleted_at"`
	CreatedAt    time.Time  `bun:"created_at,notnull"`
	UpdatedAt    time.Time  `bun:"updated_at,notnull"`

	// Health is not a column: the service reads it with the schedule
	// (describe, list) from workflow_schedule_health.
	Health ScheduleHealth `bun:"-"`
	// RecentActions, newest first, are not a column either: the service
	// reads them with the schedule from its ring (RecentActionRow).
	RecentActions []RecentAction `bun:"-"`
	// LatestRun is the state of the run latest_run_id names, read with
	// the schedule (list, describe); nil for none. The health state
	// (scheduling.HealthStateOf) needs it to tell a stuck run.
	LatestRun *LatestRunState `bun:"-"`
	// HealthState is the one-word health the service derived
	// (scheduling.HealthStateOf) when it read the schedule.
	HealthState string `bun:"-"`
	// HealthRank is the row's rank in a list ordered by health, as the
	// database computed it (the page's keyset cursor names it).
	HealthRank int64 `bun:"-"`
}

// LatestRunState is what the health state reads of a schedule's latest
// run: its status and since when it could start (its creation, or its
// next attempt's available_at).
type LatestRunState struct {
	Status      string
	CreatedAt   time.Time
	AvailableAt *time.Time
	Queue       string
}

// PendingSince is when a pending run could first have been claimed.
func (r *LatestRunState) PendingSince() time.Time {
	if r.AvailableAt != nil { // as the stuck rule's SQL reads it: COALESCE(available_at, created_at)
		return *r.AvailableAt
	}
	return r.CreatedAt
}

// ScheduleHealth is a row of workflow_schedule_health: how the schedule's
// finished runs went. A schedule that never finished a run has none; its
// zero value is the right answer then.
type ScheduleHealth struct {
	bun.BaseModel `bun:"table:workflow_schedule_health,alias:h"`

	ScheduleULID        string     `bun:"schedule_ulid,pk"`
	ConsecutiveFailures int64      `bun:"consecutive_failures,notnull"`
	FailuresCount       int64      `bun:"failures_count,notnull"`
	PausedAtFailures    int64      `bun:"paused_at_failures,notnull"`
	LastRunID           *string    `bun:"last_run_id"`
	LastRunStatus       *string    `bun:"last_run_status"`
	LastRunFinishedAt   *time.Time `bun:"last_run_finished_at"`
	LastRunError        *string    `bun:"last_run_error"`
	// RecentRuns are the last RecentRunsKept finished runs, newest first,
	// kept on the row so that a registry page reads them with the health
	// in one statement instead of ten runs per schedule. The row holds the
	// runs folded into it; readers merge the pending ones (HealthPending).
	RecentRuns []RecentRun `bun:"recent_runs,type:jsonb,notnull"`
	UpdatedAt  time.Time   `bun:"updated_at,notnull"`
}

// RecentRunsKept is how many finished runs a health row keeps.
const RecentRunsKept = 10

// RecentRun is one of a schedule's last finished runs, for the health strip.
// The occurrence is kept as Unix milliseconds: a registry page decodes 500
// of these, and parsing text times was most of its cost.
type RecentRun struct {
	RunID        string `json:"run_id"`
	Status       string `json:"status"`
	OccurrenceMs *int64 `json:"occurrence_ms"`
	DurationMs   *int64 `json:"duration_ms"` // from its first start to its end; null if it never started
	// FinishedMs orders entries when pending ends are merged in (entries
	// stored before migration 0010 have none and sort last).
	FinishedMs *int64 `json:"finished_ms,omitempty"`
}

// Occurrence is the run's occurrence time, if it has one.
func (r RecentRun) Occurrence() *time.Time {
	if r.OccurrenceMs == nil {
		return nil
	}
	t := time.UnixMilli(*r.OccurrenceMs).UTC()
	return &t
}

// Ended reports a live schedule whose spec has no occurrence left (its
// end_at or last at time has passed, CONTRACT §16): it stays active with
// no next fire. A paused schedule has no next fire either, so only an
// active one can be ended.
func (s *Schedule) Ended() bool {
	return s.Status == StatusActive && s.NextFireAt == nil
}
