package scheduling

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// MaxBackfillOccurrences bounds one backfill request.
const MaxBackfillOccurrences = 10000

// BackfillResult is one occurrence of a backfill.
type BackfillResult struct {
	OccurrenceTime time.Time `json:"occurrence_time"`
	InstanceID     string    `json:"instance_id,omitempty"`
	RunID          string    `json:"run_id,omitempty"`
	Outcome        string    `json:"outcome"` // started | buffered | skipped | failed | planned (dry run)
	Reason         string    `json:"reason,omitempty"`
}

// Backfill outcomes.
const (
	BackfillStarted  = "started"
	BackfillBuffered = "buffered" // only with an explicit buffer_* override
	BackfillSkipped  = "skipped"
	BackfillFailed   = "failed"
	BackfillPlanned  = "planned"
)

// BackfillReport is the answer to a backfill.
type BackfillReport struct {
	Outcome     string           `json:"outcome"` // completed | dry_run | max_runs_exhausted
	Occurrences int              `json:"occurrences"`
	Results     []BackfillResult `json:"results"`
}

// BackfillInput names the window [From, To) and how to run it.
type BackfillInput struct {
	From, To       time.Time
	OverlapPolicy  string // optional override
	DryRun         bool
	CommandContext *CommandContext
}

// Backfill starts the canonical occurrences in [From, To) in order, without
// jitter. Buffer policies act as allow_all (a buffer would never drain in
// time); an explicit override wins. It stops when max_runs is exhausted.
func (s *Service) Backfill(ctx context.Context, namespace, scheduleID string, in BackfillInput) (*BackfillReport, error) {
	if in.From.IsZero() || in.To.IsZero() {
		v := &ValidationError{Code: "validation_failed"}
		if in.From.IsZero() {
			v.Add("from", "is required (RFC 3339)")
		}
		if in.To.IsZero() {
			v.Add("to", "is required (RFC 3339)")
		}
		return nil, v
	}
	if !in.From.Before(in.To) {
		return nil, &ValidationError{Code: "invalid_time_range", Fields: map[string]string{"to": "must be after from"}}
	}
	if in.OverlapPolicy != "" && !validPolicy(in.OverlapPolicy) {
		return nil, NewValidationError("overlap_policy", policyMessage())
	}
	occurrences := func(sch *models.Schedule) ([]time.Time, error) {
		compiled, err := Compile(sch.Spec)
		if err != nil {
			return nil, fmt.Errorf("compile stored spec: %w", err)
		}
		times, err := compiled.Between(in.From, in.To, MaxBackfillOccurrences)
		if errors.Is(err, ErrTooManyOccurrences) {
			return nil, &ValidationError{Code: "backfill_too_large", Fields: map[string]string{
				"to": fmt.Sprintf("the window holds more than %d occurrences; split it", MaxBackfillOccurrences)}}
		}
		return times, err
	}

	if in.DryRun {
		sch, err := s.Get(ctx, namespace, scheduleID)
		if err != nil {
			return nil, err
		}
		if sch.Status == models.StatusDeleted {
			return nil, conflict("schedule_deleted", "schedule %q is deleted", scheduleID)
		}
		times, err := occurrences(sch)
		if err != nil {
			return nil, err
		}
		report := &BackfillReport{Outcome: "dry_run", Occurrences: len(times), Results: make([]BackfillResult, 0, len(times))}
		for _, t := range times {
			report.Results = append(report.Results, BackfillResult{OccurrenceTime: t, InstanceID: backfillInstanceID(sch.ScheduleID, t), Outcome: BackfillPlanned})
		}
		return report, nil
	}

	var report *BackfillReport
	_, err := s.mutate(ctx, namespace, scheduleID, in.CommandContext, func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
		if sch.Status == models.StatusDeleted {
			return conflict("schedule_deleted", "schedule %q is deleted", scheduleID)
		}
		times, err := occurrences(&sch.Schedule)
		if err != nil {
			return err
		}
		policy := in.OverlapPolicy
		if policy == "" {
			policy = sch.OverlapPolicy
			if policy == OverlapBufferOne || policy == OverlapBufferAll {
				policy = OverlapAllowAll
			}
		}
		report = &BackfillReport{Outcome: "completed", Occurrences: len(times), Results: make([]BackfillResult, 0, len(times))}
		for _, t := range times {
			if sch.Status == models.StatusDeleted {
				report.Outcome = "max_runs_exhausted"
				break
			}
			instanceID := backfillInstanceID(sch.ScheduleID, t)
			result := BackfillResult{OccurrenceTime: t, InstanceID: instanceID}
			snapshot := cloneClaimed(*sch)
			_, err := savepoint(ctx, tx, func() (TickRow, error) {
				res, err := s.fire(ctx, tx, rec, sch, fireRequest{kind: kindBackfill, instanceID: instanceID, occurrence: t, policy: policy})
				if err != nil {
					return TickRow{}, err
				}
				result.RunID, result.Reason = res.RunID, res.Reason
				switch res.Outcome {
				case OutcomeTriggered:
					result.Outcome = BackfillStarted
				case OutcomeBuffered:
					result.Outcome = BackfillBuffered
				default:
					result.Outcome = BackfillSkipped
				}
				return TickRow{}, nil
			})
			if err != nil {
				s.logger.Error("backfill occurrence failed", "schedule_id", scheduleID, "occurrence", t, "err", err)
				*sch = snapshot
				result.Outcome, result.Reason = BackfillFailed, "start_failed"
			}
			report.Results = append(report.Results, result)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return report, nil
}
