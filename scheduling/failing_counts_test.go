package scheduling_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/retention"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// runOf triggers a manual run of the schedule, claims it and ends it:
// failed, or completed when ok.
func (f *fixture) runOf(ns, id string, ok bool) {
	f.t.Helper()
	res, err := f.svc.Trigger(f.ctx, ns, id, "", nil)
	require.NoError(f.t, err)
	require.Equal(f.t, scheduling.OutcomeTriggered, res.Outcome, "%s/%s triggered", ns, id)
	f.endRun(ns, res.RunID, ok)
}

// endRun claims the namespace's only available run, which must be runID,
// and ends it.
func (f *fixture) endRun(ns, runID string, ok bool) {
	f.t.Helper()
	runs, err := f.svc.Poll(f.ctx, scheduling.PollRequest{Namespace: ns, Limit: 10, LeaseSeconds: 30, WorkerID: "w1"})
	require.NoError(f.t, err)
	require.Len(f.t, runs, 1, "%s: one run available", ns)
	require.Equal(f.t, runID, runs[0].ID)
	if ok {
		_, err = f.svc.CompleteRun(f.ctx, ns, runID, w1, nil)
	} else {
		_, err = f.svc.FailRun(f.ctx, ns, runID, w1, scheduling.Failure{Message: "boom"})
	}
	require.NoError(f.t, err)
}

// countVersions are the row versions of the counts (PostgreSQL's xmin):
// a write that leaves them alone must not touch them.
func countVersions(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	if database.Of(f.db).Name() == database.PostgreSQL {
		require.NoError(t, f.db.NewRaw("SELECT namespace || '/' || part || '@' || xmin FROM namespace_schedule_counts ORDER BY 1").Scan(f.ctx, &out))
	}
	return out
}

