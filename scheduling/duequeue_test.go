package scheduling_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// dueRow is a row of the due queue, or the row a schedule should have.
type dueRow struct {
	NextFireAt   time.Time `bun:"next_fire_at"`
	ScheduleULID string    `bun:"schedule_ulid"`
}

// requireDueQueueMatches asserts the due queue's invariant (migration 0012):
// exactly one row per active schedule with a next fire, at that fire.
func requireDueQueueMatches(t *testing.T, f *fixture, step string) {
	t.Helper()
	var queue, want []dueRow
	require.NoError(t, f.db.NewRaw("SELECT next_fire_at, schedule_ulid FROM workflow_schedule_due ORDER BY schedule_ulid").Scan(f.ctx, &queue))
	require.NoError(t, f.db.NewRaw("SELECT next_fire_at, id AS schedule_ulid FROM workflow_schedules WHERE status = ? AND next_fire_at IS NOT NULL ORDER BY id",
		models.StatusActive).Scan(f.ctx, &want))
	require.Len(t, queue, len(want), "%s: queue rows", step)
	for i := range want {
		require.Equal(t, want[i].ScheduleULID, queue[i].ScheduleULID, "%s", step)
		require.True(t, want[i].NextFireAt.Equal(queue[i].NextFireAt), "%s: %s queued at %s, due %s", step,
			want[i].ScheduleULID, queue[i].NextFireAt, want[i].NextFireAt)
	}
}

// Every way a schedule row is written keeps the due queue in step: the
// service's own operations, a tick's batch update, max_runs exhaustion, the
// purge's delete, and SQL from outside the service (an operator's fix).
func TestDueQueueFollowsEveryWrite(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		requireDueQueueMatches(t, f, "empty")
		f.create(cronInput("a", "*/5 * * * *"))
		f.create(cronInput("b", "0 * * * *"))
		once := cronInput("once", "* * * * *")
		once.MaxRuns = ptr(int64(1))
		f.create(once)
		requireDueQueueMatches(t, f, "created")

		_, err := f.svc.Pause(f.ctx, "default", "a", scheduling.PauseInput{Reason: "x"}, nil)
		require.NoError(t, err)
		requireDueQueueMatches(t, f, "paused")
		_, err = f.svc.Update(f.ctx, "default", "b", scheduling.UpdateInput{Spec: &models.Spec{CronExpressions: []string{"30 * * * *"}, Timezone: "UTC"}}, nil)
		require.NoError(t, err)
		requireDueQueueMatches(t, f, "spec updated")
		_, err = f.svc.Update(f.ctx, "default", "b", scheduling.UpdateInput{Note: ptr("no change to when")}, nil)
		require.NoError(t, err)
		requireDueQueueMatches(t, f, "note updated")

		f.clock.Set(t0.Add(31 * time.Minute))
		rows, err := f.svc.Tick(f.ctx, 100)
		require.NoError(t, err)
		require.Len(t, rows, 2, "b and once fire; a is paused")
		require.Equal(t, models.StatusDeleted, f.get("once").Status, "max_runs exhausted")
		requireDueQueueMatches(t, f, "ticked")

		_, err = f.svc.Resume(f.ctx, "default", "a", nil)
		require.NoError(t, err)
		requireDueQueueMatches(t, f, "resumed")
		_, err = f.svc.Delete(f.ctx, "default", "b", nil)
		require.NoError(t, err)
		requireDueQueueMatches(t, f, "deleted")

		_, err = db.NewUpdate().Model((*models.Schedule)(nil)).Set("next_fire_at = ?", t0.Add(time.Hour)).
			Where("schedule_id = ?", "a").Exec(f.ctx)
		require.NoError(t, err)
		requireDueQueueMatches(t, f, "moved by SQL")
		a := f.get("a")
		for _, table := range []string{"workflow_schedule_history_events", "workflow_runs"} {
			_, err = db.NewDelete().TableExpr(table).Where("workflow_schedule_id = ?", a.ID).Exec(f.ctx)
			require.NoError(t, err)
		}
		_, err = db.NewDelete().Model((*models.Schedule)(nil)).Where("id = ?", a.ID).Exec(f.ctx)
		require.NoError(t, err)
		requireDueQueueMatches(t, f, "row deleted")
	})
}

