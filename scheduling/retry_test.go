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
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// retrying creates a manual-only schedule whose action has the policy and
// triggers it once, returning the run ID.
func (f *fixture) retrying(id string, policy *models.RetryPolicy, mutate ...func(*scheduling.CreateInput)) string {
	f.t.Helper()
	in := cronInput(id, "0 0 1 1 *")
	in.Action.RetryPolicy = policy
	for _, m := range mutate {
		m(&in)
	}
	f.create(in)
	res, err := f.svc.Trigger(f.ctx, "default", id, "", nil)
	require.NoError(f.t, err)
	require.Equal(f.t, scheduling.OutcomeTriggered, res.Outcome)
	return res.RunID
}

// failOnce claims the run (which must be available) and fails it.
func (f *fixture) failOnce(runID, errorType string) *models.Run {
	f.t.Helper()
	runs := f.poll(1, 30)
	require.Len(f.t, runs, 1, "the run is available")
	require.Equal(f.t, runID, runs[0].ID)
	run, err := f.svc.FailRun(f.ctx, "default", runID, w1, scheduling.Failure{Message: "boom " + fmt.Sprint(runs[0].Attempt), Type: errorType})
	require.NoError(f.t, err)
	return run
}

func policy(attempts int, initial int64, coefficient float64, maxInterval int64, nonRetryable ...string) *models.RetryPolicy {
	return &models.RetryPolicy{MaxAttempts: &attempts, InitialIntervalSeconds: &initial, BackoffCoefficient: &coefficient,
		MaxIntervalSeconds: &maxInterval, NonRetryableErrorTypes: nonRetryable}
}

// A failed attempt sends the same run back to pending, not claimable before
// initial × coefficient^(attempt−1) (capped); the last attempt's failure is
// final, and every attempt's end is a RunAttemptFailed event.
func TestRetryBackoffSequenceWithCap(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		runID := f.retrying("flaky", policy(5, 2, 3, 10))
		wantDelays := []time.Duration{2 * time.Second, 6 * time.Second, 10 * time.Second, 10 * time.Second}
		for i, delay := range wantDelays {
			run := f.failOnce(runID, "io")
			require.Equal(t, models.RunPending, run.Status, "attempt %d is retried", i+1)
			require.Equal(t, i+2, run.Attempt, "a run sent back names its next attempt (SPEC §10)")
			require.True(t, f.clock.Now().Add(delay).Equal(*run.AvailableAt), "attempt %d: available at %v, want now+%v", i+1, run.AvailableAt, delay)
			f.clock.Advance(delay - time.Millisecond)
			require.Empty(t, f.poll(1, 30), "attempt %d: not handed out before available_at", i+1)
			f.clock.Advance(time.Millisecond)
		}
		run := f.failOnce(runID, "io")
		require.Equal(t, models.RunFailed, run.Status, "the fifth attempt was the last")
		require.Equal(t, 5, run.Attempt)
		require.Equal(t, []string{"ScheduleTriggered",
			"RunStarted", "RunAttemptFailed", "RunStarted", "RunAttemptFailed", "RunStarted", "RunAttemptFailed",
			"RunStarted", "RunAttemptFailed", "RunStarted", "RunAttemptFailed", "RunFailed"}, runEventTypes(t, f, runID))

		d, err := f.svc.DescribeRun(f.ctx, "default", runID)
		require.NoError(t, err)
		require.Len(t, d.Attempts, 5)
		for i, a := range d.Attempts {
			require.Equal(t, i+1, a.Number)
			require.Equal(t, "w1", a.WorkerID)
			require.Equal(t, "failed", a.Outcome)
			require.Equal(t, "io", a.ErrorType)
			require.Equal(t, fmt.Sprintf("boom %d", i+1), a.Message)
		}
		var last map[string]any
		require.NoError(t, json.Unmarshal(d.Events[len(d.Events)-2].Payload, &last))
		require.Equal(t, map[string]any{"attempt": 5.0, "error_type": "io", "message": "boom 5", "next_attempt_at": nil}, last)

		sch := f.get("flaky")
		require.EqualValues(t, 1, sch.Health.FailuresCount, "one run failed, whatever its attempts")
		require.EqualValues(t, 1, sch.Health.ConsecutiveFailures)
		require.Equal(t, runID, *sch.Health.LastRunID)
		require.Equal(t, "boom 5", *sch.Health.LastRunError)
	})
}

