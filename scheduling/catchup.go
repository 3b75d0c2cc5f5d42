package scheduling

import (
	"context"
	"time"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/timespec"
)

// SkipMissed is the skip reason of occurrences the missed-fire policy
// dropped (CONTRACT §12): the scheduler was down, or they fell out of the
// catch-up window.
const SkipMissed = "missed_occurrences"

// MaxCatchupFires is how many occurrences one tick fires for one schedule
// at most; a longer backlog inside the window continues at the next tick,
// so one schedule catching up never holds a batch for long.
const MaxCatchupFires = 100

// maxMissedCount bounds how many dropped occurrences one tick enumerates
// to count them. A minutely schedule down for a year drops about 525,000
// (≈0.2 s of Next calls); beyond the bound the count is a lower bound and
// the schedule still moves on, so a pathological spec cannot stall a tick.
const maxMissedCount = 2_000_000

// catchup is what one tick does with a due schedule: the canonical
// occurrences to fire, in order, and the ones it drops.
type catchup struct {
	fire []time.Time
	// resumeAt, when set, is the next occurrence still inside the window
	// that this tick left for the next one (more than MaxCatchupFires).
	resumeAt                  *time.Time
	dropped                   int64
	firstDropped, lastDropped time.Time
}

// planCatchup applies the missed-fire policy to a schedule whose next
// canonical occurrence, nominal, is due at now. Without a window (Part I)
// the overdue occurrence fires once and every later one up to now is
// dropped; with one, occurrences older than now−window are dropped and the
// rest fire in order. In the common case — a fire on time — it costs one
// Next call.
func planCatchup(c *timespec.CompiledSpec, nominal, now time.Time, window *int) catchup {
	var p catchup
	drop := func(t time.Time) {
		if p.dropped == 0 {
			p.firstDropped = t
		}
		p.lastDropped = t
		p.dropped++
	}
	if window == nil {
		p.fire = []time.Time{nominal}
	}
	cutoff := now.Add(-time.Duration(ptrOr(window, 0)) * time.Second)
	t, ok := nominal, true
	if window == nil {
		t, ok = c.Next(nominal)
	}
	for ok && !t.After(now) {
		switch {
		case window == nil || t.Before(cutoff):
			if p.dropped >= maxMissedCount {
				return p
			}
			drop(t)
		case len(p.fire) < MaxCatchupFires:
			p.fire = append(p.fire, t)
		default:
			at := t
			p.resumeAt = &at
			return p
		}
		t, ok = c.Next(t)
	}
	return p
}

func ptrOr[T any](p *T, or T) T {
	if p == nil {
		return or
	}
	return *p
}

// recordMissed counts the occurrences a tick dropped: one event for all of
// them, never one per occurrence, so a long outage cannot flood the audit
// stream. The range lets the occurrence ledger and operators see what went.
func (s *Service) recordMissed(ctx context.Context, rec *recorder, sch *models.ClaimedSchedule, p catchup) error {
	if p.dropped == 0 {
		return nil
	}
	reason := SkipMissed
	sch.SkippedTriggerCount += p.dropped
	sch.LastSkipReason = &reason
	sch.LastSkippedAt = ptrTime(rec.now)
	err := rec.record(ctx, &sch.Schedule, &SkippedPayload{
		Reason: reason, SkippedTriggerCount: sch.SkippedTriggerCount, LastSkippedAt: Instant(rec.now),
		MissedCount: p.dropped, FirstMissedAt: InstantOf(&p.firstDropped), LastMissedAt: InstantOf(&p.lastDropped),
	}, "", "")
	if err != nil {
		return err
	}
	s.noteMissedOccurrences(rec, &sch.Schedule, p.dropped, p.firstDropped, p.lastDropped)
	return nil
}