// A claim locks no more schedules than its limit, in the due queue's order,
// and one replica's claim goes on past the rows another holds: three
// claims of ten over thirty due schedules take three disjoint tens.
func TestClaimDueLocksItsLimitPastHeldRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.Postgres(t))
	for i := range 30 {
		f.create(cronInput(fmt.Sprintf("s%02d", i), "0 * * * *"))
	}
	now := t0.Add(2 * time.Hour)
	var held [][]string
	for range 3 {
		tx, err := f.db.BeginTx(f.ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		claimed, err := models.ClaimDue(f.ctx, tx, now, 10, nil)
		require.NoError(t, err)
		ids := make([]string, len(claimed))
		for i, c := range claimed {
			ids[i] = c.ScheduleID
		}
		held = append(held, ids)
	}
	want := func(from int) []string {
		var out []string
		for i := from; i < from+10; i++ {
			out = append(out, fmt.Sprintf("s%02d", i))
		}
		return out
	}
	// All due at 13:00, so the queue orders them by their ULIDs, which
	// follow their creation.
	require.Equal(t, [][]string{want(0), want(10), want(20)}, held)
}

// Many writers at once — ticks from four replicas beside operators pausing,
// resuming and re-timing the same schedules — leave the due queue exactly
// in step with the schedule rows: every change and its queue row commit
// together, under the schedule's row lock.
func TestDueQueueStaysInStepUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.Postgres(t))
	const schedules = 20
	for i := range schedules {
		in := cronInput(fmt.Sprintf("c%02d", i), "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
	}
	f.clock.Set(t0.Add(90 * time.Minute))
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for range 4 {
		wg.Go(func() {
			for range 10 {
				_, err := f.svc.Tick(f.ctx, 7)
				errs <- err
			}
		})
	}
	for w := range 4 {
		wg.Go(func() {
			for i := range 15 {
				id := fmt.Sprintf("c%02d", (w*5+i)%schedules)
				var err error
				switch i % 3 {
				case 0:
					_, err = f.svc.Pause(f.ctx, "default", id, scheduling.PauseInput{Reason: "x"}, nil)
				case 1:
					_, err = f.svc.Resume(f.ctx, "default", id, nil)
				default:
					_, err = f.svc.Update(f.ctx, "default", id, scheduling.UpdateInput{Spec: &models.Spec{
						CronExpressions: []string{fmt.Sprintf("%d * * * *", i)}, Timezone: "UTC"}}, nil)
				}
				var conflict *scheduling.ConflictError
				if errors.As(err, &conflict) {
					err = nil // resuming an active schedule or pausing a paused one
				}
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	requireDueQueueMatches(t, f, "after concurrent writers")
}

// dueQueries records the due-queue pages a claim reads.
type dueQueries struct {
	mu      sync.Mutex
	queries []string
}

func (h *dueQueries) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (h *dueQueries) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.Contains(e.Query, "FROM workflow_schedule_due AS d") {
		h.mu.Lock()
		h.queries = append(h.queries, e.Query)
		h.mu.Unlock()
	}
}

// A claim that pages on past rows another transaction holds starts each
// page at its cursor in the index, for the tick (ClaimDue) and for
// preparing (ClaimAt): no page reads the rows before its cursor again. A
// cursor that was only a filter made page k re-read k pages — at 1,000,000
// schedules of one instant, minutes a page and nothing fired. Checked on
// each page's plan (index scans only, so that the small table's plan is
// the large one's).
func TestClaimPagesStartAtTheirCursor(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	ctx := context.Background()
	at := t0.Add(time.Hour)
	require.NoError(t, loadgen.Seed(ctx, db, "held", 300, models.Spec{CronExpressions: []string{"0 * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}, at))
	hook := &dueQueries{}
	db.AddQueryHook(hook)
	claims := map[string]func(tx bun.Tx, limit int) ([]models.ClaimedSchedule, error){
		"ClaimDue": func(tx bun.Tx, limit int) ([]models.ClaimedSchedule, error) {
			return models.ClaimDue(ctx, tx, at, limit, nil)
		},
		"ClaimAt": func(tx bun.Tx, limit int) ([]models.ClaimedSchedule, error) {
			return models.ClaimAt(ctx, tx, at, "", limit, []string{scheduling.OverlapAllowAll})
		},
	}
	for _, name := range []string{"ClaimDue", "ClaimAt"} {
		holder, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = holder.Rollback() }) // before the schema is dropped, also when an assertion fails
		held, err := claims[name](holder, 250)
		require.NoError(t, err)
		require.Len(t, held, 250)
		hook.mu.Lock()
		hook.queries = nil
		hook.mu.Unlock()

		claimer, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = claimer.Rollback() })
		got, err := claims[name](claimer, 10)
		require.NoError(t, err)
		require.Len(t, got, 10, "%s goes on past the 250 held rows", name)
		require.NoError(t, claimer.Rollback())
		require.NoError(t, holder.Rollback())

		hook.mu.Lock()
		pages := slices.Clone(hook.queries)
		hook.mu.Unlock()
		require.Greater(t, len(pages), 20, "%s paged past the held rows ten at a time", name)
		explain, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = explain.Rollback() })
		_, err = explain.ExecContext(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
		require.NoError(t, err)
		for i, q := range pages {
			var plan []string
			require.NoError(t, explain.NewRaw("EXPLAIN (ANALYZE, COSTS OFF) "+q).Scan(ctx, &plan))
			text := strings.Join(plan, "\n")
			require.NotContains(t, text, "Rows Removed by Filter", "%s page %d reads rows before its cursor:\n%s", name, i, text)
		}
		require.NoError(t, explain.Rollback())
	}
}

// The served loop's one reading of its work (models.ReadLoopWork) sees
// what a tick and each housekeeping task would: the due queue's earliest
// fire, a schedule holding buffered fires, the earliest end of a timed
// pause, run ends to fold, a failing schedule, and the earliest start
// deadline, lease and deadlines of the active runs — on both databases,
// where the times come back as each stores them.
func TestReadLoopWorkSeesEveryTasksWork(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		read := func() models.LoopWork {
			t.Helper()
			work, err := models.ReadLoopWork(f.ctx, db)
			require.NoError(t, err)
			// PostgreSQL reads it through tideline_loop_work() (migration
			// 0030), a copy of the statement: both must read the same.
			var direct models.LoopWork
			require.NoError(t, db.NewRaw(models.LoopWorkQuery(db)).Scan(f.ctx, &direct))
			require.Equal(t, direct, work, "the function and the statement disagree")
			return work
		}
		require.Equal(t, models.LoopWork{}, read(), "nothing to do on an empty database")

		f.create(cronInput("hourly", "0 * * * *"))
		in := cronInput("five", "*/5 * * * *")
		in.OverlapPolicy = scheduling.OverlapBufferOne
		five := f.create(in)
		work := read()
		require.NotNil(t, work.Earliest)
		require.True(t, five.NextFireAt.Equal(*work.Earliest), "earliest %s, want the five-minute schedule's %s", work.Earliest, five.NextFireAt)
		require.False(t, work.Buffered)
		require.False(t, work.FireDue(f.clock.Now()))
		require.True(t, work.FireDue(*five.NextFireAt))

		// A manual fire starts a run; a second one, beside it, is buffered.
		res, err := f.svc.Trigger(f.ctx, "default", "five", "", nil)
		require.NoError(t, err)
		require.Equal(t, scheduling.OutcomeTriggered, res.Outcome)
		run := res.RunID
		res, err = f.svc.Trigger(f.ctx, "default", "five", "", nil)
		require.NoError(t, err)
		require.Equal(t, scheduling.OutcomeBuffered, res.Outcome)
		work = read()
		require.True(t, work.Buffered, "a schedule holds a buffered fire")
		require.True(t, work.FireDue(f.clock.Now()))

		until := f.clock.Now().Add(90 * time.Minute)
		_, err = f.svc.Pause(f.ctx, "default", "five", scheduling.PauseInput{Reason: "x", Until: &until}, nil)
		require.NoError(t, err)
		work = read()
		require.False(t, work.Buffered, "a paused schedule's buffer does not drain")
		require.True(t, f.get("hourly").NextFireAt.Equal(*work.Earliest), "the paused schedule left the due queue")
		require.NotNil(t, work.PauseEnds)
		require.True(t, until.Equal(*work.PauseEnds), "pause ends %s, want %s", work.PauseEnds, until)
		require.False(t, work.PauseEnded(until.Add(-time.Second)))
		require.True(t, work.PauseEnded(until))

		// The run's times, one way to expire each, set as the fire path
		// and the workers would.
		at := func(minutes int) time.Time {
			return f.clock.Now().Add(time.Duration(minutes) * time.Minute).UTC().Truncate(time.Second)
		}
		_, err = db.NewUpdate().Model((*models.Run)(nil)).Where("id = ?", run).
			Set("start_deadline_at = ?", at(3)).Set("execution_deadline_at = ?", at(4)).Set("run_deadline_at = ?", at(5)).
			Set("cancel_requested_at = ?", at(6)).Exec(f.ctx)
		require.NoError(t, err)
		work = read()
		for name, got := range map[string]*time.Time{"start deadline": work.StartDeadline, "execution deadline": work.ExecutionDeadline,
			"run deadline": work.RunDeadline, "cancel request": work.CancelRequested} {
			require.NotNil(t, got, name)
		}
		require.True(t, at(3).Equal(*work.StartDeadline))
		require.True(t, at(4).Equal(*work.ExecutionDeadline))
		require.True(t, at(5).Equal(*work.RunDeadline))
		require.True(t, at(6).Equal(*work.CancelRequested))
		require.Nil(t, work.LeaseExpires, "a pending run has no lease")
		require.True(t, work.StartDeadlinePassed(at(3)) && !work.StartDeadlinePassed(at(2)))
		require.False(t, work.RunsExpired(at(3), at(3)))
		require.True(t, work.RunsExpired(at(4), at(3)), "the execution deadline")
		_, err = db.NewUpdate().Model((*models.Run)(nil)).Where("id = ?", run).
			Set("status = ?", models.RunRunning).Set("lease_expires_at = ?", at(2)).Set("start_deadline_at = NULL").
			Set("execution_deadline_at = NULL").Set("run_deadline_at = NULL").Exec(f.ctx)
		require.NoError(t, err)
		work = read()
		require.Nil(t, work.StartDeadline, "a running run has started")
		require.True(t, at(2).Equal(*work.LeaseExpires))
		require.True(t, work.RunsExpired(at(2), at(0)), "the lease")
		require.False(t, work.RunsExpired(at(1), at(5)), "the cancellation's grace runs until cancelBefore reaches it")
		require.True(t, work.RunsExpired(at(1), at(6)), "the cancellation, its grace over")

		// A run end waits to be folded into the health; folded, and with
		// the schedule's pause_after_failures reached, it is failing.
		require.False(t, work.HealthPending)
		require.False(t, work.Failing)
		hourly := f.get("hourly")
		_, err = db.NewInsert().Model(&models.HealthPending{ScheduleULID: hourly.ID, FinishedAt: f.clock.Now(), RunID: "RUNFAILED", Status: models.RunFailed}).Exec(f.ctx)
		require.NoError(t, err)
		require.True(t, read().HealthPending)
		_, err = db.NewUpdate().Model((*models.Schedule)(nil)).Where("id = ?", hourly.ID).Set("pause_after_failures = 1").Exec(f.ctx)
		require.NoError(t, err)
		_, err = db.NewInsert().Model(&models.ScheduleHealth{ScheduleULID: hourly.ID, ConsecutiveFailures: 1, FailuresCount: 1}).Exec(f.ctx)
		require.NoError(t, err)
		require.True(t, read().Failing)

		// A notification delivery still to be sent, and a running
		// backfill job's next slice.
		require.Nil(t, work.DeliveryNext)
		require.Nil(t, work.BackfillNext)
		next := at(7)
		_, err = db.NewInsert().Model(&models.Delivery{ID: "DELIVERY1", Namespace: "default", NotifierID: "NOTIFIER1", EventType: "run_failed",
			Document: []byte(`{}`), Status: models.DeliveryPending, NextAttemptAt: &next, CreatedAt: f.clock.Now(), UpdatedAt: f.clock.Now()}).Exec(f.ctx)
		require.NoError(t, err)
		job, err := f.svc.StartBackfill(f.ctx, "default", "hourly", scheduling.BackfillJobInput{From: f.clock.Now().Add(-60 * 24 * time.Hour), To: f.clock.Now()})
		require.NoError(t, err)
		work = read()
		require.NotNil(t, work.DeliveryNext)
		require.True(t, next.Equal(*work.DeliveryNext))
		require.True(t, work.DeliveryDue(next) && !work.DeliveryDue(at(6)))
		require.NotNil(t, work.BackfillNext, "a running job: %s, %d occurrences", job.Status, job.Total)
		require.True(t, job.NextWorkAt.Equal(*work.BackfillNext), "backfill next %s, want %s", work.BackfillNext, job.NextWorkAt)
		require.True(t, work.BackfillDue(job.NextWorkAt))
	})
}
