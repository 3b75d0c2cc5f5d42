package scheduling

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// MaxBackfillOccurrences bounds one backfill request.
const MaxBackfillOccurrences = 10000

// BackfillResult is one occurrence of a backfill.
type BackfillResult struct {
	OccurrenceTime time.Time `json:"occurrence_time"`
	InstanceID     string    `json:"instance_id,omitempty"`
	RunID          string    `json:"run_id,omitempty"`
	// started | buffered | skipped | failed; a dry run says planned for
	// what would start, and buffered or skipped (with the reason, and the
	// run for already_started) as the backfill would decide them.
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// Backfill outcomes.
const (
	BackfillStarted  = "started"
	BackfillBuffered = "buffered" // only with an explicit buffer_* override
	BackfillSkipped  = "skipped"
	BackfillFailed   = "failed"
	BackfillPlanned  = "planned"
)

// Backfill report outcomes (BackfillReport.Outcome).
const (
	BackfillCompleted        = "completed"
	BackfillDryRun           = "dry_run"
	BackfillMaxRunsExhausted = "max_runs_exhausted" // the schedule is deleted
	// BackfillInterrupted: a later batch failed; Results lists what the
	// committed batches did.
	BackfillInterrupted = "interrupted"
)

// BackfillReport is the answer to a backfill.
type BackfillReport struct {
	Outcome     string           `json:"outcome"` // a Backfill… report outcome
	Occurrences int              `json:"occurrences"`
	Results     []BackfillResult `json:"results"`
	// BeforeCreated counts the occurrences before the schedule was created
	// (a dry run's: an operator backfilling a new schedule should know).
	BeforeCreated int `json:"-"`
}

// BackfillInput names the window [From, To) and how to run it.
type BackfillInput struct {
	From, To      time.Time
	OverlapPolicy string // optional override
	DryRun        bool
	// Only, when set, keeps just these occurrences of [From, To): the
	// ledger's "backfill the missed ones" starts exactly the missed and
	// paused occurrences, not the ones that ran in between.
	Only           []time.Time
	CommandContext *CommandContext
}

// Backfill starts the canonical occurrences in [From, To) in order, without
// jitter. Buffer policies act as allow_all (a buffer would never drain in
// time); an explicit override wins. It stops when max_runs is exhausted.
func (s *Service) Backfill(ctx context.Context, namespace, scheduleID string, in BackfillInput) (*BackfillReport, error) {
	if in.From.IsZero() || in.To.IsZero() {
		v := &ValidationError{Code: CodeValidationFailed}
		if in.From.IsZero() {
			v.Add("from", "is required (RFC 3339)")
		}
		if in.To.IsZero() {
			v.Add("to", "is required (RFC 3339)")
		}
		return nil, v
	}
	if !in.From.Before(in.To) {
		return nil, &ValidationError{Code: CodeInvalidTimeRange, Fields: map[string]string{"to": "must be after from"}}
	}
	if in.OverlapPolicy != "" && !validPolicy(in.OverlapPolicy) {
		return nil, NewValidationError("overlap_policy", policyMessage())
	}
	if len(in.Only) > MaxBackfillOccurrences {
		return nil, &ValidationError{Code: CodeBackfillTooLarge, Fields: map[string]string{"only": fmt.Sprintf("at most %d occurrences", MaxBackfillOccurrences)}}
	}
	occurrences := func(db bun.IDB, sch *models.Schedule) ([]time.Time, error) {
		compiled, err := s.compileSpec(ctx, db, sch.Namespace, sch.Spec)
		if err != nil {
			return nil, fmt.Errorf("compile stored spec: %w", err)
		}
		times, err := compiled.Between(in.From, in.To, MaxBackfillOccurrences)
		if err == nil && in.Only != nil {
			keep := make(map[int64]bool, len(in.Only))
			for _, t := range in.Only {
				keep[t.Unix()] = true
			}
			times = slices.DeleteFunc(times, func(t time.Time) bool { return !keep[t.Unix()] })
		}
		if errors.Is(err, timespec.ErrTooManyOccurrences) {
			return nil, &ValidationError{Code: CodeBackfillTooLarge, Fields: map[string]string{
				"to": fmt.Sprintf("the window holds more than %d occurrences; split it", MaxBackfillOccurrences)}}
		}
		return times, err
	}

	if in.DryRun {
		sch, err := s.getWithLatestRun(ctx, namespace, scheduleID)
		if err != nil {
			return nil, err
		}
		times, err := occurrences(s.db, &sch.Schedule)
		if err != nil {
			return nil, err
		}
		return s.backfillPlan(ctx, sch, times, backfillPolicy(in.OverlapPolicy, sch.OverlapPolicy))
	}

	// Batches of at most s.backfillBatch occurrences, each its own transaction on the
	// locked schedule, so that other work interleaves: on SQLite one
	// 10,000-occurrence transaction held the only connection for seconds,
	// stalling every request and fire. The deterministic backfill IDs make a
	// retry of the whole request after a stop safe (already_started).
	var report *BackfillReport
	var times []time.Time
	for start := 0; report == nil || start < len(times); start += s.backfillBatch {
		var batch []BackfillResult
		exhausted := false
		_, err := s.mutate(ctx, namespace, scheduleID, in.CommandContext, func(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule) error {
			batch, exhausted = nil, false
			if sch.Status == models.StatusDeleted {
				if report != nil { // max_runs ran out in an earlier batch
					exhausted = true
					return errUnchanged
				}
				return conflict(CodeScheduleDeleted, "schedule %q is deleted", scheduleID)
			}
			if report == nil {
				var err error
				if times, err = occurrences(tx, &sch.Schedule); err != nil {
					return err
				}
			}
			policy := backfillPolicy(in.OverlapPolicy, sch.OverlapPolicy)
			for _, t := range times[start:min(start+s.backfillBatch, len(times))] {
				if sch.Status == models.StatusDeleted {
					exhausted = true
					break
				}
				batch = append(batch, s.backfillOne(ctx, tx, rec, sch, t, policy))
			}
			// The last batch (all done, or max_runs ran out) reports the
			// whole backfill in its own transaction.
			if start+s.backfillBatch >= len(times) || sch.Status == models.StatusDeleted {
				var all []BackfillResult
				if report != nil {
					all = append(all, report.Results...)
				}
				all = append(all, batch...)
				outcome := BackfillCompleted
				if sch.Status == models.StatusDeleted {
					outcome = BackfillMaxRunsExhausted
				}
				rec.ended.note(backfillNotice(&sch.Schedule, in, outcome, all))
			}
			return nil
		})
		if err != nil {
			if report == nil || len(report.Results) == 0 {
				return nil, err
			}
			// Earlier batches are committed: say which, rather than fail as
			// if nothing had started.
			s.logger.Error("backfill stopped part-way", "schedule_id", scheduleID, "done", len(report.Results), "err", err)
			report.Outcome = BackfillInterrupted
			return report, nil
		}
		if report == nil {
			report = &BackfillReport{Outcome: BackfillCompleted, Occurrences: len(times), Results: make([]BackfillResult, 0, len(times))}
		}
		report.Results = append(report.Results, batch...)
		if exhausted {
			report.Outcome = BackfillMaxRunsExhausted
			break
		}
	}
	return report, nil
}

// backfillPolicy is the overlap policy a backfill applies: the override,
// else the schedule's, where buffer policies act as allow_all (a buffer
// would never drain in time). One rule for the backfill, its jobs and the
// dry runs of both.
func backfillPolicy(override, schedules string) string {
	switch {
	case override != "":
		return override
	case schedules == OverlapBufferOne || schedules == OverlapBufferAll:
		return OverlapAllowAll
	}
	return schedules
}

// getWithLatestRun reads a live schedule with its latest run's status,
// without locking it: what a dry run plays the policy forward from.
func (s *Service) getWithLatestRun(ctx context.Context, namespace, scheduleID string) (*models.ClaimedSchedule, error) {
	sch, err := models.GetScheduleWithLatestRun(ctx, s.db, namespace, scheduleID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, scheduleNotFound(namespace, scheduleID)
	}
	if err != nil {
		return nil, err
	}
	if sch.Status == models.StatusDeleted {
		return nil, conflict(CodeScheduleDeleted, "schedule %q is deleted", scheduleID)
	}
	return sch, nil
}

// backfillSim plays a backfill forward without writing anything: each
// occurrence is decided by decideFire, as a backfill slice decides it
// (fire), from the schedule's state now — its latest run, its buffer, its
// max_runs budget — on the assumption that no run ends while the backfill
// runs. That is the case that matters (skip behind a run a backfill just
// started: one starts, the rest are skipped), and a run that does end
// meanwhile can only turn a predicted skip into a start.
type backfillSim struct{ st fireState }

func newBackfillSim(sch *models.ClaimedSchedule, policy string) *backfillSim {
	return &backfillSim{st: fireState{kind: kindBackfill, policy: policy, status: sch.Status,
		remainingActions: sch.RemainingActions, latestRunStatus: sch.LatestRunStatus, bufferDepth: sch.BufferDepth}}
}

// next decides the next occurrence; started says a backfill already
// started it (its deterministic instance exists).
func (b *backfillSim) next(started bool) (outcome, reason string) {
	d := decideFire(b.st)
	switch {
	case d.action == actSkip:
		return BackfillSkipped, d.reason
	case d.action == actBuffer:
		b.st.bufferDepth++
		return BackfillBuffered, ""
	case started:
		// The start fails already_started and its savepoint undoes the
		// rest of the fire (a cancel of the running run included).
		return BackfillSkipped, SkipAlreadyStart
	}
	pending := models.RunPending
	b.st.latestRunStatus = &pending
	if b.st.remainingActions != nil {
		left := *b.st.remainingActions - 1
		b.st.remainingActions = &left
	}
	return BackfillPlanned, ""
}

// backfillPlan is the dry run's answer: every occurrence decided as the
// backfill would decide it (backfillSim) — planned, buffered or skipped
// with the reason; those a backfill already started (their deterministic
// instance exists) come with their run. One query: the backfill IDs of
// consecutive occurrences form one range of the (namespace, instance_id)
// index (see idRange).
func (s *Service) backfillPlan(ctx context.Context, sch *models.ClaimedSchedule, times []time.Time, policy string) (*BackfillReport, error) {
	report := &BackfillReport{Outcome: BackfillDryRun, Occurrences: len(times), Results: make([]BackfillResult, 0, len(times))}
	if len(times) == 0 {
		return report, nil
	}
	ids := make([]string, len(times))
	for i, t := range times {
		ids[i] = backfillInstanceID(sch.ScheduleID, t)
	}
	found, err := models.InstanceRuns(ctx, s.db, sch.Namespace, idRange(ids))
	if err != nil {
		return nil, fmt.Errorf("read started occurrences: %w", err)
	}
	started := make(map[string]models.InstanceRun, len(found))
	for _, f := range found {
		started[f.InstanceID] = f
	}
	sim := newBackfillSim(sch, policy)
	for i, t := range times {
		f, ok := started[ids[i]]
		r := BackfillResult{OccurrenceTime: t, InstanceID: ids[i]}
		r.Outcome, r.Reason = sim.next(ok)
		if r.Reason == SkipAlreadyStart && f.RunID != nil {
			r.RunID = *f.RunID
		}
		if t.Before(sch.CreatedAt) {
			report.BeforeCreated++
		}
		report.Results = append(report.Results, r)
	}
	return report, nil
}

// DefaultBackfillBatch is how many occurrences one backfill transaction
// starts by default. On SQLite a batch holds the only connection, about
// 30 ms for 100 (500 made concurrent requests wait 150 ms); smaller batches
// cost no measurable throughput on either database (docs/PERFORMANCE.md).
const DefaultBackfillBatch = 100

// backfillOne starts one occurrence under a savepoint, so a failed start
// costs only itself.
func (s *Service) backfillOne(ctx context.Context, tx bun.Tx, rec *recorder, sch *models.ClaimedSchedule, t time.Time, policy string) BackfillResult {
	instanceID := backfillInstanceID(sch.ScheduleID, t)
	result := BackfillResult{OccurrenceTime: t, InstanceID: instanceID}
	snapshot, mark := cloneClaimed(*sch), rec.ended.mark()
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
		s.logger.Error("backfill occurrence failed", "schedule_id", sch.ScheduleID, "occurrence", t, "err", err)
		*sch = snapshot
		rec.ended.rollback(mark)
		result.Outcome, result.Reason = BackfillFailed, "start_failed"
	}
	return result
}
