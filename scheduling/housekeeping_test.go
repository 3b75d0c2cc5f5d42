package scheduling_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/maintenance"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// Every housekeeping task of the loop; a task added to housekeeping.go
// and not here fails TestHousekeepingTasksAreAllKnown.
var allTasks = []string{
	scheduling.TaskResumeTimedPauses, scheduling.TaskFoldHealth, scheduling.TaskPauseFailing,
	scheduling.TaskEnforceDeadlines, scheduling.TaskRetention, scheduling.TaskCompactAudit, scheduling.TaskOptimize, scheduling.TaskVacuumDueQueue,
	scheduling.TaskVacuumHealth, scheduling.TaskVacuumRing,
}

// passTasks are the ones RunOnce runs around its tick.
var passTasks = allTasks[:6]

// loopTimers is how many timers a served Loop waits on once every one of
// its goroutines has parked: the fire loop, the notification dispatcher,
// each housekeeping task, the HTTP target executor's two (its cancel watch
// and its recheck) and, when it prepares ahead, the preparer. A test moves
// a schedtest.Clock only after WaitTimers(loopTimers(…)): a move made
// before a goroutine parks is measured from the new time and never
// reaches it.
func loopTimers(preparing bool) int {
	n := 2 + len(allTasks) + 2
	if preparing {
		n++
	}
	return n
}

var errInjected = errors.New("injected fault")

// A driven pass whose housekeeping task fails still fires what is due, at
// its instant, runs every other task, and reports the failure.
func TestRunOnceFiresWhenATaskFails(t *testing.T) {
	t.Parallel()
	for _, failing := range passTasks {
		t.Run(failing, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, dbtest.SQLite(t))
			f.create(cronInput("due", "0 * * * *"))
			at := time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC)
			f.clock.Set(at)

			var mu sync.Mutex
			ran := map[string]error{}
			loop := &scheduling.Loop{Service: f.svc,
				BeforeTask: func(_ context.Context, task string) error {
					if task == failing {
						return errInjected
					}
					return nil
				},
				OnTask: func(r maintenance.Report[scheduling.LoopResult]) {
					mu.Lock()
					defer mu.Unlock()
					ran[r.Task] = r.Err
				},
			}
			res, err := loop.RunOnce(f.ctx)
			require.ErrorIs(t, err, errInjected, "the failure is reported")
			require.ErrorContains(t, err, failing)
			require.Len(t, res.Rows, 1, "the due schedule fired all the same")
			require.Equal(t, scheduling.OutcomeTriggered, res.Rows[0].Outcome)
			require.True(t, res.Rows[0].LastFiredAt.Equal(at), "fired at its instant")
			require.Len(t, ran, len(passTasks), "every other task ran too")
			for _, task := range passTasks {
				if task == failing {
					require.ErrorIs(t, ran[task], errInjected)
				} else {
					require.NoError(t, ran[task], task)
				}
			}
		})
	}
}

