package scheduling_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// at13 is the first hourly instant after t0 (12:00).
var at13 = time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC)

func (f *fixture) runCount() int {
	f.t.Helper()
	n, err := f.db.NewSelect().Model((*models.Run)(nil)).Count(f.ctx)
	require.NoError(f.t, err)
	return int(n)
}

func (f *fixture) prepare(at time.Time, limit int) *scheduling.Prepared {
	f.t.Helper()
	p, err := f.svc.PrepareFires(f.ctx, at, limit, at)
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = p.Rollback() })
	return p
}

func TestPrepareFiresAheadAndCommitAtTheInstant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.Postgres(t))
	for _, id := range []string{"a", "b", "c"} {
		f.create(cronInput(id, "0 * * * *"))
	}
	at, due, ok, err := f.svc.NextFireInstant(f.ctx, t0, t0.Add(2*time.Hour))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, at13, at)
	require.Equal(t, 3, due)

	f.clock.Set(at13.Add(-2 * time.Second))
	p := f.prepare(at13, 2) // two batches
	require.Len(t, p.Rows, 3)
	for _, r := range p.Rows {
		require.Equal(t, scheduling.OutcomeTriggered, r.Outcome)
		require.Equal(t, at13, *r.OccurrenceTime)
		require.Equal(t, at13.Add(time.Hour), *r.NextFireAt)
	}

	// Written but invisible: other connections see the schedules as they were.
	require.Zero(t, f.runCount())
	require.Equal(t, at13, f.get("a").NextFireAt.UTC())
	require.Len(t, f.events("a"), 1, "only ScheduleCreated so far")

	var early *scheduling.CommitTooEarlyError
	require.ErrorAs(t, p.Commit(f.ctx), &early, "runs must not start before their instant")
	require.Zero(t, f.runCount())

	f.clock.Set(at13.Add(20 * time.Millisecond))
	require.NoError(t, p.Commit(f.ctx))
	require.Equal(t, 3, f.runCount())
	a := f.get("a")
	require.EqualValues(t, 1, a.FiresCount)
	require.Equal(t, at13.Add(time.Hour), a.NextFireAt.UTC())
	require.Equal(t, at13, a.LastFiredAt.UTC())
	run := f.run(*a.LatestRunID)
	require.Equal(t, at13, run.CreatedAt.UTC())
	require.Equal(t, at13, run.OccurrenceTime.UTC())
	require.Equal(t, []string{scheduling.EventScheduleCreated, scheduling.EventScheduleTriggered}, eventTypes(f.events("a")))
	require.Empty(t, f.tick(), "nothing is left for the regular tick")
}

// While prepared fires wait for their instant, a tick (this replica's or
// another's) at the instant skips the locked schedules: one fire each.
func TestPreparedSchedulesAreNotFiredTwice(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.Postgres(t))
	for _, id := range []string{"a", "b"} {
		f.create(cronInput(id, "0 * * * *"))
	}
	f.clock.Set(at13.Add(-time.Second))
	p := f.prepare(at13, 100)
	require.Len(t, p.Rows, 2)

	f.clock.Set(at13)
	require.Empty(t, f.tick(), "locked by the prepared transaction")
	again, err := f.svc.PrepareFires(f.ctx, at13, 100, at13)
	require.NoError(t, err)
	require.Empty(t, again.Rows, "a second preparer skips them too")
	require.NoError(t, again.Commit(f.ctx), "an empty preparation holds nothing")

	require.NoError(t, p.Commit(f.ctx))
	require.Empty(t, f.tick())
	require.Equal(t, 2, f.runCount())
}

// Only fires whose outcome cannot change before the instant are prepared;
// the others are decided by the tick at the instant.
func TestPrepareLeavesUnsettledFiresToTheTick(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.Postgres(t))
	for id, policy := range map[string]string{
		"busy-skip": scheduling.OverlapSkip, "busy-buffer": scheduling.OverlapBufferOne,
		"busy-allow": scheduling.OverlapAllowAll, "idle-skip": scheduling.OverlapSkip,
	} {
		in := cronInput(id, "0 * * * *")
		in.OverlapPolicy = policy
		f.create(in)
	}
	// The 13:00 fires leave pending runs; idle-skip's run finishes.
	f.clock.Set(at13)
	require.Len(t, f.tick(), 4)
	f.setRunStatus(*f.get("idle-skip").LatestRunID, models.RunCompleted)

	at14 := at13.Add(time.Hour)
	f.clock.Set(at14.Add(-time.Second))
	p := f.prepare(at14, 100)
	prepared := map[string]string{}
	for _, r := range p.Rows {
		prepared[r.ScheduleID] = r.Outcome
	}
	require.Equal(t, map[string]string{"busy-allow": "triggered", "idle-skip": "triggered"}, prepared)

	f.clock.Set(at14)
	require.NoError(t, p.Commit(f.ctx))
	ticked := map[string]string{}
	for _, r := range f.tick() {
		ticked[r.ScheduleID] = r.Outcome
	}
	require.Equal(t, map[string]string{"busy-skip": "skipped", "busy-buffer": "buffered"}, ticked)
}