// Non-retryable error types, the execution deadline, cancellation and
// termination end a run for good; lost leases and run timeouts are failed
// attempts and retried.
func TestRetryEnds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)

		runID := f.retrying("fatal", policy(5, 1, 2, 100, "validation"))
		require.Equal(t, models.RunFailed, f.failOnce(runID, "validation").Status, "non-retryable")

		runID = f.retrying("deadline", policy(5, 10, 2, 100), func(in *scheduling.CreateInput) {
			in.Action.ExecutionTimeoutSeconds = ptr[int64](9)
		})
		require.Equal(t, models.RunFailed, f.failOnce(runID, "io").Status, "the next attempt (in 10 s) would start after the execution deadline (9 s)")

		runID = f.retrying("lease", policy(2, 1, 2, 100))
		require.Len(t, f.poll(1, 5), 1)
		f.clock.Advance(5 * time.Second)
		_, err := f.svc.EnforceDeadlines(f.ctx, 10)
		require.NoError(t, err)
		run := f.run(runID)
		require.Equal(t, models.RunPending, run.Status, "a lost lease is a failed attempt")
		require.Equal(t, "worker_lost", *run.FailureType)
		require.Nil(t, run.WorkerID, "the next attempt is anyone's")
		f.clock.Advance(time.Second)
		require.Equal(t, models.RunFailed, f.failOnce(runID, "io").Status, "two attempts in all")

		runID = f.retrying("slow", policy(2, 1, 2, 100), func(in *scheduling.CreateInput) {
			in.Action.RunTimeoutSeconds = ptr[int64](60)
		})
		require.Len(t, f.poll(1, 3600), 1)
		f.clock.Advance(60 * time.Second)
		_, err = f.svc.EnforceDeadlines(f.ctx, 10)
		require.NoError(t, err)
		run = f.run(runID)
		require.Equal(t, models.RunPending, run.Status, "a run timeout is a failed attempt")
		require.Equal(t, "timed_out", *run.FailureType)
		require.True(t, run.AvailableAt.Add(60*time.Second).Equal(*run.RunDeadlineAt), "the next attempt gets its own run deadline")
		f.clock.Advance(time.Second)
		require.Len(t, f.poll(1, 3600), 1)
		f.clock.Advance(60 * time.Second)
		_, err = f.svc.EnforceDeadlines(f.ctx, 10)
		require.NoError(t, err)
		require.Equal(t, models.RunTimedOut, f.run(runID).Status, "the last attempt's timeout is the run's")

		// Waiting for its next attempt, a run is active: skip skips, and a
		// cancel ends it at once.
		runID = f.retrying("waiting", policy(3, 30, 2, 100))
		require.Equal(t, models.RunPending, f.failOnce(runID, "io").Status)
		res, err := f.svc.Trigger(f.ctx, "default", "waiting", "", nil)
		require.NoError(t, err)
		require.Equal(t, "overlap_policy_skip", res.Reason, "a run waiting to retry is active")
		_, err = f.svc.CancelRun(f.ctx, "default", runID, nil)
		require.NoError(t, err)
		require.Equal(t, models.RunCancelled, f.run(runID).Status)
		f.clock.Advance(time.Minute)
		require.Empty(t, f.poll(1, 30), "a cancelled run never retries")

		// terminate_other ends a run waiting to retry and starts the new one.
		runID = f.retrying("replace", policy(3, 30, 2, 100), func(in *scheduling.CreateInput) {
			in.OverlapPolicy = scheduling.OverlapTerminateOther
		})
		require.Equal(t, models.RunPending, f.failOnce(runID, "io").Status)
		res, err = f.svc.Trigger(f.ctx, "default", "replace", "", nil)
		require.NoError(t, err)
		require.Equal(t, scheduling.OutcomeTriggered, res.Outcome)
		require.Equal(t, models.RunTerminated, f.run(runID).Status)
	})
}