// In a served loop a task that fails every run, or hangs, holds up no
// fire: the schedule fires at each instant by the loop's clock while the
// task is failing or stuck.
func TestServedLoopFiresOnTimeBesideABadTask(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"fails", "hangs"} {
		for _, bad := range allTasks {
			t.Run(mode+"/"+bad, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, dbtest.SQLite(t))
				in := cronInput("minutely", "* * * * *")
				in.OverlapPolicy = scheduling.OverlapAllowAll // each minute starts, whatever the last run does
				f.create(in)
				first := time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC)
				f.clock.Set(first)

				entered := make(chan struct{}, 1)  // the bad task began a run
				failed := make(chan struct{}, 100) // a run of the bad task was reported failed
				fires := make(chan scheduling.TickRow, 16)
				loop := &scheduling.Loop{Service: f.svc, Period: time.Minute,
					BeforeTask: func(ctx context.Context, task string) error {
						if task != bad {
							return nil
						}
						select {
						case entered <- struct{}{}:
						default:
						}
						if mode == "hangs" {
							<-ctx.Done() // until the loop stops
							return ctx.Err()
						}
						return errInjected
					},
					OnTask: func(r maintenance.Report[scheduling.LoopResult]) {
						if r.Task == bad && errors.Is(r.Err, errInjected) {
							select {
							case failed <- struct{}{}:
							default:
							}
						}
					},
					OnPass: func(r scheduling.LoopResult, _ time.Duration, _ error) {
						for _, row := range r.Rows {
							fires <- row
						}
					},
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				waitFor := func(ch <-chan struct{}, what string) {
					t.Helper()
					select {
					case <-ch:
					case <-ctx.Done():
						t.Fatalf("timed out waiting until %s", what)
					}
				}
				nextFire := func() scheduling.TickRow {
					t.Helper()
					select {
					case row := <-fires:
						return row
					case <-ctx.Done():
						t.Fatal("the loop never fired the due schedule")
						return scheduling.TickRow{}
					}
				}

				loop.Start(ctx)
				defer loop.Stop()
				waitFor(entered, "the bad task ran")
				if mode == "fails" {
					waitFor(failed, "its failure was reported")
				}
				row := nextFire()
				require.Equal(t, scheduling.OutcomeTriggered, row.Outcome)
				require.True(t, row.LastFiredAt.Equal(first), "the first fire at its instant, %v", row.LastFiredAt)

				// One loop period later, by the loop's clock: the bad task
				// runs (or hangs) again, and the next fire is on time too.
				// Every goroutine of the loop parks on its timer first
				// (but a hung task), so the move reaches each of them.
				parked := loopTimers(false)
				if mode == "hangs" {
					parked--
				}
				f.clock.WaitTimers(parked)
				f.clock.Advance(time.Minute)
				row = nextFire()
				require.Equal(t, scheduling.OutcomeTriggered, row.Outcome)
				require.True(t, row.LastFiredAt.Equal(first.Add(time.Minute)), "the next fire at its instant, %v", row.LastFiredAt)
				if mode == "fails" {
					if bad == scheduling.TaskOptimize { // hourly
						f.clock.WaitTimers(parked)
						f.clock.Advance(time.Hour)
					}
					waitFor(failed, "the task was retried on its period and failed again")
				}
			})
		}
	}
}

// Upkeep vacuums the health rows on PostgreSQL, which every run's end
// rewrites past their indexes (TaskVacuumHealth): their dead versions are
// gone after one upkeep pass, where autovacuum may be off or late.
func TestUpkeepVacuumsTheHealthRows(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	f := newFixture(t, db)
	runID := f.retrying("churn", nil)
	f.failOnce(runID, "io")
	loop := &scheduling.Loop{Service: f.svc}
	_, err := loop.RunOnce(f.ctx) // folds the run's end into the health row
	require.NoError(t, err)
	dead := func() (n int64) {
		require.NoError(t, db.NewRaw("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'workflow_schedule_health'::regclass").Scan(f.ctx, &n))
		return n
	}
	var before int64
	require.Eventually(t, func() bool { before = dead(); return before > 0 }, 10*time.Second, 50*time.Millisecond,
		"the fold left a dead version of the health row")
	// A vacuum cannot remove a version that a transaction of a test running
	// beside this one may still see: the upkeep goes again, as a served
	// loop's does every minute.
	require.Eventually(t, func() bool {
		_, err := loop.Upkeep(f.ctx)
		require.NoError(t, err)
		return dead() == 0
	}, 10*time.Second, 50*time.Millisecond, "dead versions after upkeep (were %d)", before)
}

// The served loop's upkeep vacuums the rings of recent actions
// (TaskVacuumRing): a fire rewrites its schedule's ring, leaving a dead
// version that only pruning or a vacuum reclaims, and where it went to
// another page, only a vacuum — where autovacuum is off, nothing else.
func TestUpkeepVacuumsTheRing(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	ctx := context.Background()
	spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
	require.NoError(t, loadgen.Seed(ctx, db, "ring", 3, spec, t0)) // full rings
	clock := schedtest.NewClock(t0.Add(time.Second))
	loop := &scheduling.Loop{Service: schedtest.Service(db, clock)}
	res, err := loop.RunOnce(ctx)
	require.NoError(t, err)
	require.Len(t, res.Rows, 3)
	dead := func() (n int64) {
		require.NoError(t, db.NewRaw("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'workflow_schedule_rings'::regclass").Scan(ctx, &n))
		return n
	}
	var before int64
	require.Eventually(t, func() bool { before = dead(); return before > 0 }, 10*time.Second, 50*time.Millisecond,
		"the fires left dead versions of their rings")
	// Again while a transaction of a test beside it holds the versions.
	require.Eventually(t, func() bool {
		_, err := loop.Upkeep(ctx)
		require.NoError(t, err)
		return dead() == 0
	}, 10*time.Second, 50*time.Millisecond, "dead versions after upkeep (were %d)", before)
}
