package scheduling

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// ResumeDue resumes the paused schedules whose paused_until has come
// (CONTRACT §12), as the scheduler: ScheduleResumed with command_context.source
// scheduler, the next fire computed from now like any resume (the paused
// occurrences are not caught up; the ledger shows them as paused). The loop
// runs it every pass before firing. Several replicas may run it at once:
// the rows are claimed with SKIP LOCKED and re-read after the lock, so each
// pause ends exactly once, and a schedule an operator resumed or re-paused
// meanwhile is left alone. It returns namespace/schedule_id of each.
func (s *Service) ResumeDue(ctx context.Context, limit int) ([]string, error) {
	if limit <= 0 {
		limit = DefaultTickLimit
	}
	// Usually none has ended: ask before opening a transaction.
	if work, err := s.loopWork(ctx); err != nil || !work.PauseEnded(s.now()) {
		return nil, err
	}
	var resumed []string
	for {
		n, err := s.resumeBatch(ctx, limit, &resumed)
		// A full batch may leave more; a short one means none are left.
		if err != nil || n < limit || ctx.Err() != nil {
			return resumed, err
		}
	}
}

func (s *Service) resumeBatch(ctx context.Context, limit int, resumed *[]string) (int, error) {
	var n int
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n = 0
		now := s.now()
		claimed, err := models.ClaimPauseEnded(ctx, tx, now, limit)
		if err != nil || len(claimed) == 0 {
			return err
		}
		n = len(claimed)
		rec := &recorder{w: immediateWriter(tx), ids: s.ids, now: now, cc: &CommandContext{Source: "scheduler", Reason: "timed pause ended"}}
		for i := range claimed {
			sch := &claimed[i]
			until := *sch.PausedUntil
			if err := s.resumeLocked(ctx, rec, sch, &until); err != nil {
				return err
			}
			sch.UpdatedAt = now
			if err := models.UpdateSchedule(ctx, tx, sch); err != nil {
				return err
			}
			*resumed = append(*resumed, sch.Namespace+"/"+sch.ScheduleID)
		}
		return nil
	})
	return n, err
}

// Pause-until presets of the console (CONTRACT §12).
const (
	PauseForHour      = "1h"
	PauseTillTomorrow = "tomorrow_0900"
)

// PauseUntilPreset is the end of a preset timed pause started at now:
// an hour from now, or 09:00 tomorrow on the schedule's wall clock (loc).
// ok is false for an unknown preset.
func PauseUntilPreset(preset string, now time.Time, loc *time.Location) (time.Time, bool) {
	switch preset {
	case PauseForHour:
		return now.Add(time.Hour), true
	case PauseTillTomorrow:
		local := now.In(loc)
		// time.Date normalises day+1 across month ends; 09:00 exists in
		// every real zone (transitions happen at night).
		return time.Date(local.Year(), local.Month(), local.Day()+1, 9, 0, 0, 0, loc).UTC(), true
	}
	return time.Time{}, false
}
