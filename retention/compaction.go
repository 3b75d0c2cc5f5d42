package retention

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// Audit compaction (SPEC §19, docs/CONTRACT.md "Audit compaction"): the
// lifecycle events of a schedule's stream are kept for its lifetime; its
// ScheduleTriggered and ScheduleTriggerSkipped events recorded more than
// KeepRuns ago are deleted, in bounded batches, except its newest fire.
// What went is recorded in the schedule's compaction row, so history
// pages name the compacted range and the ledger reads the occurrences it
// covered as compacted. Sequences never change: the stream's numbering
// keeps the gap.
//
// A pass walks the schedules in ULID order from where the last one
// stopped (compactCursor), a hundred at a time in one read that says which
// have anything old enough (models.CompactionCandidates), and visits those,
// one short transaction each; a visit compacts the oldest Batch of a
// schedule's events. A round — every schedule once — that left no backlog
// (no visit stopped at its Batch) is followed by a rest of compactRest:
// what becomes old in the meantime waits for the next round, so a
// stream is at most that much longer than KeepRuns, and an installation
// whose events are all younger than KeepRuns pays one read per hundred
// schedules every compactRest instead of walking them without end. The events are visited oldest first and a visit stops at the
// first that is too young, so everything at or below through_sequence
// that is not a lifecycle event is gone, even if recorded_at went
// backwards once (a clock step): such events are left, never skipped over.

// compactCursor is where the next compaction pass starts.
type compactCursor struct {
	mu        sync.Mutex
	after     string
	restUntil time.Time // no pass before it (a round just ended)
	backlog   bool      // this round met a schedule with more than Batch to do
}

// compactRest is how long compaction rests after a round that left no
// backlog.
const compactRest = 10 * time.Minute

// Compact runs one bounded compaction pass (Policy.KeepRuns, Batch,
// Budget) and says how many events it deleted. Their table is vacuumed
// with retention's tables (sweptTables).
func (s *Sweeper) Compact(ctx context.Context, r Policy) (models.DeletedRows, error) {
	d, err := s.compact(ctx, r)
	if verr := s.swept.vacuum(ctx, s.db, s.now(), d); err == nil {
		err = verr
	}
	return d, err
}

// compactSchedulesPerRead is how many schedules one read of the cursor
// lists.
const compactSchedulesPerRead = 100

func (s *Sweeper) compact(ctx context.Context, r Policy) (models.DeletedRows, error) {
	var total models.DeletedRows
	if r.KeepRuns <= 0 {
		return total, nil
	}
	if r.Batch <= 0 {
		r.Batch = 200
	}
	if r.Budget <= 0 {
		r.Budget = 200 * time.Millisecond
	}
	s.compaction.mu.Lock()
	defer s.compaction.mu.Unlock()
	started := s.now()
	if started.Before(s.compaction.restUntil) {
		return total, nil
	}
	before := started.Add(-r.KeepRuns)
	// One full round at most: a pass that has seen every schedule ends
	// even with budget left.
	wrapped := false
	for ctx.Err() == nil && s.now().Sub(started) < r.Budget {
		list, err := models.CompactionCandidates(ctx, s.db, s.compaction.after, before, compactSchedulesPerRead)
		if err != nil {
			return total, err
		}
		if len(list) == 0 { // the round is over
			s.compaction.after = ""
			if !s.compaction.backlog {
				s.compaction.restUntil = started.Add(compactRest)
				break
			}
			s.compaction.backlog = false
			if wrapped {
				break
			}
			wrapped = true
			continue
		}
		for _, c := range list {
			if ctx.Err() != nil || s.now().Sub(started) >= r.Budget {
				return total, nil
			}
			if c.Due {
				n, full, err := s.compactOne(ctx, c.ID, before, r.Batch)
				if err != nil {
					return total, err
				}
				total.ScheduleEvents += n
				s.compaction.backlog = s.compaction.backlog || full
			}
			s.compaction.after = c.ID
		}
	}
	return total, nil
}

// compactOne deletes up to limit of one schedule's fire and skip events
// recorded before `before`, oldest first, in one transaction; full says
// it deleted limit, so more may be waiting.
func (s *Sweeper) compactOne(ctx context.Context, scheduleULID string, before time.Time, limit int) (n int, full bool, err error) {
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		prev, err := models.CompactionOf(ctx, tx, scheduleULID)
		if err != nil {
			return err
		}
		c := models.Compaction{}
		if prev != nil {
			c = *prev
		}
		newest, err := models.NewestFireSequence(ctx, tx, scheduleULID)
		if err != nil {
			return err
		}
		below := int64(math.MaxInt64)
		if newest > 0 {
			below = newest // the newest fire is always kept
		}
		events, err := models.FireAndSkipEvents(ctx, tx, scheduleULID, c.ThroughSequence, below, limit)
		if err != nil {
			return err
		}
		var sequences []int64
		for _, e := range events {
			if !e.RecordedAt.Before(before) {
				break // too young, and so is what follows
			}
			sequences = append(sequences, e.Sequence)
			if c.FromSequence == 0 {
				c.FromSequence = e.Sequence
			}
			c.ThroughSequence = e.Sequence
			if e.EventType == models.FireEventType {
				c.Fires++
			} else {
				c.Skips++
			}
			// What the event stood for: its occurrence (fired ahead, it
			// may be after the recording), else when it was recorded.
			at := e.RecordedAt.UTC()
			if e.OccurrenceTime != nil && e.OccurrenceTime.After(at) {
				at = e.OccurrenceTime.UTC()
			}
			if at.After(c.ThroughAt) {
				c.ThroughAt = at
			}
		}
		if len(sequences) == 0 {
			return nil
		}
		n, err = models.CompactEvents(ctx, tx, scheduleULID, sequences, c)
		full = len(sequences) == limit
		return err
	})
	return n, full, err
}