// A commit that comes too late would store fire times that are not true:
// the prepared fires are rolled back and the tick fires them for real.
func TestPreparedFiresRollBackWhenCommittedLate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.Postgres(t))
	f.create(cronInput("a", "0 * * * *"))
	f.clock.Set(at13.Add(-time.Second))
	p := f.prepare(at13, 100)
	require.Len(t, p.Rows, 1)

	late := at13.Add(scheduling.MaxCommitDelay + time.Millisecond)
	f.clock.Set(late)
	var tooLate *scheduling.CommitTooLateError
	require.ErrorAs(t, p.Commit(f.ctx), &tooLate)
	require.Zero(t, f.runCount())

	rows := f.tick()
	require.Len(t, rows, 1)
	run := f.run(rows[0].RunID)
	require.Equal(t, late.Truncate(time.Microsecond), run.CreatedAt.UTC())
	require.Equal(t, at13, run.OccurrenceTime.UTC())
	require.EqualValues(t, 1, f.get("a").FiresCount)
}

func TestPrepareStartsNoBatchPastItsDeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.Postgres(t))
	f.create(cronInput("a", "0 * * * *"))
	f.clock.Set(at13.Add(-time.Second))
	p, err := f.svc.PrepareFires(f.ctx, at13, 100, at13.Add(-2*time.Second))
	require.NoError(t, err)
	require.Empty(t, p.Rows)
	require.NoError(t, p.Commit(f.ctx))
	f.clock.Set(at13)
	require.Len(t, f.tick(), 1, "left to the tick, and not locked")
}

func TestPrepareNeedsPostgres(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLite(t))
	require.False(t, f.svc.CanPrepare())
	_, err := f.svc.PrepareFires(f.ctx, at13, 100, at13)
	require.ErrorIs(t, err, scheduling.ErrPrepareUnsupported)
}

// The loop prepares the fires of a coming instant, holds them, and commits
// them when its clock reaches the instant.
func TestLoopFiresAheadAtTheInstant(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	f := newFixture(t, db)
	for _, id := range []string{"a", "b", "c"} {
		f.create(cronInput(id, "0 * * * *"))
	}
	f.clock.Set(at13.Add(-time.Minute))
	committed := make(chan error, 4)
	loop := &scheduling.Loop{Service: f.svc, Period: 5 * time.Millisecond, Ahead: 10 * time.Second,
		OnPrepared: func(p *scheduling.Prepared, err error) {
			if len(p.Rows) > 0 {
				committed <- err
			}
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	loop.Start(ctx)
	defer loop.Stop()

	// A minute ahead is beyond Ahead: the schedules stay free.
	f.clock.WaitTimers(loopTimers(true)) // the preparer among them
	require.False(t, locked(t, f, "a"))
	// A second ahead, three fires need well under a second: prepared.
	f.clock.Set(at13.Add(-100 * time.Millisecond))
	for !locked(t, f, "a") {
		require.NoError(t, ctx.Err(), "the loop never prepared the 13:00 fires")
	}
	require.Zero(t, f.runCount(), "prepared, not yet visible")

	f.clock.WaitTimers(loopTimers(true)) // the preparer holds the fires until the clock reaches 13:00
	f.clock.Set(at13)
	select {
	case err := <-committed:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the prepared fires were never committed")
	}
	require.Equal(t, 3, f.runCount())
	for _, id := range []string{"a", "b", "c"} {
		s := f.get(id)
		require.EqualValues(t, 1, s.FiresCount, id)
		require.Equal(t, at13, s.LastFiredAt.UTC(), id)
	}
}

// locked reports whether a transaction still in progress has locked or
// changed the schedule's row: the xmax of the row version this query sees
// is a transaction (or subtransaction) that has not ended. A probe that
// tried the lock itself, even briefly, could make the loop skip the row.
func locked(t *testing.T, f *fixture, scheduleID string) bool {
	t.Helper()
	var status string
	err := f.db.NewRaw(`SELECT CASE WHEN s.xmax::text = '0' THEN 'none' ELSE
			coalesce(pg_xact_status(((pg_current_xact_id()::text::bigint >> 32 << 32) + s.xmax::text::bigint)::text::xid8), 'none') END
		FROM workflow_schedules AS s WHERE s.schedule_id = ?`, scheduleID).Scan(f.ctx, &status)
	require.NoError(t, err)
	return status == "in progress"
}