// Health follows every way a run ends, and pause_after_failures pauses the
// schedule as the scheduler once the count is reached — again only after a
// further failure once resumed; a completed run resets the count.
func TestHealthAndPauseOnFailure(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("fragile", "0 0 1 1 *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		in.PauseAfterFailures = ptr(2)
		f.create(in)
		loop := &scheduling.Loop{Service: f.svc}
		fail := func() {
			t.Helper()
			res, err := f.svc.Trigger(f.ctx, "default", "fragile", "", nil)
			require.NoError(t, err)
			f.failOnce(res.RunID, "io")
		}

		fail()
		res, err := loop.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Empty(t, res.Paused, "one failure of two")
		fail()
		res, err = loop.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"default/fragile"}, res.Paused)
		sch := f.get("fragile")
		require.Equal(t, models.StatusPaused, sch.Status)
		require.Equal(t, "paused after 2 consecutive failed runs; last error: boom 1", *sch.PauseReason)
		require.Equal(t, "scheduler", *sch.PausedBy)
		ev := f.events("fragile")
		paused := ev[len(ev)-1]
		require.Equal(t, scheduling.EventSchedulePaused, paused.EventType)
		require.Equal(t, "scheduler", payload(t, paused)["command_context"].(map[string]any)["source"])

		_, err = f.svc.Resume(f.ctx, "default", "fragile", nil)
		require.NoError(t, err)
		res, err = loop.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Empty(t, res.Paused, "resuming does not pause it again by itself")
		require.EqualValues(t, 2, f.get("fragile").Health.ConsecutiveFailures, "resume resets nothing but the pause")
		fail()
		res, err = loop.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"default/fragile"}, res.Paused, "a further failure pauses it again")
		_, err = f.svc.Resume(f.ctx, "default", "fragile", nil)
		require.NoError(t, err)

		// A completed run resets the count; cancelled and terminated runs
		// are not failures; a timeout is.
		trig, err := f.svc.Trigger(f.ctx, "default", "fragile", "", nil)
		require.NoError(t, err)
		require.Len(t, f.poll(1, 30), 1)
		_, err = f.svc.CompleteRun(f.ctx, "default", trig.RunID, w1, nil)
		require.NoError(t, err)
		h := f.get("fragile").Health
		require.EqualValues(t, 0, h.ConsecutiveFailures)
		require.EqualValues(t, 3, h.FailuresCount)
		require.Equal(t, models.RunCompleted, *h.LastRunStatus)
		require.Nil(t, h.LastRunError)

		trig, err = f.svc.Trigger(f.ctx, "default", "fragile", "", nil)
		require.NoError(t, err)
		_, err = f.svc.TerminateRun(f.ctx, "default", trig.RunID, nil)
		require.NoError(t, err)
		h = f.get("fragile").Health
		require.EqualValues(t, 0, h.ConsecutiveFailures)
		require.Equal(t, models.RunTerminated, *h.LastRunStatus)

		sch = f.get("fragile")
		require.Len(t, sch.Health.RecentRuns, 5)
		require.Equal(t, trig.RunID, sch.Health.RecentRuns[0].RunID, "newest first")
		require.Equal(t, models.RunTerminated, sch.Health.RecentRuns[0].Status)
		require.Equal(t, models.RunCompleted, sch.Health.RecentRuns[1].Status)
	})
}

// Eight workers finish runs of the same schedules while the loop fires
// them, on PostgreSQL: the health counters equal a recount from the runs.
func TestHealthUnderConcurrentWorkers(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	services := replicas(t, 3, clock)
	ctx := t.Context()
	const schedules = 4
	for i := range schedules {
		in := cronInput(fmt.Sprintf("busy-%d", i), "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		_, err := services[0].Create(ctx, in, nil)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := services[w%len(services)]
			holder := scheduling.LeaseHolder{WorkerID: fmt.Sprintf("w%d", w)}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				runs, err := svc.Poll(ctx, scheduling.PollRequest{Namespace: "default", Limit: 2, LeaseSeconds: 3600, WorkerID: holder.WorkerID})
				if err != nil {
					errs <- err
					return
				}
				for i, run := range runs {
					if (n+i+w)%3 == 0 {
						_, err = svc.CompleteRun(ctx, "default", run.ID, holder, nil)
					} else {
						_, err = svc.FailRun(ctx, "default", run.ID, holder, scheduling.Failure{Message: "no", Type: "io"})
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	for minute := 1; minute <= 30; minute++ {
		clock.Set(t0.Add(time.Duration(minute) * time.Minute))
		_, err := (&scheduling.Loop{Service: services[minute%len(services)]}).RunOnce(ctx)
		require.NoError(t, err)
	}
	// Let the workers drain what was fired, then stop them.
	db := services[0].DB()
	require.Eventually(t, func() bool {
		n, err := db.NewSelect().Model((*models.Run)(nil)).Where("status IN (?)", bun.In(models.ActiveRunStatuses)).Count(ctx)
		return err == nil && n == 0
	}, 30*time.Second, 10*time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	for i := range schedules {
		id := fmt.Sprintf("busy-%d", i)
		sch, err := services[0].Get(ctx, "default", id)
		require.NoError(t, err)
		failed, err := db.NewSelect().Model((*models.Run)(nil)).Where("schedule_id = ? AND status = ?", id, models.RunFailed).Count(ctx)
		require.NoError(t, err)
		require.Positive(t, failed)
		require.EqualValues(t, failed, sch.Health.FailuresCount, "%s: failures_count equals a recount", id)
		var last models.Run
		require.NoError(t, db.NewSelect().Model(&last).Where("r.id = ?", *sch.Health.LastRunID).Scan(ctx))
		require.Equal(t, last.Status, *sch.Health.LastRunStatus)
	}

	// Then, one at a time, a completed run and two failures: exactly 2.
	f := &fixture{t: t, db: db, clock: clock, svc: services[0], ctx: ctx}
	for _, complete := range []bool{true, false, false} {
		res, err := f.svc.Trigger(ctx, "default", "busy-0", "", nil)
		require.NoError(t, err)
		require.Len(t, f.poll(1, 30), 1)
		if complete {
			_, err = f.svc.CompleteRun(ctx, "default", res.RunID, w1, nil)
		} else {
			_, err = f.svc.FailRun(ctx, "default", res.RunID, w1, scheduling.Failure{Message: "no", Type: "io"})
		}
		require.NoError(t, err)
	}
	require.EqualValues(t, 2, f.get("busy-0").Health.ConsecutiveFailures)
}
