package scheduling_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

func (f *fixture) ledger(id string, q scheduling.LedgerQuery) *scheduling.LedgerPage {
	f.t.Helper()
	page, err := f.svc.Ledger(f.ctx, "default", id, q)
	require.NoError(f.t, err)
	return page
}

// fates maps occurrence times to fates.
func fates(p *scheduling.LedgerPage) map[time.Time]scheduling.Occurrence {
	out := map[time.Time]scheduling.Occurrence{}
	for _, o := range p.Occurrences {
		out[o.Time] = o
	}
	return out
}

func (f *fixture) latestRun(id string) string {
	f.t.Helper()
	return *f.get(id).LatestRunID
}

// A scripted history, then the ledger must tell what really happened to
// each occurrence: created mid-window, a fire on time, an overlap skip,
// the scheduler down for two hours, a day's timed pause that the loop
// ends, a backfill of one missed occurrence, a buffered fire, the future,
// and a deleted schedule.
func TestLedgerTellsWhatHappenedToEachOccurrence(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		h := time.Hour
		f.create(cronInput("hourly", "0 * * * *")) // at 12:00; overlap skip
		f.create(cronInput("gone", "0 * * * *"))

		f.clock.Set(at(h))
		f.tick() // 13:00 hourly and gone start
		f.setRunStatus(f.latestRun("hourly"), models.RunRunning)
		f.setRunStatus(f.latestRun("gone"), models.RunCompleted)
		_, err := f.svc.Delete(f.ctx, "default", "gone", nil)
		require.NoError(t, err)
		f.clock.Set(at(2 * h))
		f.tick() // 14:00 skipped: 13:00 still runs
		f.setRunStatus(f.latestRun("hourly"), models.RunCompleted)
		f.clock.Set(at(3 * h))
		f.tick() // 15:00 starts
		f.setRunStatus(f.latestRun("hourly"), models.RunCompleted)
		f.clock.Set(at(6*h + 10*time.Minute))
		f.tick() // down 15:00–18:10: 16:00 fires late, 17:00 and 18:00 are missed
		f.setRunStatus(f.latestRun("hourly"), models.RunCompleted)

		f.clock.Set(at(6*h + 30*time.Minute))
		until := at(30*h + 30*time.Minute) // a day later, 18:30
		_, err = f.svc.Pause(f.ctx, "default", "hourly", scheduling.PauseInput{Reason: "deploy", Until: &until}, nil)
		require.NoError(t, err)
		_, err = f.svc.Backfill(f.ctx, "default", "hourly", scheduling.BackfillInput{From: at(5 * h), To: at(6 * h)})
		require.NoError(t, err) // 17:00 backfilled
		f.setRunStatus(f.latestRun("hourly"), models.RunCompleted)
		f.clock.Set(until)
		_, err = (&scheduling.Loop{Service: f.svc}).RunOnce(f.ctx) // the pause ends
		require.NoError(t, err)

		// Day 2: 19:00 starts and keeps running, 20:00 is buffered behind it.
		_, err = f.svc.Update(f.ctx, "default", "hourly", scheduling.UpdateInput{OverlapPolicy: ptr(scheduling.OverlapBufferOne)}, nil)
		require.NoError(t, err)
		f.clock.Set(at(31 * h))
		f.tick()
		f.clock.Set(at(32 * h))
		f.tick()
		f.clock.Set(at(32*h + 15*time.Minute))

		page := f.ledger("hourly", scheduling.LedgerQuery{From: ptr(at(-2 * h)), To: ptr(at(35 * h))})
		require.False(t, page.HasMore)
		require.Len(t, page.Occurrences, 37, "one per hour from 10:00 to 22:00 the next day")
		got := fates(page)
		want := map[time.Duration]string{
			-2 * h: scheduling.FateBeforeCreated, 0: scheduling.FateBeforeCreated,
			h: scheduling.FateStarted, 2 * h: scheduling.FateSkipped, 3 * h: scheduling.FateStarted, 4 * h: scheduling.FateStarted,
			5 * h: scheduling.FateStarted, 6 * h: scheduling.FateMissed,
			7 * h: scheduling.FatePaused, 20 * h: scheduling.FatePaused, 30 * h: scheduling.FatePaused,
			31 * h: scheduling.FateStarted, 32 * h: scheduling.FateBuffered, 33 * h: scheduling.FateDue, 34 * h: scheduling.FateDue,
		}
		for d, fate := range want {
			require.Equal(t, fate, got[at(d)].Fate, "occurrence %s", at(d).Format(time.RFC3339))
		}
		require.Equal(t, scheduling.SkipOverlap, got[at(2*h)].Reason)
		require.Equal(t, "schedule:hourly:"+itoa(at(2*h).Unix()), got[at(2*h)].InstanceID)
		require.Equal(t, "backfilled", got[at(5*h)].Trigger, "the missed 17:00 was backfilled")
		require.Equal(t, "schedule:hourly:backfill:"+itoa(at(5*h).Unix()), got[at(5*h)].InstanceID)
		require.Equal(t, "scheduled", got[at(4*h)].Trigger)
		require.Equal(t, 2*h+10*time.Minute, *got[at(4*h)].FireLag, "16:00 fired at 18:10")
		require.Equal(t, models.RunCompleted, got[at(h)].RunStatus)
		require.Equal(t, f.latestRun("hourly"), got[at(31*h)].RunID)

		// Deleted schedules keep their ledger.
		gone := fates(f.ledger("gone", scheduling.LedgerQuery{From: ptr(at(0)), To: ptr(at(4 * h))}))
		require.Equal(t, scheduling.FateBeforeCreated, gone[at(0)].Fate)
		require.Equal(t, scheduling.FateStarted, gone[at(h)].Fate)
		require.Equal(t, scheduling.FateAfterDeleted, gone[at(2*h)].Fate)
		require.Equal(t, scheduling.FateAfterDeleted, gone[at(3*h)].Fate)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Occurrences that DST moved carry the wall time they stand for: 02:30 in
// New York on 2026-03-08 does not exist and fires at 03:30 EDT (shifted an
// hour); an every-hour expression fires in both passes of 01:30 on
// 2026-11-01, the second marked repeated.
func TestLedgerShowsDSTShiftsAndRepeats(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.clock.Set(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
		gap := cronInput("gap", "30 2 * * *")
		gap.Spec.Timezone = "America/New_York"
		f.create(gap)
		repeat := cronInput("repeat", "30 * * * *")
		repeat.Spec.Timezone = "America/New_York"
		f.create(repeat)

		page := f.ledger("gap", scheduling.LedgerQuery{From: ptr(time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)), To: ptr(time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC))})
		require.Len(t, page.Occurrences, 3)
		shifted := page.Occurrences[1]
		require.Equal(t, time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC), shifted.Time, "03:30 EDT")
		require.Equal(t, "2026-03-08T02:30:00", shifted.Wall.Format("2006-01-02T15:04:05"))
		require.Equal(t, time.Hour, shifted.Shift)
		require.Equal(t, scheduling.FateDue, shifted.Fate)
		require.Zero(t, page.Occurrences[0].Shift)
		require.Equal(t, "2026-03-07T02:30:00", page.Occurrences[0].Wall.Format("2006-01-02T15:04:05"))

		page = f.ledger("repeat", scheduling.LedgerQuery{From: ptr(time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC)), To: ptr(time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC))})
		require.Len(t, page.Occurrences, 2)
		for i, o := range page.Occurrences {
			require.Equal(t, "2026-11-01T01:30:00", o.Wall.Format("2006-01-02T15:04:05"))
			require.Equal(t, i == 1, o.Repeated, "occurrence %d", i)
			require.Zero(t, o.Shift)
		}
	})
}

