package scheduling

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// attachRead fills in what a surface shows of schedules beside their rows:
// the health (with the recent runs) and the recent actions, one statement
// each for any number of schedules.
func (s *Service) attachRead(ctx context.Context, schedules ...*models.Schedule) error {
	health, err := models.GetHealth(ctx, s.db, ulidsOf(schedules))
	if err != nil {
		return err
	}
	if err := s.attachRecentActions(ctx, schedules...); err != nil {
		return err
	}
	var runIDs []string
	for _, sch := range schedules {
		if sch.LatestRunID != nil {
			runIDs = append(runIDs, *sch.LatestRunID)
		}
	}
	latest, err := models.LatestRunStates(ctx, s.db, runIDs)
	if err != nil {
		return err
	}
	for _, sch := range schedules {
		sch.Health = health[sch.ID]
		sch.Health.ScheduleULID = sch.ID
		if sch.Health.RecentRuns == nil {
			sch.Health.RecentRuns = []models.RecentRun{}
		}
		if sch.LatestRunID != nil {
			sch.LatestRun = latest[*sch.LatestRunID]
		}
	}
	setHealthState(s.clock.Now(), schedules...)
	return nil
}

// attachRecentActions fills in the schedules' recent actions from their
// rings, newest first (an empty list for none).
func (s *Service) attachRecentActions(ctx context.Context, schedules ...*models.Schedule) error {
	recent, err := models.RecentActionsOf(ctx, s.db, ulidsOf(schedules))
	if err != nil {
		return err
	}
	for _, sch := range schedules {
		sch.RecentActions = recent[sch.ID]
		if sch.RecentActions == nil {
			sch.RecentActions = []models.RecentAction{}
		}
	}
	return nil
}

// ulidsOf lists the schedules' internal IDs.
func ulidsOf(schedules []*models.Schedule) []string {
	ids := make([]string, len(schedules))
	for i, sch := range schedules {
		ids[i] = sch.ID
	}
	return ids
}

// FoldHealth moves the run ends recorded since the last pass into their
// schedules' health rows (models.FoldHealth), a transaction per limit
// schedules, and returns how many schedules it folded. The loop runs it
// every pass; until then readers merge the pending ends themselves.
func (s *Service) FoldHealth(ctx context.Context, limit int) (int, error) {
	// Usually nothing ended since the last pass: ask before opening a
	// transaction.
	if work, err := s.loopWork(ctx); err != nil || !work.HealthPending {
		return 0, err
	}
	total := 0
	for {
		var n int
		err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var err error
			n, err = models.FoldHealth(ctx, tx, s.now(), limit)
			return err
		})
		total += n
		if err != nil || n < limit || ctx.Err() != nil {
			return total, err
		}
	}
}

// PauseFailing pauses the active schedules whose consecutive unsuccessful
// runs reached their pause_after_failures (CONTRACT §10), as the scheduler,
// with a reason naming the count and the last error. The loop runs it every
// pass, before firing. Runs end without the schedule's lock (that would
// make workers wait for, or deadlock with, the tick), so the pause is this
// separate step; it follows within one loop period.
func (s *Service) PauseFailing(ctx context.Context, limit int) ([]string, error) {
	// Usually none is failing: ask before opening a transaction.
	if work, err := s.loopWork(ctx); err != nil || !work.Failing {
		return nil, err
	}
	var paused []string
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		claimed, err := models.ClaimFailing(ctx, tx, limit)
		if err != nil || len(claimed) == 0 {
			return err
		}
		ids := make([]string, len(claimed))
		for i := range claimed {
			ids[i] = claimed[i].ID
		}
		// Read after the locks (see models.readLatestRunStatus for why).
		health, err := models.GetHealth(ctx, tx, ids)
		if err != nil {
			return err
		}
		now := s.now()
		rec := &recorder{w: immediateWriter(tx), ids: s.ids, now: now, cc: schedulerContext()}
		for i := range claimed {
			sch := &claimed[i]
			h := health[sch.ID]
			if sch.PauseAfterFailures == nil || h.ConsecutiveFailures < int64(*sch.PauseAfterFailures) || h.ConsecutiveFailures <= h.PausedAtFailures {
				continue
			}
			reason := failureReason(h)
			rec.cc.Reason = reason
			if err := s.pauseLocked(ctx, rec, sch, PauseInput{Reason: reason}); err != nil {
				return err
			}
			sch.UpdatedAt = now
			if err := models.UpdateSchedule(ctx, tx, sch); err != nil {
				return err
			}
			if err := models.MarkPausedForFailures(ctx, tx, sch.ID, h.ConsecutiveFailures); err != nil {
				return err
			}
			rec.ended.note(pausedOnFailureNotice(sch, h, reason))
			paused = append(paused, sch.Namespace+"/"+sch.ScheduleID)
		}
		return rec.ended.flush(ctx, tx, now)
	})
	return paused, err
}

// failureReason is the pause reason of a schedule paused for failures.
func failureReason(h models.ScheduleHealth) string {
	reason := fmt.Sprintf("paused after %d consecutive failed runs", h.ConsecutiveFailures)
	if h.LastRunError != nil && *h.LastRunError != "" {
		reason += "; last error: " + summaryExcerpt(*h.LastRunError) // the whole message is on the run
	}
	if utf8.RuneCountInString(reason) > MaxReasonLength {
		reason = string([]rune(reason)[:MaxReasonLength-1]) + "…"
	}
	return strings.ToValidUTF8(reason, "?")
}
