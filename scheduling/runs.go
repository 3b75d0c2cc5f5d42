package scheduling

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// Run history event types.
const (
	RunEventScheduleTriggered = "ScheduleTriggered"
	RunEventStarted           = "RunStarted"
	RunEventCancelRequested   = "RunCancelRequested"
	RunEventCompleted         = "RunCompleted"
	RunEventFailed            = "RunFailed"
	RunEventCancelled         = "RunCancelled"
	RunEventTerminated        = "RunTerminated"
	RunEventTimedOut          = "RunTimedOut"
	// RunEventAttemptFailed ends every failed attempt, the last one too.
	RunEventAttemptFailed = "RunAttemptFailed"
	// RunEventRetried: an operator gave a failed or timed-out run one more
	// attempt (RetryRun).
	RunEventRetried = "RunRetried"
)

// newRunEvent builds the run's next history event and advances its
// sequence; the caller writes the run (holding its lock) and the event.
func (s *Service) newRunEvent(run *models.Run, now time.Time, eventType string, payload map[string]any) (*models.RunEvent, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	run.LastSequence++
	return &models.RunEvent{
		ID: s.ids.newAt(now), WorkflowRunID: run.ID, Sequence: run.LastSequence,
		EventType: eventType, Payload: body, RecordedAt: now,
	}, nil
}

// transition saves a run change, its history event and the instance
// status, in one round trip — or, when out batches its transaction's
// writes, with the rest of them at flush.
func (s *Service) transition(ctx context.Context, tx bun.IDB, out *outcomes, run *models.Run, now time.Time, eventType string, payload map[string]any) error {
	run.UpdatedAt = now
	ev, err := s.newRunEvent(run, now, eventType, payload)
	if err != nil {
		return err
	}
	if out != nil && out.batch != nil {
		return models.AddTransition(out.batch, tx, run, ev)
	}
	b := models.NewBatch(tx)
	if err := models.AddTransition(b, tx, run, ev); err != nil {
		return err
	}
	return b.Exec(ctx, tx)
}

// finish moves an active run to a final status; out collects it for its
// schedule's health.
func (s *Service) finish(ctx context.Context, tx bun.IDB, out *outcomes, run *models.Run, now time.Time, status, eventType string, payload map[string]any) error {
	run.Status = status
	run.FinishedAt = ptrTime(now)
	if status == models.RunCompleted {
		// The run's outcome is its last attempt's: an earlier attempt's
		// failure is in the history, not on a completed run.
		run.FailureMessage, run.FailureType = nil, nil
	}
	run.LeaseExpiresAt, run.AvailableAt = nil, nil
	if err := s.transition(ctx, tx, out, run, now, eventType, payload); err != nil {
		return err
	}
	out.add(run)
	return nil
}

// attemptFailure is how one attempt ended without success.
type attemptFailure struct {
	errorType, message string
	// final is the run's status and event when no attempt follows.
	status, eventType string
	payload           map[string]any
	// retryable is false for ends that never retry (execution timeout).
	retryable bool
	// notBefore, when later than the policy's backoff, is the next
	// attempt's earliest time (an HTTP target's Retry-After).
	notBefore time.Time
	// extra adds keys to the RunAttemptFailed payload (an HTTP target's
	// status and the attempt's duration).
	extra map[string]any
}

