package scheduling

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

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

// transition saves a run change, its history event and the instance status.
func (s *Service) transition(ctx context.Context, tx bun.IDB, run *models.Run, now time.Time, eventType string, payload map[string]any) error {
	run.UpdatedAt = now
	ev, err := s.newRunEvent(run, now, eventType, payload)
	if err != nil {
		return err
	}
	if err := models.UpdateRun(ctx, tx, run); err != nil {
		return err
	}
	if err := models.InsertRunEvent(ctx, tx, ev); err != nil {
		return err
	}
	return models.SetInstanceStatus(ctx, tx, run.WorkflowInstanceID, run.Status, run)
}

// finish moves an active run to a final status.
func (s *Service) finish(ctx context.Context, tx bun.IDB, run *models.Run, now time.Time, status, eventType string, payload map[string]any) error {
	run.Status = status
	run.FinishedAt = ptrTime(now)
	run.LeaseExpiresAt = nil
	return s.transition(ctx, tx, run, now, eventType, payload)
}

// requestCancel asks an active run to stop gracefully. A run no worker has
// claimed yet has nobody to ask, so it is cancelled at once.
func (s *Service) requestCancel(ctx context.Context, tx bun.IDB, now time.Time, runID, reason string) error {
	run, err := models.LockRun(ctx, tx, runID)
	if err != nil {
		return err
	}
	switch {
	case run.Status == models.RunPending:
		return s.finish(ctx, tx, run, now, models.RunCancelled, RunEventCancelled, map[string]any{"reason": reason})
	case run.Status == models.RunRunning && run.CancelRequestedAt == nil:
		run.CancelRequestedAt = ptrTime(now)
		return s.transition(ctx, tx, run, now, RunEventCancelRequested, map[string]any{"reason": reason})
	}
	return nil
}

// terminate stops an active run immediately.
func (s *Service) terminate(ctx context.Context, tx bun.IDB, now time.Time, runID, reason string) error {
	run, err := models.LockRun(ctx, tx, runID)
	if err != nil {
		return err
	}
	if !run.Active() {
		return nil
	}
	return s.finish(ctx, tx, run, now, models.RunTerminated, RunEventTerminated, map[string]any{"reason": reason})
}

func runNotFound(namespace, runID string) error {
	return &NotFoundError{Code: "run_not_found", Message: fmt.Sprintf("run %q not found in namespace %q", runID, namespace)}
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
	ended := 0
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		runs, err := models.ClaimExpiredRuns(ctx, tx, now, now.Add(-s.cancelGrace), limit)
		if err != nil {
			return err
		}
		for i := range runs {
			run := &runs[i]
			status, eventType, payload := expiry(run, now, s.cancelGrace)
			if status == "" {
				continue
			}
			if err := s.finish(ctx, tx, run, now, status, eventType, payload); err != nil {
				return err
			}
			ended++
		}
		return nil
	})
	return ended, err
}

// expiry decides how an overdue run ends: a passed deadline is timed_out, a
// lost lease is failed (worker_lost), an ignored cancellation is cancelled.
func expiry(run *models.Run, now time.Time, grace time.Duration) (status, eventType string, payload map[string]any) {
	switch {
	case run.ExecutionDeadlineAt != nil && !now.Before(*run.ExecutionDeadlineAt):
		return models.RunTimedOut, RunEventTimedOut, map[string]any{"timeout": "execution", "deadline": FormatTime(*run.ExecutionDeadlineAt)}
	case run.RunDeadlineAt != nil && !now.Before(*run.RunDeadlineAt):
		return models.RunTimedOut, RunEventTimedOut, map[string]any{"timeout": "run", "deadline": FormatTime(*run.RunDeadlineAt)}
	case run.CancelRequestedAt != nil && !now.Before(run.CancelRequestedAt.Add(grace)):
		return models.RunCancelled, RunEventCancelled, map[string]any{"reason": "cancellation grace period elapsed"}
	case run.Status == models.RunRunning && run.LeaseExpiresAt != nil && !now.Before(*run.LeaseExpiresAt):
		msg, typ := "lease expired without heartbeat", "worker_lost"
		run.FailureMessage, run.FailureType = &msg, &typ
		return models.RunFailed, RunEventFailed, map[string]any{"message": msg, "type": typ}
	}
	return "", "", nil
}

// RunListFilter selects runs, newest first.
type RunListFilter struct {
	Namespace  string
	ScheduleID string // user-facing schedule ID
	Statuses   []string
	Cursor     string // the last run ID of the previous page
	Limit      int
}

// RunPage is one page of runs.
type RunPage struct {
	Runs       []models.Run
	NextCursor string
	HasMore    bool
}

var runStatuses = []string{models.RunPending, models.RunRunning, models.RunCompleted, models.RunFailed, models.RunCancelled, models.RunTerminated, models.RunTimedOut}

// ListRuns returns one keyset page of runs.
func (s *Service) ListRuns(ctx context.Context, f RunListFilter) (*RunPage, error) {
	v := &ValidationError{Code: "validation_failed"}
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
	filter := models.RunFilter{Namespace: f.Namespace, Statuses: f.Statuses, BeforeID: f.Cursor, Limit: limit}
	if f.ScheduleID != "" {
		sch, err := s.Get(ctx, f.Namespace, f.ScheduleID)
		if err != nil {
			return nil, err
		}
		filter.WorkflowScheduleID = sch.ID
	}
	runs, more, err := models.ListRuns(ctx, s.db, filter)
	if err != nil {
		return nil, err
	}
	page := &RunPage{Runs: runs, HasMore: more}
	if more {
		page.NextCursor = runs[len(runs)-1].ID
	}
	return page, nil
}

// RunDescription is a run with its history.
type RunDescription struct {
	Run    *models.Run
	Events []models.RunEvent
}

// DescribeRun returns a run and its history events.
func (s *Service) DescribeRun(ctx context.Context, namespace, runID string) (*RunDescription, error) {
	run, err := s.GetRun(ctx, namespace, runID)
	if err != nil {
		return nil, err
	}
	events, err := models.ListRunEvents(ctx, s.db, run.ID)
	if err != nil {
		return nil, err
	}
	return &RunDescription{Run: run, Events: events}, nil
}