// The failing count (migration 0032) equals a scan of the live schedules
// whose health says consecutive failures after every kind of write that
// can change it: a schedule's first failure (its health row inserted by
// the run's end), further failures, a completion resetting them, the
// loop's fold, pause, pause on failure, resume, delete, a run failing
// after its schedule was deleted, namespace moves, raw status changes
// both ways, health rows deleted, retention's purge and hard deletes.
func TestFailingCountsFollowEveryWrite(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		check := func(step string, failing, otherFailing int64) {
			t.Helper()
			c := requireCountsScanned(t, f, step, "default", "other")
			require.Equal(t, failing, c.Failing, "%s: default's failing", step)
			other, err := models.CountSchedules(f.ctx, f.db, "other")
			require.NoError(t, err)
			require.Equal(t, otherFailing, other.Failing, "%s: other's failing", step)
		}
		for _, id := range []string{"a", "b", "c", "d"} {
			f.create(cronInput(id, "0 0 1 1 *"))
		}
		x := cronInput("x", "0 0 1 1 *")
		x.Namespace = "other"
		f.create(x)
		check("created", 0, 0)

		f.runOf("default", "a", false)
		check("a's first failure inserts its health row", 1, 0)
		f.runOf("other", "x", false)
		check("x failed in other", 1, 1)
		before := countVersions(t, f)
		f.runOf("default", "a", false)
		_, err := f.svc.FoldHealth(f.ctx, 100)
		require.NoError(t, err)
		require.Equal(t, before, countVersions(t, f), "a further failure and a fold write no count")
		check("a failed again, folded", 1, 1)

		f.runOf("default", "b", true)
		_, err = f.svc.FoldHealth(f.ctx, 100)
		require.NoError(t, err)
		check("b completed (its health row made by the fold)", 1, 1)
		f.runOf("default", "b", false)
		check("b failed: its row crosses 0", 2, 1)
		f.runOf("default", "a", true)
		check("a completed: reset", 1, 1)
		f.runOf("default", "a", false)
		check("a failing again", 2, 1)

		_, err = f.svc.Pause(f.ctx, "default", "a", scheduling.PauseInput{}, nil)
		require.NoError(t, err)
		check("a paused: still live and failing", 2, 1)
		_, err = f.svc.Resume(f.ctx, "default", "a", nil)
		require.NoError(t, err)
		check("a resumed", 2, 1)
		_, err = f.svc.Update(f.ctx, "default", "a", scheduling.UpdateInput{PauseAfterFailures: scheduling.Nullable[int]{Set: true, Value: ptr(1)}}, nil)
		require.NoError(t, err)
		paused, err := f.svc.PauseFailing(f.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"default/a"}, paused)
		check("a paused on failure", 2, 1)

		_, err = f.svc.Delete(f.ctx, "default", "a", nil)
		require.NoError(t, err)
		check("a deleted", 1, 1)

		// A run that fails after its schedule was deleted (c has no
		// health row: the delete makes an empty one).
		res, err := f.svc.Trigger(f.ctx, "default", "c", "", nil)
		require.NoError(t, err)
		runs, err := f.svc.Poll(f.ctx, scheduling.PollRequest{Namespace: "default", Limit: 10, LeaseSeconds: 30, WorkerID: "w1"})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		_, err = f.svc.Delete(f.ctx, "default", "c", nil)
		require.NoError(t, err)
		_, err = f.svc.FailRun(f.ctx, "default", res.RunID, w1, scheduling.Failure{Message: "late"})
		require.NoError(t, err)
		check("c's run failed after c was deleted", 1, 1)

		// Moves and raw status changes (nothing in Tideline moves a
		// namespace or undeletes; the triggers keep both right if
		// something does).
		move := func(where, set string) {
			t.Helper()
			_, err := f.db.ExecContext(f.ctx, "UPDATE workflow_schedules SET "+set+" WHERE "+where)
			require.NoError(t, err)
		}
		move("schedule_id = 'b'", "namespace = 'other'")
		check("failing b moved to other", 0, 2)
		move("schedule_id IN ('b', 'x')", "namespace = 'default'")
		check("b and x moved to default", 2, 0)
		move("schedule_id = 'x'", "namespace = 'other'")
		move("namespace = 'default' AND schedule_id IN ('a', 'b', 'c', 'd')", "status = CASE WHEN status = 'deleted' THEN 'active' ELSE 'deleted' END")
		check("a and c undeleted, b and d deleted, in one statement", 2, 1)
		move("namespace = 'default' AND schedule_id IN ('a', 'b', 'c', 'd')", "status = CASE WHEN status = 'deleted' THEN 'active' ELSE 'deleted' END")
		check("and back", 1, 1)

		// A health row deleted while its schedule is live, then a first
		// failure again.
		_, err = f.db.ExecContext(f.ctx, "DELETE FROM workflow_schedule_health WHERE schedule_ulid = (SELECT id FROM workflow_schedules WHERE schedule_id = 'b')")
		require.NoError(t, err)
		check("b's health row deleted", 0, 1)
		f.runOf("default", "b", false)
		check("b failing again", 1, 1)

		// A fire and an update of other fields write no count.
		f.runOf("default", "d", false)
		check("d failing", 2, 1)
		before = countVersions(t, f)
		_, err = f.svc.Update(f.ctx, "default", "d", scheduling.UpdateInput{Note: ptr("edited")}, nil)
		require.NoError(t, err)
		f.clock.Advance(366 * 24 * time.Hour)
		require.NotEmpty(t, f.tick())
		require.Equal(t, before, countVersions(t, f), "counts written by an update of other fields or a fire")
		check("fired", 2, 1)

		// Retention purges the deleted (a and c, their health rows first:
		// a's failing, counted nowhere).
		deleted, err := retention.New(f.db, f.clock.Now).Retain(f.ctx, retention.Policy{PurgeDeletedAfter: 48 * time.Hour})
		require.NoError(t, err)
		require.EqualValues(t, 2, deleted.Schedules, "a and c purged")
		check("purged", 2, 1)

		// A health row inserted failing (as the upgrade's seeds), then the
		// live schedule hard-deleted with what points at it.
		y := cronInput("y", "0 0 1 1 *")
		y.Namespace = "other"
		f.create(y)
		_, err = f.db.ExecContext(f.ctx, `INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, updated_at)
			SELECT id, 3, updated_at FROM workflow_schedules WHERE schedule_id = 'y'`)
		require.NoError(t, err)
		check("y inserted failing", 2, 2)
		require.NoError(t, f.db.RunInTx(f.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for _, q := range []string{"workflow_schedule_health", "workflow_schedule_recent_actions", "workflow_schedule_due"} {
				if _, err := tx.ExecContext(ctx, "DELETE FROM "+q+" WHERE schedule_ulid = (SELECT id FROM workflow_schedules WHERE schedule_id = 'y')"); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM workflow_schedule_history_events WHERE workflow_schedule_id = (SELECT id FROM workflow_schedules WHERE schedule_id = 'y')"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "DELETE FROM workflow_schedules WHERE schedule_id = 'y'")
			return err
		}))
		check("y hard-deleted", 2, 1)
	})
}