// failAttempt records the end of a failed attempt (RunAttemptFailed) and
// either sends the same run back to pending for its next attempt, held
// until available_at, or — no attempts left, a non-retryable error type,
// or the execution deadline in the way — ends it with the final status.
func (s *Service) failAttempt(ctx context.Context, tx bun.IDB, out *outcomes, run *models.Run, now time.Time, f attemptFailure) error {
	run.FailureMessage, run.FailureType = &f.message, &f.errorType
	if run.Status != models.RunRunning {
		// No attempt is under way (never claimed, or waiting to retry):
		// nothing to record or retry; the deadline ends the run.
		return s.finish(ctx, tx, out, run, now, f.status, f.eventType, f.payload)
	}
	next, retry := time.Time{}, false
	if f.retryable {
		next, retry = nextAttempt(run, f.errorType, now)
		if retry && f.notBefore.After(next) {
			next = utcMicro(f.notBefore)
			retry = run.ExecutionDeadlineAt == nil || next.Before(*run.ExecutionDeadlineAt)
		}
	}
	var nextAt any
	if retry {
		nextAt = FormatTime(next)
	}
	attempt := map[string]any{"attempt": run.Attempt, "error_type": f.errorType, "message": f.message, "next_attempt_at": nextAt}
	for k, v := range f.extra {
		attempt[k] = v
	}
	if !retry {
		ev, err := s.newRunEvent(run, now, RunEventAttemptFailed, attempt)
		if err != nil {
			return err
		}
		if err := models.InsertRunEvent(ctx, tx, ev); err != nil {
			return err
		}
		return s.finish(ctx, tx, out, run, now, f.status, f.eventType, f.payload)
	}
	run.Status = models.RunPending
	run.Attempt++ // pending with the number of its next attempt (SPEC §10)
	run.AvailableAt = &next
	run.LeaseExpiresAt, run.WorkerID, run.WorkerPrincipal, run.CancelRequestedAt = nil, nil, nil, nil
	if t := run.RunTimeoutSeconds; t != nil {
		run.RunDeadlineAt = ptrTime(next.Add(time.Duration(*t) * time.Second))
	}
	return s.transition(ctx, tx, out, run, now, RunEventAttemptFailed, attempt)
}

// requestCancel asks an active run to stop gracefully. A run no worker has
// claimed yet has nobody to ask, so it is cancelled at once.
func (s *Service) requestCancel(ctx context.Context, tx bun.IDB, out *outcomes, now time.Time, runID, reason string) error {
	run, err := models.LockRun(ctx, tx, runID)
	if err != nil {
		return err
	}
	switch {
	case run.Status == models.RunPending:
		return s.finish(ctx, tx, out, run, now, models.RunCancelled, RunEventCancelled, map[string]any{"reason": reason})
	case run.Status == models.RunRunning && run.CancelRequestedAt == nil:
		run.CancelRequestedAt = ptrTime(now)
		return s.transition(ctx, tx, out, run, now, RunEventCancelRequested, map[string]any{"reason": reason})
	}
	return nil
}

// terminate stops an active run immediately.
func (s *Service) terminate(ctx context.Context, tx bun.IDB, out *outcomes, now time.Time, runID, reason string) error {
	run, err := models.LockRun(ctx, tx, runID)
	if err != nil {
		return err
	}
	if !run.Active() {
		return nil
	}
	return s.finish(ctx, tx, out, run, now, models.RunTerminated, RunEventTerminated, map[string]any{"reason": reason})
}

func runNotFound(namespace, runID string) error {
	return &NotFoundError{Code: CodeRunNotFound, Message: fmt.Sprintf("run %q not found in namespace %q", runID, namespace)}
}

// GetRun returns a run of the namespace.
func (s *Service) GetRun(ctx context.Context, namespace, runID string) (*models.Run, error) {
	run, err := models.GetRun(ctx, s.db, namespace, runID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, runNotFound(namespace, runID)
	}
	return run, err
}

// EnforceDeadlines ends active runs whose lease, run deadline or execution
// deadline has passed, and cancelled-but-unresponsive runs after the grace
// period. It returns how many runs it ended.
func (s *Service) EnforceDeadlines(ctx context.Context, limit int) (int, error) {
	now := s.now()
	// Usually no run has expired: ask before listing them.
	if work, err := s.loopWork(ctx); err != nil || !work.RunsExpired(now, now.Add(-s.cancelGrace)) {
		return 0, err
	}
	ids, err := models.ExpiredRunIDs(ctx, s.db, now, now.Add(-s.cancelGrace), limit)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	ended := 0
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		runs, err := models.ClaimExpiredRuns(ctx, tx, ids, now, now.Add(-s.cancelGrace))
		if err != nil {
			return err
		}
		var out outcomes
		for i := range runs {
			run := &runs[i]
			ok, err := s.expire(ctx, tx, &out, run, now)
			if err != nil {
				return err
			}
			if ok {
				ended++
			}
		}
		return out.flush(ctx, tx, now)
	})
	return ended, err
}

