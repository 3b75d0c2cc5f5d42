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
