package scheduling

import (
	"context"
	"encoding/json"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// How a fire came about; also the ScheduleTriggered outcome and run trigger.
const (
	kindScheduled = "scheduled"
	kindManual    = "manual"
	kindDrained   = "drained"
	kindBackfill  = "backfilled"
)

// Outcomes of one fire attempt.
const (
	OutcomeTriggered = "triggered"
	OutcomeBuffered  = "buffered"
	OutcomeSkipped   = "skipped"
)

// Skip reasons of CONTRACT §4.
const (
	SkipOverlap       = "overlap_policy_skip"
	SkipBufferFull    = "buffer_full"
	SkipNotTriggeable = "status_not_triggerable"
	SkipExhausted     = "remaining_actions_exhausted"
	SkipAlreadyStart  = "already_started"
)

// Instance IDs are deterministic so that one occurrence can start once
// only; the rules live in models, where a compact ring row recomputes them.
func scheduledInstanceID(scheduleID string, nominal time.Time) string {
	return models.ScheduledInstanceID(scheduleID, nominal)
}

func backfillInstanceID(scheduleID string, nominal time.Time) string {
	return models.BackfillInstanceID(scheduleID, nominal)
}

// manualInstanceID names a manual fire by a ULID: its first ten characters
// are the millisecond of the trigger (so IDs still sort by time), the rest
// are monotonic within a process and random across replicas. A plain
// millisecond collided whenever two triggers shared one, and the second fire,
// already acknowledged, was later dropped as already_started.
func (s *Service) manualInstanceID(scheduleID string, now time.Time) string {
	return "schedule:" + scheduleID + ":manual:" + s.ids.newAt(now)
}

// fireRequest is one attempt to start the schedule's workflow.
type fireRequest struct {
	kind       string
	instanceID string
	occurrence time.Time
	policy     string // effective overlap policy
	// input, when set, replaces the action's input (a run started again
	// with the input of the run it repeats).
	input json.RawMessage
}

// FireResult is what one attempt did.
type FireResult struct {
	Outcome     string // triggered | buffered | skipped
	InstanceID  string
	RunID       string
	Reason      string
	BufferDepth int
}

// fireState is what the decision of one fire depends on: the request and
// the locked schedule's state.
type fireState struct {
	kind             string  // kindScheduled, kindManual, kindDrained, kindBackfill
	policy           string  // effective overlap policy
	status           string  // the schedule's
	remainingActions *int64  // nil: unlimited
	latestRunStatus  *string // the latest run's, nil when none
	bufferDepth      int
}

// fireAction is what a fire does.
type fireAction int

const (
	actStart          fireAction = iota
	actSkip                      // with a reason
	actBuffer                    // park it until the running run ends
	actCancelStart               // ask the running run to cancel, then start
	actTerminateStart            // terminate the running run, then start
)

// fireDecision is the outcome of decideFire.
type fireDecision struct {
	action fireAction
	reason string // skip reason (CONTRACT §4) when action is actSkip
}

// startsAnyway lists the overlap policies under which decideFire starts a
// fire whatever the latest run is doing: the claims of scheduled fires do
// not read the latest run's status for schedules with these policies
// (TestStartsAnywayIgnoresTheLatestRun checks the list against decideFire).
var startsAnyway = []string{OverlapAllowAll}

// decideFire applies the status, the max-runs budget and the overlap
// policy (CONTRACT §4) to one fire. It is pure — a function of the state
// alone — and fire performs its writes.
func decideFire(st fireState) fireDecision {
	if st.kind != kindBackfill && st.status != models.StatusActive {
		return fireDecision{action: actSkip, reason: SkipNotTriggeable}
	}
	if st.remainingActions != nil && *st.remainingActions <= 0 {
		return fireDecision{action: actSkip, reason: SkipExhausted}
	}
	running := st.latestRunStatus != nil && (*st.latestRunStatus == models.RunPending || *st.latestRunStatus == models.RunRunning)
	switch st.policy {
	case OverlapSkip:
		if running {
			return fireDecision{action: actSkip, reason: SkipOverlap}
		}
	case OverlapBufferOne, OverlapBufferAll:
		// A non-empty buffer also blocks, so buffered fires keep their order.
		if st.kind != kindDrained && (running || st.bufferDepth > 0) {
			limit := 1
			if st.policy == OverlapBufferAll {
				limit = MaxBufferAll
			}
			if st.bufferDepth >= limit {
				return fireDecision{action: actSkip, reason: SkipBufferFull}
			}
			return fireDecision{action: actBuffer}
		}
	case OverlapCancelOther:
		if running {
			return fireDecision{action: actCancelStart}
		}
	case OverlapTerminateOther:
		if running {
			return fireDecision{action: actTerminateStart}
		}
	}
	return fireDecision{action: actStart}
}

// fire decides (decideFire) and performs the decision: starts, buffers or
// skips. It runs in the caller's transaction on a locked schedule and
// changes sch in memory; the caller saves sch.
func (s *Service) fire(ctx context.Context, tx bun.IDB, rec *recorder, sch *models.ClaimedSchedule, req fireRequest) (FireResult, error) {
	d := decideFire(fireState{
		kind: req.kind, policy: req.policy, status: sch.Status, remainingActions: sch.RemainingActions,
		latestRunStatus: sch.LatestRunStatus, bufferDepth: sch.BufferDepth,
	})
	switch d.action {
	case actSkip:
		return s.skip(ctx, rec, sch, req, d.reason)
	case actBuffer:
		return s.buffer(ctx, rec, sch, req)
	case actCancelStart:
		if err := s.requestCancel(ctx, tx, &rec.ended, rec.now, *sch.LatestRunID, "cancelled by overlap policy cancel_other of schedule "+sch.ScheduleID); err != nil {
			return FireResult{}, err
		}
	case actTerminateStart:
		if err := s.terminate(ctx, tx, &rec.ended, rec.now, *sch.LatestRunID, "terminated by overlap policy terminate_other of schedule "+sch.ScheduleID); err != nil {
			return FireResult{}, err
		}
	}
	return s.start(ctx, tx, rec, sch, req)
}

func (s *Service) skip(ctx context.Context, rec *recorder, sch *models.ClaimedSchedule, req fireRequest, reason string) (FireResult, error) {
	sch.SkippedTriggerCount++
	sch.LastSkipReason = &reason
	sch.LastSkippedAt = ptrTime(rec.now)
	if err := remember(ctx, rec, sch, models.RecentAction{Outcome: OutcomeSkipped, Reason: reason, InstanceID: req.instanceID}, req); err != nil {
		return FireResult{}, err
	}
	// The occurrence and its instance ID let the occurrence ledger tell
	// which occurrence a skip was (the skips index is on the instance ID).
	// A manual fire has no occurrence, and its unused ID would be noise.
	instanceID := req.instanceID
	if req.kind == kindManual {
		instanceID = ""
	}
	err := rec.record(ctx, &sch.Schedule, &SkippedPayload{
		Reason: reason, SkippedTriggerCount: sch.SkippedTriggerCount, LastSkippedAt: Instant(rec.now),
		OccurrenceTime: InstantOf(&req.occurrence),
	}, instanceID, "")
	return FireResult{Outcome: OutcomeSkipped, Reason: reason, BufferDepth: sch.BufferDepth}, err
}

// buffer parks the fire. CONTRACT §6 has no event type for it: the audit stream
// records the fire when it is drained (ScheduleTriggered, outcome drained).
func (s *Service) buffer(ctx context.Context, rec *recorder, sch *models.ClaimedSchedule, req fireRequest) (FireResult, error) {
	kind := req.kind
	sch.BufferedActions = append(sch.BufferedActions, models.BufferedAction{
		InstanceID: req.instanceID, OccurrenceTime: req.occurrence, Kind: kind, BufferedAt: rec.now,
	})
	sch.BufferDepth = len(sch.BufferedActions)
	err := remember(ctx, rec, sch, models.RecentAction{Outcome: OutcomeBuffered, InstanceID: req.instanceID}, req)
	return FireResult{Outcome: OutcomeBuffered, InstanceID: req.instanceID, BufferDepth: sch.BufferDepth}, err
}

// remember records the action in the schedule's ring of its last ten
// (models.SaveRecentActions), numbered by the schedule's actions count.
func remember(ctx context.Context, rec *recorder, sch *models.ClaimedSchedule, a models.RecentAction, req fireRequest) error {
	a.FiredAt = rec.now
	a.OccurrenceTime = req.occurrence
	a.FireLagMs = models.FireLagMs(rec.now, req.occurrence)
	n := sch.ActionsCount
	sch.ActionsCount++
	row := models.RecentActionSlot(sch.ID, n, a)
	row.ScheduleID = sch.ScheduleID
	return rec.w.saveRecent(ctx, row)
}

// route resolves where the run is queued: schedule → workflow type → default.
func (s *Service) route(sch *models.Schedule) Route {
	if t := sch.Action.Target; IsHTTP(t) {
		return Route{Connection: HTTPConnection, Queue: targetHost(t)}
	}
	r := s.routing.Default
	if byType, ok := s.routing.ByWorkflowType[sch.Action.WorkflowType]; ok {
		if byType.Connection != "" {
			r.Connection = byType.Connection
		}
		if byType.Queue != "" {
			r.Queue = byType.Queue
		}
	}
	if sch.Connection != nil {
		r.Connection = *sch.Connection
	}
	if sch.Queue != nil {
		r.Queue = *sch.Queue
	}
	return r
}

// start creates the run (which is the occurrence's instance, and carries
// its ScheduleTriggered provenance) and records ScheduleTriggered — all in
// the caller's transaction.
func (s *Service) start(ctx context.Context, tx bun.IDB, rec *recorder, sch *models.ClaimedSchedule, req fireRequest) (FireResult, error) {
	now := rec.now
	runID := s.ids.newAt(now)
	scheduleULID, scheduleID := sch.ID, sch.ScheduleID
	input := sch.Action.Input
	if req.input != nil {
		input = req.input
	}
	route := s.route(&sch.Schedule)
	occurrence := req.occurrence
	triggerNumber := sch.FiresCount + 1
	cron := ""
	if len(sch.Spec.CronExpressions) > 0 {
		cron = sch.Spec.CronExpressions[0]
	}
	timezone, policy := sch.Spec.Timezone, req.policy
	started := &models.StartedRun{
		Run: models.Run{
			ID: runID, Namespace: sch.Namespace, InstanceID: req.instanceID,
			WorkflowScheduleID: &scheduleULID, ScheduleID: &scheduleID,
			WorkflowType: sch.Action.WorkflowType, WorkflowClass: sch.Action.WorkflowClass,
			Input: input, Status: models.RunPending, Trigger: req.kind,
			Connection: route.Connection, Queue: route.Queue, OccurrenceTime: &occurrence,
			// A pending run names the attempt it runs next (SPEC §10).
			Attempt: 1,
			// The provenance event is sequence 1, served from the row.
			LastSequence: 1,
			CreatedAt:    now, UpdatedAt: now,
		},
		TriggerNumber: &triggerNumber, TriggerCron: &cron, TriggerTimezone: &timezone, TriggerOverlapPolicy: &policy,
	}
	run := &started.Run
	if t := sch.Action.ExecutionTimeoutSeconds; t != nil {
		run.ExecutionDeadlineAt = ptrTime(now.Add(time.Duration(*t) * time.Second))
	}
	if t := sch.Action.RunTimeoutSeconds; t != nil {
		run.RunDeadlineAt = ptrTime(now.Add(time.Duration(*t) * time.Second))
		run.RunTimeoutSeconds = t
	}
	run.RetryPolicy = sch.Action.RetryPolicy
	run.StartDeadlineAt = startDeadline(&sch.Schedule, req.kind, occurrence, now)
	inserted, err := rec.w.insertRun(ctx, started)
	if err != nil {
		return FireResult{}, err
	}
	if !inserted {
		return s.skip(ctx, rec, sch, req, SkipAlreadyStart)
	}
	sch.FiresCount++
	if req.kind == kindScheduled {
		s.noteLateFire(rec, sch, run, occurrence)
	}

	sch.LastFiredAt = ptrTime(now)
	sch.LatestInstanceID = &run.InstanceID
	sch.LatestRunID = &runID
	pending := models.RunPending
	sch.LatestRunStatus = &pending
	if sch.RemainingActions != nil {
		remaining := *sch.RemainingActions - 1
		sch.RemainingActions = &remaining
	}
	if err := remember(ctx, rec, sch, models.RecentAction{Outcome: req.kind, InstanceID: req.instanceID, RunID: runID}, req); err != nil {
		return FireResult{}, err
	}
	if err := rec.record(ctx, &sch.Schedule, &TriggeredPayload{
		WorkflowInstanceID: req.instanceID, WorkflowRunID: runID, Outcome: req.kind,
		EffectiveOverlapPolicy: req.policy, TriggerNumber: triggerNumber, OccurrenceTime: Instant(occurrence),
	}, req.instanceID, runID); err != nil {
		return FireResult{}, err
	}
	if sch.RemainingActions != nil && *sch.RemainingActions <= 0 {
		if err := s.deleteLocked(ctx, rec, &sch.Schedule, DeleteMaxRunsExhausted); err != nil {
			return FireResult{}, err
		}
	}
	return FireResult{Outcome: OutcomeTriggered, InstanceID: req.instanceID, RunID: runID, BufferDepth: sch.BufferDepth}, nil
}

// TriggerResult is the answer to a manual trigger.
type TriggerResult = FireResult

// Trigger fires a schedule now, applying its overlap policy or the given
// override. A paused schedule records a skip (status_not_triggerable).
func (s *Service) Trigger(ctx context.Context, namespace, scheduleID, overridePolicy string, cc *CommandContext) (FireResult, error) {
	if overridePolicy != "" && !validPolicy(overridePolicy) {
		return FireResult{}, NewValidationError("overlap_policy", policyMessage())
	}
	var result FireResult
	_, err := s.mutate(ctx, namespace, scheduleID, cc, func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		if sch.Status == models.StatusDeleted {
			return conflict(CodeScheduleDeleted, "schedule %q is deleted and cannot be triggered", scheduleID)
		}
		policy := sch.OverlapPolicy
		if overridePolicy != "" {
			policy = overridePolicy
		}
		var err error
		result, err = s.fire(ctx, tx, rec, sch, fireRequest{
			kind: kindManual, instanceID: s.manualInstanceID(sch.ScheduleID, rec.now), occurrence: rec.now, policy: policy,
		})
		return err
	})
	return result, err
}