// expire ends an overdue attempt: a passed execution deadline ends the run
// (timed_out); a passed run deadline or a lost lease (worker_lost) is a
// failed attempt, retried when the policy allows; an ignored cancellation
// is cancelled. It reports whether it changed the run.
func (s *Service) expire(ctx context.Context, tx bun.IDB, out *outcomes, run *models.Run, now time.Time) (bool, error) {
	switch {
	case run.ExecutionDeadlineAt != nil && !now.Before(*run.ExecutionDeadlineAt):
		payload := map[string]any{"timeout": "execution", "deadline": FormatTime(*run.ExecutionDeadlineAt)}
		return true, s.failAttempt(ctx, tx, out, run, now, attemptFailure{
			errorType: "timed_out", message: "execution timeout: the run passed its execution deadline",
			status: models.RunTimedOut, eventType: RunEventTimedOut, payload: payload})
	case run.RunDeadlineAt != nil && !now.Before(*run.RunDeadlineAt):
		payload := map[string]any{"timeout": "run", "deadline": FormatTime(*run.RunDeadlineAt)}
		return true, s.failAttempt(ctx, tx, out, run, now, attemptFailure{
			errorType: "timed_out", message: "run timeout: the attempt passed its run deadline",
			status: models.RunTimedOut, eventType: RunEventTimedOut, payload: payload, retryable: true})
	case run.CancelRequestedAt != nil && !now.Before(run.CancelRequestedAt.Add(s.cancelGrace)):
		return true, s.finish(ctx, tx, out, run, now, models.RunCancelled, RunEventCancelled, map[string]any{"reason": "cancellation grace period elapsed"})
	case run.Status == models.RunRunning && run.LeaseExpiresAt != nil && !now.Before(*run.LeaseExpiresAt):
		msg, typ := "lease expired without heartbeat", "worker_lost"
		return true, s.failAttempt(ctx, tx, out, run, now, attemptFailure{
			errorType: typ, message: msg,
			status: models.RunFailed, eventType: RunEventFailed, payload: map[string]any{"message": msg, "type": typ}, retryable: true})
	}
	return false, nil
}

// RunListFilter selects runs, newest first.
type RunListFilter struct {
	Namespace  string
	ScheduleID string // user-facing schedule ID
	Statuses   []string
	Cursor     string // the last run ID of the previous page
	Limit      int
	// CreatedFrom and CreatedTo keep runs created in [from, to): run IDs
	// are ULIDs, which begin with their creation time, so the range is a
	// range of IDs on the same keyset (no index of its own).
	CreatedFrom, CreatedTo *time.Time
	// WorkflowType keeps one workflow type, matched among at most
	// MaxRunTypeScan runs of the range per page (RunPage.Scanned).
	WorkflowType string
}

// MaxRunTypeScan bounds the runs a workflow-type filter examines per page:
// workflow_runs has no index on the type (each would slow every fire,
// which inserts a run), so a page looks through the latest MaxRunTypeScan
// runs of its range — one key range — and the next page through the ones
// before them.
const MaxRunTypeScan = 5000

// RunPage is one page of runs.
type RunPage struct {
	Runs []models.Run
	// Zones are the time zones of the runs' schedules, by schedule ULID
	// (a run started by hand without one has none).
	Zones      map[string]string
	NextCursor string
	HasMore    bool
	// Scanned is set when a workflow-type page stopped at MaxRunTypeScan
	// runs examined: its runs are the matches among those, and the next
	// page looks at the ones before.
	Scanned int
}

