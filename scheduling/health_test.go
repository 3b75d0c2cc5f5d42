package scheduling_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// A run's end is recorded as a pending row and folded into the health row
// by the loop; readers see the same health before and after the fold.
func TestHealthFoldKeepsWhatReadersSee(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("steady", "0 0 1 1 *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		loop := &scheduling.Loop{Service: f.svc}
		var last string
		finish := func(fail bool) {
			t.Helper()
			f.clock.Advance(time.Minute)
			res, err := f.svc.Trigger(f.ctx, "default", "steady", "", nil)
			require.NoError(t, err)
			require.Len(t, f.poll(1, 30), 1)
			f.clock.Advance(1500 * time.Millisecond)
			if fail {
				_, err = f.svc.FailRun(f.ctx, "default", res.RunID, w1, scheduling.Failure{Message: "no", Type: "io", NonRetryable: true})
			} else {
				_, err = f.svc.CompleteRun(f.ctx, "default", res.RunID, w1, nil)
			}
			require.NoError(t, err)
			last = res.RunID
		}
		pending := func() int {
			n, err := db.NewSelect().Model((*models.HealthPending)(nil)).Count(f.ctx)
			require.NoError(t, err)
			return int(n)
		}

		for i := range 8 {
			finish(i%4 == 3)
		}
		_, err := loop.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Zero(t, pending(), "folded")
		for i := range 5 {
			finish(i == 4)
		}
		require.Equal(t, 5, pending())
		before := f.get("steady").Health
		require.Equal(t, last, *before.LastRunID)
		require.Equal(t, models.RunFailed, *before.LastRunStatus)
		require.Equal(t, "no", *before.LastRunError)
		require.Len(t, before.RecentRuns, models.RecentRunsKept, "5 pending and 5 of the 8 folded")
		require.Equal(t, last, before.RecentRuns[0].RunID, "newest first")
		require.EqualValues(t, 1500, *before.RecentRuns[0].DurationMs)
		require.EqualValues(t, 3, before.FailuresCount)
		require.EqualValues(t, 1, before.ConsecutiveFailures)

		_, err = loop.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Zero(t, pending())
		after := f.get("steady").Health
		after.UpdatedAt = before.UpdatedAt
		require.Equal(t, before, after)
	})
}

// Completions of a healthy schedule do not wait for each other's health
// write; a completion that resets failures, and a failure, do.
func TestHealthCompletionsDoNotWaitForEachOther(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	f := newFixture(t, db)
	sch := f.create(cronInput("busy", "0 0 1 1 *"))
	ctx := context.Background()
	finished := func(id, status string) models.HealthDelta {
		at := t0
		d := models.HealthDelta{ScheduleULID: sch.ID, Finished: []*models.Run{{ID: id, Status: status, FinishedAt: &at}}}
		if status == models.RunCompleted {
			d.Reset = true
		} else {
			d.Failures, d.ConsecutiveAdd = 1, 1
		}
		return d
	}
	// end writes the deltas in a transaction that gives up on a row lock
	// it would have to wait for, and leaves it open.
	end := func(d models.HealthDelta) (bun.Tx, error) {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{})
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "SET LOCAL lock_timeout = '200ms'")
		require.NoError(t, err)
		b := models.NewBatch(tx)
		require.NoError(t, models.AddHealth(b, tx, []models.HealthDelta{d}, t0))
		return tx, b.Exec(ctx, tx)
	}
	commit := func(tx bun.Tx) { require.NoError(t, tx.Commit()) }

	first, err := end(finished("r1", models.RunFailed))
	require.NoError(t, err)
	commit(first)
	reset, err := end(finished("r2", models.RunCompleted))
	require.NoError(t, err, "the first completion after a failure resets the counters")
	waiting, err := end(finished("r3", models.RunCompleted))
	require.ErrorContains(t, err, "lock timeout", "…and holds the row meanwhile")
	require.NoError(t, waiting.Rollback())
	commit(reset)

	one, err := end(finished("r4", models.RunCompleted))
	require.NoError(t, err)
	two, err := end(finished("r5", models.RunCompleted))
	require.NoError(t, err, "nothing to reset: the second completion does not wait for the first")
	failure, err := end(finished("r6", models.RunFailed))
	require.NoError(t, err, "a failure does not wait for completions that wrote nothing")
	require.NoError(t, failure.Rollback())
	commit(one)
	commit(two)

	health, err := models.GetHealth(ctx, db, []string{sch.ID})
	require.NoError(t, err)
	require.EqualValues(t, 0, health[sch.ID].ConsecutiveFailures)
	require.EqualValues(t, 1, health[sch.ID].FailuresCount)
}

