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

// The served loop's probe (models.ReadTickWork) sees what a tick would:
// the due queue's earliest fire, and a schedule holding buffered fires —
// on both databases, where the earliest time comes back as each stores it.
func TestReadTickWorkSeesDueAndBuffered(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		work, err := models.ReadTickWork(f.ctx, db)
		require.NoError(t, err)
		require.Nil(t, work.Earliest, "nothing is due on an empty database")
		require.False(t, work.Buffered)

		f.create(cronInput("hourly", "0 * * * *"))
		in := cronInput("five", "*/5 * * * *")
		in.OverlapPolicy = scheduling.OverlapBufferOne
		five := f.create(in)
		work, err = models.ReadTickWork(f.ctx, db)
		require.NoError(t, err)
		require.NotNil(t, work.Earliest)
		require.True(t, five.NextFireAt.Equal(*work.Earliest), "earliest %s, want the five-minute schedule's %s", work.Earliest, five.NextFireAt)
		require.False(t, work.Buffered)

		// A manual fire starts a run; a second one, beside it, is buffered.
		res, err := f.svc.Trigger(f.ctx, "default", "five", "", nil)
		require.NoError(t, err)
		require.Equal(t, scheduling.OutcomeTriggered, res.Outcome)
		res, err = f.svc.Trigger(f.ctx, "default", "five", "", nil)
		require.NoError(t, err)
		require.Equal(t, scheduling.OutcomeBuffered, res.Outcome)
		work, err = models.ReadTickWork(f.ctx, db)
		require.NoError(t, err)
		require.True(t, work.Buffered, "a schedule holds a buffered fire")

		_, err = f.svc.Pause(f.ctx, "default", "five", scheduling.PauseInput{Reason: "x"}, nil)
		require.NoError(t, err)
		work, err = models.ReadTickWork(f.ctx, db)
		require.NoError(t, err)
		require.False(t, work.Buffered, "a paused schedule's buffer does not drain")
		require.True(t, f.get("hourly").NextFireAt.Equal(*work.Earliest), "the paused schedule left the due queue")
	})
}