// ulidFloor is the lowest ULID of an instant's millisecond.
func ulidFloor(t time.Time) string {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(t))
	return id.String()
}

var runStatuses = []string{models.RunPending, models.RunRunning, models.RunCompleted, models.RunFailed, models.RunCancelled, models.RunTerminated, models.RunTimedOut}

// ListRuns returns one keyset page of runs.
func (s *Service) ListRuns(ctx context.Context, f RunListFilter) (*RunPage, error) {
	v := &ValidationError{Code: CodeValidationFailed}
	for _, st := range f.Statuses {
		if !slices.Contains(runStatuses, st) {
			v.Add("status", "must be one of pending, running, completed, failed, cancelled, terminated, timed_out")
		}
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		v.Add("limit", "must be between 1 and 200")
	}
	if f.Cursor != "" && len(f.Cursor) != 26 {
		v.Add("cursor", "is not a cursor returned by this API")
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	if f.CreatedFrom != nil && f.CreatedTo != nil && !f.CreatedFrom.Before(*f.CreatedTo) {
		v.Add("created_to", "must be after created_from")
	}
	for i, t := range []*time.Time{f.CreatedFrom, f.CreatedTo} {
		if t != nil && (t.Before(time.Unix(0, 0)) || t.Year() > 9999) {
			v.Add([]string{"created_from", "created_to"}[i], "must be a time after 1970")
		}
	}
	if utf8.RuneCountInString(f.WorkflowType) > MaxNameLength {
		v.Add("workflow_type", fmt.Sprintf("must be at most %d characters", MaxNameLength))
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	filter := models.RunFilter{Namespace: f.Namespace, Statuses: f.Statuses, BeforeID: f.Cursor, Limit: limit, WorkflowType: f.WorkflowType}
	if f.CreatedFrom != nil {
		filter.FromID = ulidFloor(*f.CreatedFrom)
	}
	if f.CreatedTo != nil {
		if to := ulidFloor(*f.CreatedTo); filter.BeforeID == "" || to < filter.BeforeID {
			filter.BeforeID = to
		}
	}
	if f.ScheduleID != "" {
		sch, err := s.Get(ctx, f.Namespace, f.ScheduleID)
		if err != nil {
			return nil, err
		}
		filter.WorkflowScheduleID = sch.ID
	}
	var floor string
	if filter.WorkflowType != "" {
		var err error
		if floor, err = models.RunScanFloor(ctx, s.db, filter, MaxRunTypeScan); err != nil {
			return nil, err
		}
		filter.ScanFloorID = floor
	}
	runs, more, err := models.ListRuns(ctx, s.db, filter)
	if err != nil {
		return nil, err
	}
	var ulids []string
	for _, r := range runs {
		if r.WorkflowScheduleID != nil && !slices.Contains(ulids, *r.WorkflowScheduleID) {
			ulids = append(ulids, *r.WorkflowScheduleID)
		}
	}
	zones, err := models.ScheduleZones(ctx, s.db, ulids)
	if err != nil {
		return nil, err
	}
	page := &RunPage{Runs: runs, HasMore: more, Zones: zones}
	switch {
	case more:
		page.NextCursor = runs[len(runs)-1].ID
	case floor != "":
		// The scan's end, not the range's: the runs before the floor
		// are yet to be looked at.
		page.Scanned, page.HasMore, page.NextCursor = MaxRunTypeScan, true, floor
	}
	return page, nil
}

// RunDescription is a run with its history and its attempts.
type RunDescription struct {
	Run      *models.Run
	Events   []models.RunEvent
	Attempts []Attempt
}

// Attempt is one execution of a run by a worker, read from its history.
type Attempt struct {
	Number    int
	WorkerID  string
	StartedAt time.Time
	EndedAt   *time.Time // nil while it runs
	// Outcome is the run's final status for the last attempt, "failed"
	// for an attempt that was retried, "running" while it runs.
	Outcome   string
	ErrorType string
	Message   string
	// HTTPStatus is an HTTP target's answer, when one came.
	HTTPStatus *int
}

// attemptsOf reads the attempts from a run's history: each RunStarted opens
// one, and the next RunAttemptFailed or final event ends it.
func attemptsOf(run *models.Run, events []models.RunEvent) []Attempt {
	out := []Attempt{}
	for _, e := range events {
		var p struct {
			WorkerID   string `json:"worker_id"`
			Attempt    int    `json:"attempt"`
			ErrorType  string `json:"error_type"`
			Message    string `json:"message"`
			HTTPStatus *int   `json:"http_status"`
		}
		_ = json.Unmarshal(e.Payload, &p) // payloads are written by this package; a bad one reads as empty
		open := len(out) > 0 && out[len(out)-1].EndedAt == nil
		switch e.EventType {
		case RunEventStarted:
			out = append(out, Attempt{Number: p.Attempt, WorkerID: p.WorkerID, StartedAt: e.RecordedAt, Outcome: "running"})
		case RunEventAttemptFailed:
			if open {
				a := &out[len(out)-1]
				a.EndedAt, a.Outcome, a.ErrorType, a.Message = ptrTime(e.RecordedAt), models.RunFailed, p.ErrorType, p.Message
				a.HTTPStatus = p.HTTPStatus
			}
		case RunEventCompleted, RunEventCancelled, RunEventTerminated, RunEventFailed, RunEventTimedOut:
			if len(out) > 0 && (open || out[len(out)-1].EndedAt.Equal(e.RecordedAt)) {
				a := &out[len(out)-1]
				a.EndedAt, a.Outcome = ptrTime(e.RecordedAt), run.Status
				if p.HTTPStatus != nil {
					a.HTTPStatus = p.HTTPStatus
				}
			}
		}
	}
	return out
}

// DescribeRun returns a run and its history events.
func (s *Service) DescribeRun(ctx context.Context, namespace, runID string) (*RunDescription, error) {
	run, err := models.GetStartedRun(ctx, s.db, namespace, runID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, runNotFound(namespace, runID)
	}
	if err != nil {
		return nil, err
	}
	events, err := models.ListRunEvents(ctx, s.db, run.ID)
	if err != nil {
		return nil, err
	}
	if first, ok := provenanceEvent(run); ok {
		events = append([]models.RunEvent{first}, events...)
	}
	return &RunDescription{Run: &run.Run, Events: events, Attempts: attemptsOf(&run.Run, events)}, nil
}

// provenanceEvent is the ScheduleTriggered event that opens the history of
// a run a schedule started, served from the run row (migration 0009): its
// keys are CONTRACT §6's, its sequence 1 and its time the run's creation, as
// when it was a row of its own. Runs from before keep that row and have no
// provenance columns, so they get none here.
func provenanceEvent(run *models.StartedRun) (models.RunEvent, bool) {
	if !run.HasProvenance() {
		return models.RunEvent{}, false
	}
	var occurrence any
	if run.OccurrenceTime != nil {
		occurrence = FormatTime(*run.OccurrenceTime)
	}
	payload, err := json.Marshal(map[string]any{
		"schedule_id": deref(run.ScheduleID), "schedule_ulid": deref(run.WorkflowScheduleID),
		"cron_expression": deref(run.TriggerCron), "timezone": deref(run.TriggerTimezone),
		"overlap_policy": deref(run.TriggerOverlapPolicy), "trigger_number": *run.TriggerNumber,
		"occurrence_time": occurrence,
	})
	if err != nil {
		return models.RunEvent{}, false // cannot happen: strings and numbers
	}
	return models.RunEvent{
		ID: run.ID, WorkflowRunID: run.ID, Sequence: 1, EventType: RunEventScheduleTriggered,
		Payload: payload, RecordedAt: run.CreatedAt,
	}, true
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