// Pages follow each other by occurrence time, at most 1,000 each.
func TestLedgerPagesByOccurrenceTime(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("minutely", "* * * * *"))
		q := scheduling.LedgerQuery{From: ptr(t0.Add(-24 * time.Hour)), To: ptr(t0.Add(-24*time.Hour + 2500*time.Minute))}
		var all []scheduling.Occurrence
		pages := 0
		for {
			page := f.ledger("minutely", q)
			pages++
			require.LessOrEqual(t, len(page.Occurrences), scheduling.MaxLedgerPage)
			all = append(all, page.Occurrences...)
			if !page.HasMore {
				require.Empty(t, page.NextCursor)
				break
			}
			q.Cursor = page.NextCursor
		}
		require.Equal(t, 3, pages)
		require.Len(t, all, 2500)
		for i, o := range all {
			require.Equal(t, q.From.Add(time.Duration(i)*time.Minute), o.Time)
		}
		// Before 12:00 it did not exist; after, no fire yet; 12:00+ is due.
		require.Equal(t, scheduling.FateBeforeCreated, all[0].Fate)
		require.Equal(t, scheduling.FateBeforeCreated, all[24*60].Fate, "12:00 itself: created at that instant")
		require.Equal(t, scheduling.FateDue, all[24*60+1].Fate)

		small := f.ledger("minutely", scheduling.LedgerQuery{From: q.From, To: q.To, Limit: 10})
		require.Len(t, small.Occurrences, 10)
		require.True(t, small.HasMore)

		_, err := f.svc.Ledger(f.ctx, "default", "minutely", scheduling.LedgerQuery{Cursor: "x"})
		var v *scheduling.ValidationError
		require.ErrorAs(t, err, &v)
		require.Equal(t, "invalid_cursor", v.Code)
		_, err = f.svc.Ledger(f.ctx, "default", "minutely", scheduling.LedgerQuery{From: ptr(t0), To: ptr(t0)})
		require.ErrorAs(t, err, &v)
		require.Equal(t, "invalid_time_range", v.Code)
		_, err = f.svc.Ledger(f.ctx, "default", "nope", scheduling.LedgerQuery{})
		var nf *scheduling.NotFoundError
		require.ErrorAs(t, err, &nf)
	})
}