// TestFailingCountsUnderConcurrentWrites: writers fail and complete runs
// of a shared set of schedules of two namespaces while others pause,
// resume, delete and re-create them, fold their health and pause them on
// failure, all at once; the kept failing counts still equal a scan. A
// run's end reads its schedule without a lock while a delete locks its
// health row (migration 0032): this is the test of that order.
func TestFailingCountsUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		namespaces := []string{"default", "other"}
		const writers, ops, ids = 8, 60, 6
		for _, ns := range namespaces {
			for i := range ids {
				in := cronInput(fmt.Sprintf("s%d", i), "0 0 1 1 *")
				in.Namespace, in.OverlapPolicy = ns, scheduling.OverlapAllowAll
				f.create(in)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		var failed, completed, deletes int64
		var mu sync.Mutex
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 32))
				for i := range ops {
					ns := namespaces[rng.IntN(2)]
					id := fmt.Sprintf("s%d", rng.IntN(ids))
					var err error
					switch op := rng.IntN(10); op {
					case 0, 1, 2, 3, 4:
						// A worker: start a run and end what it claims.
						if _, err = f.svc.Trigger(f.ctx, ns, id, "", nil); err != nil {
							break
						}
						var runs []models.Run
						runs, err = f.svc.Poll(f.ctx, scheduling.PollRequest{Namespace: ns, Limit: 2, LeaseSeconds: 30, WorkerID: fmt.Sprintf("w%d", w)})
						holder := scheduling.LeaseHolder{WorkerID: fmt.Sprintf("w%d", w)}
						for _, r := range runs {
							if err != nil {
								break
							}
							if rng.IntN(3) == 0 {
								_, err = f.svc.CompleteRun(f.ctx, ns, r.ID, holder, nil)
								mu.Lock()
								completed++
								mu.Unlock()
							} else {
								_, err = f.svc.FailRun(f.ctx, ns, r.ID, holder, scheduling.Failure{Message: "boom"})
								mu.Lock()
								failed++
								mu.Unlock()
							}
						}
					case 5:
						_, err = f.svc.Pause(f.ctx, ns, id, scheduling.PauseInput{}, nil)
					case 6:
						_, err = f.svc.Resume(f.ctx, ns, id, nil)
					case 7:
						_, err = f.svc.Delete(f.ctx, ns, id, nil)
						mu.Lock()
						deletes++
						mu.Unlock()
					case 8:
						// Re-created, or undeleted by hand when its deleted
						// row keeps the ID (a status change the triggers
						// count like any other).
						in := cronInput(fmt.Sprintf("s%d", rng.IntN(ids)), "0 0 1 1 *")
						in.Namespace, in.OverlapPolicy = ns, scheduling.OverlapAllowAll
						_, err = f.svc.Create(f.ctx, in, nil)
						var conflict *scheduling.ConflictError
						if errors.As(err, &conflict) {
							_, err = f.db.ExecContext(f.ctx, "UPDATE workflow_schedules SET status = 'active', deleted_at = NULL WHERE namespace = ? AND schedule_id = ? AND status = 'deleted'", ns, in.ScheduleID)
						}
					case 9:
						if rng.IntN(2) == 0 {
							_, err = f.svc.FoldHealth(f.ctx, 100)
						} else {
							_, err = f.svc.PauseFailing(f.ctx, 100)
						}
					}
					var conflict *scheduling.ConflictError
					if err != nil && !errors.As(err, &conflict) && !errors.Is(err, scheduling.ErrNotFound) {
						errs <- fmt.Errorf("writer %d, op %d: %w", w, i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		t.Logf("%d runs failed, %d completed, %d deletes", failed, completed, deletes)
		require.NotZero(t, failed)
		c := requireCountsScanned(t, f, "after the writers", namespaces...)
		other, err := schedtest.ScanCounts(f.ctx, f.db, "other")
		require.NoError(t, err)
		require.NotZero(t, c.Failing+other.Failing, "the writers left failing schedules to count")
	})
}

