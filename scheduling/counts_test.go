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

// requireCountsScanned fails unless each namespace's maintained counts,
// and the status and failing chips Service.Counts serves, equal a fresh
// scan; it returns the first namespace's counts.
func requireCountsScanned(t *testing.T, f *fixture, step string, namespaces ...string) models.ScheduleCounts {
	t.Helper()
	var first models.ScheduleCounts
	for i, ns := range namespaces {
		want, err := schedtest.ScanCounts(f.ctx, f.db, ns)
		require.NoError(t, err)
		got, err := models.CountSchedules(f.ctx, f.db, ns)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s: namespace %s: maintained counts (got) differ from a scan (want)", step, ns)
		chips, err := f.svc.Counts(f.ctx, ns)
		require.NoError(t, err)
		require.Equal(t, [4]int64{want.All, want.Active, want.Paused, want.Failing}, [4]int64{chips.All, chips.Active, chips.Paused, chips.Failing},
			"%s: namespace %s: Service.Counts", step, ns)
		if i == 0 {
			first = got
		}
	}
	return first
}

func TestScheduleCountsFollowEveryWrite(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		check := func(step string, active, paused int64) {
			t.Helper()
			c := requireCountsScanned(t, f, step, "default", "other")
			require.Equal(t, [2]int64{active, paused}, [2]int64{c.Active, c.Paused}, "%s: default's active and paused", step)
		}
		check("empty", 0, 0)

		for i := range 4 {
			f.create(cronInput(fmt.Sprintf("s%d", i), "0 * * * *"))
		}
		paused := cronInput("born-paused", "0 * * * *")
		paused.Paused = true
		f.create(paused)
		elsewhere := cronInput("s0", "0 * * * *")
		elsewhere.Namespace = "other"
		_, err := f.svc.Create(f.ctx, elsewhere, nil)
		require.NoError(t, err)
		check("created", 4, 1)

		// Paused by the loop after a failed run, then deleted.
		runID := f.retrying("fragile", nil, func(in *scheduling.CreateInput) { in.PauseAfterFailures = ptr(1) })
		check("created fragile", 5, 1)
		f.failOnce(runID, "io")
		pausedOnFailure, err := f.svc.PauseFailing(f.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []string{"default/fragile"}, pausedOnFailure)
		check("paused on failure", 4, 2)
		_, err = f.svc.Delete(f.ctx, "default", "fragile", nil)
		require.NoError(t, err)
		check("deleted fragile", 4, 1)

		_, err = f.svc.Pause(f.ctx, "default", "s0", scheduling.PauseInput{Reason: "maintenance"}, nil)
		require.NoError(t, err)
		check("paused", 3, 2)
		_, err = f.svc.Pause(f.ctx, "default", "s0", scheduling.PauseInput{}, nil)
		require.Error(t, err, "pausing a paused schedule is refused")
		check("pause refused", 3, 2)
		_, err = f.svc.Resume(f.ctx, "default", "s0", nil)
		require.NoError(t, err)
		check("resumed", 4, 1)

		// An update that leaves status alone, a manual fire and the tick's:
		// none writes the counts (on PostgreSQL their row versions stay).
		versions := func() []string {
			var out []string
			if database.Of(db).Name() == database.PostgreSQL {
				require.NoError(t, db.NewRaw("SELECT namespace || '/' || part || '@' || xmin FROM namespace_schedule_counts ORDER BY 1").Scan(f.ctx, &out))
			}
			return out
		}
		before := versions()
		_, err = f.svc.Update(f.ctx, "default", "s1", scheduling.UpdateInput{Note: ptr("edited")}, nil)
		require.NoError(t, err)
		_, err = f.svc.Trigger(f.ctx, "default", "s1", "", nil)
		require.NoError(t, err)
		f.clock.Advance(time.Hour)
		require.Len(t, f.tick(), 5, "the active schedules of both namespaces come due (s1 skips: its manual run is running)")
		require.Equal(t, before, versions(), "counts written by an update of other fields or a fire")
		check("updated and fired", 4, 1)

		// A timed pause, resumed by the loop's sweep.
		until := f.clock.Now().Add(10 * time.Minute)
		_, err = f.svc.Pause(f.ctx, "default", "s2", scheduling.PauseInput{Until: &until}, nil)
		require.NoError(t, err)
		check("timed pause", 3, 2)
		f.clock.Advance(11 * time.Minute)
		resumed, err := f.svc.ResumeDue(f.ctx, 100)
		require.NoError(t, err)
		require.Equal(t, []string{"default/s2"}, resumed)
		check("timed pause ended", 4, 1)

		_, err = f.svc.Delete(f.ctx, "default", "s3", nil)
		require.NoError(t, err)
		_, err = f.svc.Delete(f.ctx, "default", "born-paused", nil)
		require.NoError(t, err)
		check("deleted an active and a paused one", 3, 0)
		f.create(cronInput("s4", "0 * * * *"))
		check("created after the deletes", 4, 0)

		// max_runs exhausted: the tick soft-deletes the schedule.
		once := cronInput("once", "* * * * *")
		once.MaxRuns = ptr[int64](1)
		f.create(once)
		// end_at passed: the schedule stays active with no next fire.
		ending := cronInput("ending", "* * * * *")
		ending.Spec.EndAt = f.clock.Now().Add(90 * time.Second).Format(time.RFC3339)
		f.create(ending)
		check("created once and ending", 6, 0)
		for range 3 {
			f.clock.Advance(time.Minute)
			f.tick()
		}
		var onceStatus string
		require.NoError(t, f.db.NewSelect().Model((*models.Schedule)(nil)).Column("status").Where("schedule_id = 'once'").Scan(f.ctx, &onceStatus))
		require.Equal(t, models.StatusDeleted, onceStatus, "max_runs soft-deleted once")
		require.True(t, f.get("ending").Ended(), "ending has no occurrence left")
		check("max_runs exhausted, end_at passed", 5, 0)

		// A statement that writes many rows at once: every active schedule
		// of default paused, then every paused one resumed.
		n, err := f.db.NewUpdate().Model((*models.Schedule)(nil)).Set("status = ?", models.StatusPaused).
			Where("namespace = 'default' AND status = ?", models.StatusActive).Exec(f.ctx)
		require.NoError(t, err)
		affected, _ := n.RowsAffected()
		require.EqualValues(t, 5, affected)
		check("bulk pause", 0, 5)
		_, err = f.db.NewUpdate().Model((*models.Schedule)(nil)).Set("status = ?", models.StatusActive).
			Where("namespace = 'default' AND status = ? AND schedule_id <> 's1'", models.StatusPaused).Exec(f.ctx)
		require.NoError(t, err)
		check("bulk resume", 4, 1)
		// A namespace move (nothing in Tideline moves one today; the
		// triggers keep both namespaces right if something does).
		_, err = f.db.NewUpdate().Model((*models.Schedule)(nil)).Set("namespace = 'other'").
			Where("namespace = 'default' AND schedule_id IN ('s1', 's2')").Exec(f.ctx)
		require.NoError(t, err)
		check("moved a paused and an active one", 3, 0)
		other, err := models.CountSchedules(f.ctx, f.db, "other")
		require.NoError(t, err)
		require.Equal(t, [2]int64{2, 1}, [2]int64{other.Active, other.Paused})

		// Retention purges soft-deleted schedules (not counted before or
		// after); a hard delete of a live one is counted.
		f.clock.Advance(72 * time.Hour)
		deleted, err := retention.New(f.db, f.clock.Now).Retain(f.ctx, retention.Policy{PurgeDeletedAfter: 48 * time.Hour})
		require.NoError(t, err)
		require.EqualValues(t, 4, deleted.Schedules, "fragile, s3, born-paused and once purged")
		check("purged", 3, 0)
		// Many rows in one INSERT (as the benchmarks seed), then deleted
		// for good with their rings (nothing else points at them).
		spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
		require.NoError(t, loadgen.Seed(f.ctx, f.db, "seed", 25, spec, f.clock.Now().Add(time.Hour)))
		check("seeded in one statement", 28, 0)
		_, err = f.db.NewDelete().TableExpr("workflow_schedule_rings").Where("schedule_ulid LIKE 'seed%'").Exec(f.ctx)
		require.NoError(t, err)
		_, err = f.db.NewDelete().Model((*models.Schedule)(nil)).Where("id LIKE 'seed%'").Exec(f.ctx)
		require.NoError(t, err)
		check("hard-deleted the seeded", 3, 0)

		// A namespace never written to counts nothing.
		requireCountsScanned(t, f, "unknown namespace", "nobody")
	})
}