// The fold never waits for a health row a run end holds. A transaction
// that ends the runs of several schedules (the deadline sweep, an
// operator's bulk action) writes their health rows in schedule order, the
// first failure of a schedule inserting its row; the fold creates the rows
// of schedules that have none and then locks the rows it folds. Had the
// fold waited for the lower schedule's row the run end holds while holding
// the new row of a higher one that the run end inserts next, the two
// would deadlock; it skips held rows and folds them on a later pass.
func TestHealthFoldSkipsRowsRunEndsHold(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, "postgres")
	f := newFixture(t, db)
	for _, id := range []string{"a", "b"} {
		f.create(cronInput(id, "0 0 1 1 *"))
	}
	lo, hi := f.get("a").ID, f.get("b").ID
	if hi < lo {
		lo, hi = hi, lo
	}
	// lo has failed (its health row exists); hi's runs completed, so it
	// has ended runs pending and no health row yet.
	id := map[string]string{f.get("a").ID: "a", f.get("b").ID: "b"}
	f.runOf("default", id[lo], false)
	f.runOf("default", id[hi], true)
	var rows int
	require.NoError(t, db.NewRaw("SELECT count(*) FROM workflow_schedule_health WHERE schedule_ulid = ?", hi).Scan(f.ctx, &rows))
	require.Zero(t, rows, "no health row for the schedule whose runs completed")

	held, err := db.BeginTx(f.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = held.Rollback() }()
	var pid int
	require.NoError(t, held.NewRaw("SELECT pg_backend_pid()").Scan(f.ctx, &pid))
	_, err = held.ExecContext(f.ctx, "UPDATE workflow_schedule_health SET failures_count = failures_count + 1 WHERE schedule_ulid = ?", lo)
	require.NoError(t, err)

	type result struct {
		n   int
		err error
	}
	folded := make(chan result, 1)
	go func() {
		n, err := f.svc.FoldHealth(f.ctx, 100)
		folded <- result{n, err}
	}()
	for done := false; !done; {
		select {
		case r := <-folded:
			require.NoError(t, r.err)
			require.Equal(t, 1, r.n, "the schedule whose row is free is folded")
			done = true
		default:
			require.False(t, waitsFor(t, db, pid), "the fold waits for a health row a run end holds")
			_, err := db.ExecContext(f.ctx, "SELECT pg_sleep(0.005)")
			require.NoError(t, err)
		}
	}
	// The run end goes on to hi's row, which the fold made.
	_, err = held.ExecContext(f.ctx, `INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, failures_count, updated_at)
		VALUES (?, 1, 1, now()) ON CONFLICT (schedule_ulid) DO UPDATE SET failures_count = workflow_schedule_health.failures_count + 1`, hi)
	require.NoError(t, err)
	require.NoError(t, held.Commit())

	n, err := f.svc.FoldHealth(f.ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the skipped schedule is folded on the next pass")
	var pending int
	require.NoError(t, db.NewRaw("SELECT count(*) FROM workflow_schedule_health_pending WHERE schedule_ulid IN (?, ?)", lo, hi).Scan(f.ctx, &pending))
	require.Zero(t, pending)
}
