package scheduling_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

func (f *fixture) poll(limit, lease int) []models.Run {
	f.t.Helper()
	runs, err := f.svc.Poll(f.ctx, scheduling.PollRequest{Namespace: "default", Limit: limit, LeaseSeconds: lease, WorkerID: "w1"})
	require.NoError(f.t, err)
	return runs
}

func runEventTypes(t *testing.T, f *fixture, runID string) []string {
	t.Helper()
	d, err := f.svc.DescribeRun(f.ctx, "default", runID)
	require.NoError(t, err)
	var out []string
	for i, e := range d.Events {
		require.EqualValues(t, i+1, e.Sequence)
		out = append(out, e.EventType)
	}
	return out
}

func TestRunLifecycleThroughTheWorkerProtocol(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("job", "0 * * * *"))
		f.clock.Set(time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC))
		rows := f.tick()
		require.Len(t, rows, 1)

		runs := f.poll(10, 30)
		require.Len(t, runs, 1)
		run := runs[0]
		require.Equal(t, rows[0].RunID, run.ID)
		require.Equal(t, models.RunRunning, run.Status)
		require.Equal(t, 1, run.Attempt)
		require.Equal(t, f.clock.Now().Add(30*time.Second), run.LeaseExpiresAt.UTC())
		require.Empty(t, f.poll(10, 30), "a claimed run is not handed out again")

		// The next fire is skipped while the run is active…
		f.clock.Set(time.Date(2026, 7, 16, 14, 0, 0, 0, time.UTC))
		rows = f.tick()
		require.Equal(t, "overlap_policy_skip", rows[0].Reason)

		f.clock.Advance(10 * time.Second)
		hb, err := f.svc.Heartbeat(f.ctx, "default", run.ID, w1, 60)
		require.NoError(t, err)
		require.Nil(t, hb.CancelRequestedAt)
		require.Equal(t, f.clock.Now().Add(time.Minute), hb.LeaseExpiresAt.UTC())

		_, err = f.svc.CompleteRun(f.ctx, "default", run.ID, scheduling.LeaseHolder{WorkerID: "w2"}, nil)
		var held *scheduling.ConflictError
		require.ErrorAs(t, err, &held, "another worker may not finish a run it does not hold")
		require.Equal(t, "run_held_by_another_worker", held.Code)

		done, err := f.svc.CompleteRun(f.ctx, "default", run.ID, w1, json.RawMessage(`{"invoices":42}`))
		require.NoError(t, err)
		require.Equal(t, models.RunCompleted, done.Status)
		_, err = f.svc.CompleteRun(f.ctx, "default", run.ID, w1, nil)
		var c *scheduling.ConflictError
		require.ErrorAs(t, err, &c, "completing twice")
		require.Equal(t, "run_not_running", c.Code)
		_, err = f.svc.CompleteRun(f.ctx, "other", run.ID, w1, nil)
		require.ErrorIs(t, err, scheduling.ErrNotFound, "another namespace's run is not found")

		// …and the following one starts again once the run completed.
		f.clock.Set(time.Date(2026, 7, 16, 15, 0, 0, 0, time.UTC))
		rows = f.tick()
		require.Equal(t, "triggered", rows[0].Outcome)

		d, err := f.svc.DescribeRun(f.ctx, "default", run.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"invoices":42}`, string(d.Run.Output))
		require.Equal(t, []string{"ScheduleTriggered", "RunStarted", "RunCompleted"}, runEventTypes(t, f, run.ID))
		var byInstance models.Run
		require.NoError(t, db.NewSelect().Model(&byInstance).Where("instance_id = ?", run.InstanceID).Scan(f.ctx))
		require.Equal(t, run.ID, byInstance.ID, "the instance is its run")
		require.Equal(t, models.RunCompleted, byInstance.Status)
	})
}

func TestLeasesTimeoutsCancelAndTerminate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("many", "0 0 1 1 *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		in.Action.RunTimeoutSeconds = ptr[int64](300)
		f.create(in)
		var ids []string
		for range 4 {
			res, err := f.svc.Trigger(f.ctx, "default", "many", "", nil)
			require.NoError(t, err)
			ids = append(ids, res.RunID)
			f.clock.Advance(time.Millisecond)
		}
		claimed := f.poll(3, 30)
		require.Len(t, claimed, 3) // ids[0..2] running, ids[3] pending
		expire := func() int {
			n, err := f.svc.EnforceDeadlines(f.ctx, 100)
			require.NoError(t, err)
			return n
		}

		_, err := f.svc.CancelRun(f.ctx, "default", ids[1], &scheduling.CommandContext{Actor: "alice"})
		require.NoError(t, err)
		_, err = f.svc.TerminateRun(f.ctx, "default", ids[2], nil)
		require.NoError(t, err)
		require.Equal(t, models.RunTerminated, f.run(ids[2]).Status, "terminate is immediate")
		require.Equal(t, models.RunRunning, f.run(ids[1]).Status, "cancel is a request")

		// Keep run 1 alive past the lease; run 0 stops heartbeating.
		f.clock.Advance(20 * time.Second)
		hb, err := f.svc.Heartbeat(f.ctx, "default", ids[1], w1, 120)
		require.NoError(t, err)
		require.NotNil(t, hb.CancelRequestedAt, "the worker learns about the cancellation")
		f.clock.Advance(15 * time.Second)
		require.Equal(t, 1, expire())
		r0 := f.run(ids[0])
		require.Equal(t, models.RunFailed, r0.Status)
		require.Equal(t, "worker_lost", *r0.FailureType)

		// Run 1 ignores the request: cancelled after the 60 s grace period.
		f.clock.Advance(20 * time.Second)
		require.Zero(t, expire())
		f.clock.Advance(time.Minute)
		require.Equal(t, 1, expire())
		require.Equal(t, models.RunCancelled, f.run(ids[1]).Status)
		require.Equal(t, []string{"ScheduleTriggered", "RunStarted", "RunCancelRequested", "RunCancelled"}, runEventTypes(t, f, ids[1]))

		// The pending run times out at its 300 s run deadline.
		f.clock.Set(t0.Add(301 * time.Second))
		require.Equal(t, 1, expire())
		require.Equal(t, models.RunTimedOut, f.run(ids[3]).Status)

		_, err = f.svc.TerminateRun(f.ctx, "default", ids[3], nil)
		var c *scheduling.ConflictError
		require.ErrorAs(t, err, &c)
		require.Equal(t, "run_not_running", c.Code)
	})
}

func TestWorkerReportsCancellation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLite(t))
	f.create(cronInput("c", "0 0 1 1 *"))
	res, err := f.svc.Trigger(f.ctx, "default", "c", "", nil)
	require.NoError(t, err)
	require.Len(t, f.poll(1, 30), 1)
	_, err = f.svc.CancelRun(f.ctx, "default", res.RunID, nil)
	require.NoError(t, err)
	run, err := f.svc.FailRun(f.ctx, "default", res.RunID, w1, scheduling.Failure{Message: "stopped on request", Type: "cancelled"})
	require.NoError(t, err)
	require.Equal(t, models.RunCancelled, run.Status)
}

// Concurrent pollers never receive the same run.
func TestClaimsAreExclusiveUnderConcurrentPollers(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	f := newFixture(t, db)
	in := cronInput("fan", "0 * * * *")
	in.OverlapPolicy = scheduling.OverlapAllowAll
	f.create(in)
	const total = 200
	rep, err := f.svc.Backfill(f.ctx, "default", "fan", scheduling.BackfillInput{From: t0, To: t0.Add(total * time.Hour), OverlapPolicy: "allow_all"})
	require.NoError(t, err)
	require.Equal(t, total, rep.Occurrences)

	const pollers = 8
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for p := range pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				runs, err := f.svc.Poll(f.ctx, scheduling.PollRequest{Namespace: "default", Limit: 3, LeaseSeconds: 30, WorkerID: fmt.Sprint("p", p)})
				if err != nil {
					t.Error(err)
					return
				}
				if len(runs) == 0 {
					return
				}
				mu.Lock()
				for _, r := range runs {
					seen[r.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, seen, total)
	for id, n := range seen {
		require.Equal(t, 1, n, id)
	}
}

// The execution deadline ends a run however it is doing, and the sweep
// finds it among many waiting runs without a deadline of their own.
func TestExecutionDeadlineTimesOutAmongWaitingRuns(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		waiting := cronInput("waiting", "0 0 1 1 *")
		waiting.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(waiting)
		bounded := cronInput("bounded", "0 0 1 1 *")
		bounded.Action.ExecutionTimeoutSeconds = ptr[int64](60)
		f.create(bounded)
		for range 20 {
			_, err := f.svc.Trigger(f.ctx, "default", "waiting", "", nil)
			require.NoError(t, err)
			f.clock.Advance(time.Millisecond)
		}
		res, err := f.svc.Trigger(f.ctx, "default", "bounded", "", nil)
		require.NoError(t, err)

		f.clock.Advance(59 * time.Second)
		n, err := f.svc.EnforceDeadlines(f.ctx, 100)
		require.NoError(t, err)
		require.Zero(t, n)
		f.clock.Advance(time.Second)
		n, err = f.svc.EnforceDeadlines(f.ctx, 100)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, models.RunTimedOut, f.run(res.RunID).Status)
		require.Equal(t, []string{"ScheduleTriggered", "RunTimedOut"}, runEventTypes(t, f, res.RunID))
		active, err := f.svc.ListRuns(f.ctx, scheduling.RunListFilter{Namespace: "default", Statuses: []string{models.RunPending}, Limit: 100})
		require.NoError(t, err)
		require.Len(t, active.Runs, 20, "the waiting runs are untouched")
	})
}

// w1 is the lease holder of runs the fixture's poll claims.
var w1 = scheduling.LeaseHolder{WorkerID: "w1"}