// TestScheduleCountsUnderConcurrentWrites: writers create, pause, resume
// and delete schedules of two namespaces at once, some of them in
// transactions that change both namespaces in opposite orders (as two
// ticks soft-deleting schedules can); the counts still equal a scan, and
// no writer waits on the counts or deadlocks on them.
func TestScheduleCountsUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		namespaces := []string{"default", "other"}
		const writers, ops = 8, 40
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 35))
				for i := range ops {
					ns := namespaces[rng.IntN(2)]
					id := fmt.Sprintf("w%d-%d", w, rng.IntN(ops/2))
					var err error
					switch op := rng.IntN(6); op {
					case 0, 1:
						in := cronInput(id, "0 * * * *")
						in.Namespace, in.Paused = ns, op == 1
						_, err = f.svc.Create(f.ctx, in, nil)
					case 2:
						_, err = f.svc.Pause(f.ctx, ns, id, scheduling.PauseInput{}, nil)
					case 3:
						_, err = f.svc.Resume(f.ctx, ns, id, nil)
					case 4:
						_, err = f.svc.Delete(f.ctx, ns, id, nil)
					case 5:
						// Both namespaces in one transaction, in an order
						// that alternates between writers.
						order := namespaces
						if (w+i)%2 == 1 {
							order = []string{namespaces[1], namespaces[0]}
						}
						err = f.db.RunInTx(f.ctx, nil, func(ctx context.Context, tx bun.Tx) error {
							for _, ns := range order {
								if _, err := tx.NewUpdate().Model((*models.Schedule)(nil)).
									Set("status = CASE WHEN status = 'active' THEN 'paused' ELSE 'active' END").
									Where("namespace = ? AND schedule_id LIKE ? AND status IN ('active', 'paused')", ns, fmt.Sprintf("w%d-%%", w)).
									Exec(ctx); err != nil {
									return err
								}
							}
							return nil
						})
						if err != nil {
							errs <- fmt.Errorf("writer %d: flip both namespaces: %w", w, err)
							return
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
		c := requireCountsScanned(t, f, "after the writers", namespaces...)
		require.NotZero(t, c.All, "the writers left schedules to count")

		if database.Of(db).Name() == database.PostgreSQL {
			// The next writer of a namespace, alone, folds the parts the
			// concurrent ones left into one row. Alone in this schema: the
			// advisory lock is the database's, and a test beside this one
			// writing its own schema's "default" may hold it for a moment,
			// so that a write adds a part instead; the next one folds it.
			var parts, lone int
			require.Eventually(t, func() bool {
				lone++
				f.create(cronInput(fmt.Sprintf("last-%d", lone), "0 * * * *"))
				require.NoError(t, db.NewRaw("SELECT count(*) FROM namespace_schedule_counts WHERE namespace = 'default'").Scan(f.ctx, &parts))
				return parts == 1
			}, 10*time.Second, 10*time.Millisecond, "default's parts after a lone write: %d", parts)
			requireCountsScanned(t, f, "after the lone write", namespaces...)
		}
	})
}