// TestFailingCountsSerializeTheTwoSides plays, on PostgreSQL, the four
// interleavings of a run's end and its schedule's delete that the
// concurrent test only meets by chance: the run's end holds its health
// row uncommitted (a first failure inserting it, a failure crossing 0 on
// an existing one) while the schedule is deleted, or the delete holds the
// schedule while either is recorded; the second must wait for the first. Each side's trigger
// reads the other's row; without the delete's lock on the health row (or
// its empty row made first) one of them counts against a state the other
// is changing, and the count ends one off the scan.
func TestFailingCountsSerializeTheTwoSides(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, "postgres")
	f := newFixture(t, db)
	ulid := func(id string) string {
		t.Helper()
		var out string
		require.NoError(t, db.NewRaw("SELECT id FROM workflow_schedules WHERE schedule_id = ?", id).Scan(f.ctx, &out))
		return out
	}
	// blockedBy waits until a backend waits for the transaction of pid
	// (the other side took its turn and queued behind it).
	blockedBy := func(pid int) {
		t.Helper()
		for range 2000 {
			if waitsFor(t, db, pid) {
				return
			}
			_, err := db.ExecContext(f.ctx, "SELECT pg_sleep(0.005)")
			require.NoError(t, err)
		}
		t.Fatal("nothing waited for the held transaction")
	}
	upsertFailure := `INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, failures_count, updated_at) VALUES (?, 1, 1, now())
		ON CONFLICT (schedule_ulid) DO UPDATE SET consecutive_failures = workflow_schedule_health.consecutive_failures + 1`
	cases := []struct {
		name string
		// health makes the schedule's health row exist (cf 0) first.
		health bool
		// deleteFirst: the delete holds its transaction and the failure
		// waits; else the failure holds and the delete waits.
		deleteFirst bool
	}{
		{"first failure inserting the row, then the delete", false, false},
		{"failure crossing 0 on the row, then the delete", true, false},
		{"the delete, then the first failure", false, true},
		{"the delete, then a failure crossing 0 on the row", true, true},
	}
	for i, c := range cases {
		id := fmt.Sprintf("race%d", i)
		f.create(cronInput(id, "0 0 1 1 *"))
		if c.health {
			_, err := db.ExecContext(f.ctx, "INSERT INTO workflow_schedule_health (schedule_ulid, updated_at) VALUES (?, now())", ulid(id))
			require.NoError(t, err)
		}
		held, err := db.BeginTx(f.ctx, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = held.Rollback() }) // a failed case lets the other side go
		var pid int
		require.NoError(t, held.NewRaw("SELECT pg_backend_pid()").Scan(f.ctx, &pid))
		second := make(chan error, 1)
		if c.deleteFirst {
			_, err = held.ExecContext(f.ctx, "UPDATE workflow_schedules SET status = 'deleted', deleted_at = now() WHERE id = ?", ulid(id))
			require.NoError(t, err)
			go func() { _, err := db.ExecContext(f.ctx, upsertFailure, ulid(id)); second <- err }()
		} else {
			_, err = held.ExecContext(f.ctx, upsertFailure, ulid(id))
			require.NoError(t, err)
			go func() { _, err := f.svc.Delete(f.ctx, "default", id, nil); second <- err }()
		}
		blockedBy(pid)
		require.NoError(t, held.Commit())
		require.NoError(t, <-second)
		c := requireCountsScanned(t, f, c.name, "default")
		require.Zero(t, c.Failing, "%s: the failing schedule is deleted", cases[i].name)
	}
}

// waitsFor says whether a PostgreSQL backend waits for a lock held by the
// backend pid.
func waitsFor(t *testing.T, db *bun.DB, pid int) bool {
	t.Helper()
	var blocked bool
	require.NoError(t, db.NewRaw("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE ? = ANY (pg_blocking_pids(pid)))", pid).Scan(context.Background(), &blocked))
	return blocked
}

// A run's end never waits for its schedule's lock, whoever holds it (the
// tick firing ahead, an operator's change, a delete): its first failure
// inserts the schedule's health row, whose foreign key takes a key-share
// lock on the schedule, and every locking read of a schedule takes FOR NO
// KEY UPDATE, which lets it through. With FOR UPDATE the run end queued
// behind the holder, and a delete holding the schedule whose count
// trigger then inserted the same health row deadlocked with it (CI saw
// it in TestFailingCountsUnderConcurrentWrites).
func TestRunEndDoesNotWaitForTheScheduleLock(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, "postgres")
	f := newFixture(t, db)
	f.create(cronInput("held", "0 0 1 1 *"))
	res, err := f.svc.Trigger(f.ctx, "default", "held", "", nil)
	require.NoError(t, err)
	runs, err := f.svc.Poll(f.ctx, scheduling.PollRequest{Namespace: "default", Limit: 1, LeaseSeconds: 30, WorkerID: "w1"})
	require.NoError(t, err)
	require.Len(t, runs, 1)

	held, err := db.BeginTx(f.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = held.Rollback() }()
	_, err = models.LockSchedule(f.ctx, held, "default", "held")
	require.NoError(t, err)
	var pid int
	require.NoError(t, held.NewRaw("SELECT pg_backend_pid()").Scan(f.ctx, &pid))

	ended := make(chan error, 1)
	go func() {
		_, err := f.svc.FailRun(f.ctx, "default", res.RunID, w1, scheduling.Failure{Message: "boom"})
		ended <- err
	}()
	for {
		select {
		case err := <-ended:
			require.NoError(t, err)
			require.NoError(t, held.Commit())
			c := requireCountsScanned(t, f, "after the run's end", "default")
			require.EqualValues(t, 1, c.Failing, "the schedule failed once")
			return
		default:
		}
		require.False(t, waitsFor(t, db, pid), "the run's end waits for the schedule's lock")
		_, err := db.ExecContext(f.ctx, "SELECT pg_sleep(0.005)")
		require.NoError(t, err)
	}
}

// The health counts that change with the time alone stop at
// HealthCountCap and say so; the failing count, kept, is exact past it.
func TestHealthCountsStopAtTheCap(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
		// Overdue by more than the loop's grace: overdue and stale.
		require.NoError(t, loadgen.Seed(f.ctx, f.db, "late", scheduling.HealthCountCap, spec, f.clock.Now().Add(-2*scheduling.LoopGrace)))
		// Failing (not overdue: failing ranks first anyway).
		require.NoError(t, loadgen.Seed(f.ctx, f.db, "fail", scheduling.HealthCountCap+5, spec, f.clock.Now().Add(time.Hour)))
		_, err := f.db.ExecContext(f.ctx, `INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, updated_at)
			SELECT id, 1, updated_at FROM workflow_schedules WHERE id LIKE 'fail%'`)
		require.NoError(t, err)

		c, err := f.svc.Counts(f.ctx, "default")
		require.NoError(t, err)
		at := func(c models.ScheduleCounts) [4]any {
			return [4]any{c.Overdue, c.OverdueCapped, c.Stale, c.StaleCapped}
		}
		require.Equal(t, [4]any{int64(scheduling.HealthCountCap), false, int64(scheduling.HealthCountCap), false}, at(c), "exactly the cap: exact")
		require.EqualValues(t, scheduling.HealthCountCap+5, c.Failing, "failing is kept, not capped")

		require.NoError(t, loadgen.Seed(f.ctx, f.db, "later", 3, spec, f.clock.Now().Add(-2*scheduling.LoopGrace)))
		c, err = f.svc.Counts(f.ctx, "default")
		require.NoError(t, err)
		require.Equal(t, [4]any{int64(scheduling.HealthCountCap), true, int64(scheduling.HealthCountCap), true}, at(c), "past the cap: at the cap, and more")
		require.False(t, c.StuckCapped || c.SkippingCapped)
		requireCountsScanned(t, f, "seeded", "default")
	})
}
