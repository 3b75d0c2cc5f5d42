package scheduling_test

import (
	"encoding/json"
	"errors"
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

// Issue 37, major 6: a failed run whose attempts are spent is retried as
// the same run — pending again with the next attempt number, claimable
// at once, the retry in its history with who asked — and a failure of
// that attempt ends it again (the policy's attempts stay spent). A run
// that did not fail is refused.
func TestRetryRunGivesOneMoreAttempt(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		runID := f.retrying("once", policy(1, 1, 1, 1))
		require.Equal(t, models.RunFailed, f.failOnce(runID, "io").Status)

		cc := &scheduling.CommandContext{Source: "ui", Actor: "ops", Reason: "the disk is back"}
		run, err := f.svc.RetryRun(f.ctx, "default", runID, cc)
		require.NoError(t, err)
		require.Equal(t, models.RunPending, run.Status)
		require.Equal(t, 2, run.Attempt, "a pending run names the attempt it runs next")
		require.Nil(t, run.FinishedAt)
		events := runEventTypes(t, f, runID)
		require.Equal(t, scheduling.RunEventRetried, events[len(events)-1])
		d, err := f.svc.DescribeRun(f.ctx, "default", runID)
		require.NoError(t, err)
		var p map[string]any
		require.NoError(t, json.Unmarshal(d.Events[len(d.Events)-1].Payload, &p))
		require.Equal(t, map[string]any{"attempt": float64(2), "after": "failed", "source": "ui", "actor": "ops", "reason": "the disk is back"}, p)

		_, err = f.svc.RetryRun(f.ctx, "default", runID, nil)
		var conflict *scheduling.ConflictError
		require.True(t, errors.As(err, &conflict), "a pending run is not retried: %v", err)
		require.Equal(t, scheduling.CodeRunNotRetryable, conflict.Code)

		f.clock.Advance(time.Second)
		again := f.failOnce(runID, "io") // claimable at once, no backoff
		require.Equal(t, models.RunFailed, again.Status, "the policy's attempts stay spent")
		require.Equal(t, 2, again.Attempt)

		_, err = f.svc.RetryRun(f.ctx, "other", runID, nil)
		var nf *scheduling.NotFoundError
		require.True(t, errors.As(err, &nf), "another namespace's run is not found: %v", err)
	})
}

// "Run this occurrence again" starts a new manual run of the schedule with
// the input of the run it repeats, even after the action's input changed.
func TestRunAgainRepeatsTheRunsInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		runID := f.retrying("again", policy(1, 1, 1, 1), func(in *scheduling.CreateInput) {
			in.OverlapPolicy = scheduling.OverlapAllowAll
		})
		f.failOnce(runID, "io")
		_, err := f.svc.Update(f.ctx, "default", "again", scheduling.UpdateInput{Action: &models.Action{WorkflowType: "invoice-sync", Input: json.RawMessage(`{"region":"us"}`)}}, nil)
		require.NoError(t, err)

		res, err := f.svc.RunAgain(f.ctx, "default", runID, &scheduling.CommandContext{Source: "api", Actor: "ops"})
		require.NoError(t, err)
		require.Equal(t, scheduling.OutcomeTriggered, res.Outcome)
		require.NotEqual(t, runID, res.RunID)
		fresh, err := f.svc.GetRun(f.ctx, "default", res.RunID)
		require.NoError(t, err)
		require.JSONEq(t, `{"region": "eu"}`, string(fresh.Input), "the repeated run's input, not the action's now")
		require.Equal(t, "manual", fresh.Trigger)
		require.Equal(t, 1, fresh.Attempt)
	})
}

// Retry all matching: the failed and timed-out runs of a filter, bounded,
// in one transaction; other statuses are left alone and refused as a filter.
func TestRetryMatchingRetriesTheFailedOnes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		var failed []string
		for _, id := range []string{"m1", "m2", "m3"} {
			runID := f.retrying(id, policy(1, 1, 1, 1))
			f.failOnce(runID, "io")
			failed = append(failed, runID)
		}
		pending := f.retrying("m4", nil)

		n, more, err := f.svc.RetryMatching(f.ctx, scheduling.RunListFilter{Namespace: "default", ScheduleID: "m2"}, nil)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.False(t, more)
		n, _, err = f.svc.RetryMatching(f.ctx, scheduling.RunListFilter{Namespace: "default", Statuses: []string{"failed"}}, nil)
		require.NoError(t, err)
		require.Equal(t, 2, n, "m1 and m3; m2 is pending again")
		for _, id := range failed {
			run, err := f.svc.GetRun(f.ctx, "default", id)
			require.NoError(t, err)
			require.Equal(t, models.RunPending, run.Status)
		}
		run, err := f.svc.GetRun(f.ctx, "default", pending)
		require.NoError(t, err)
		require.Equal(t, 1, run.Attempt, "a pending run is not touched")

		_, _, err = f.svc.RetryMatching(f.ctx, scheduling.RunListFilter{Namespace: "default", Statuses: []string{"completed"}}, nil)
		var ve *scheduling.ValidationError
		require.True(t, errors.As(err, &ve), "%v", err)
	})
}

// Many operators retry the same failed run at once on PostgreSQL, from two
// replicas: exactly one retry wins, the rest are refused, and the history
// holds one RunRetried.
func TestRetryRunOnceUnderConcurrencyPostgres(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	services := replicas(t, 2, clock)
	f := &fixture{t: t, db: nil, clock: clock, svc: services[0], ctx: t.Context()}
	runID := f.retrying("contended", policy(1, 1, 1, 1))
	f.failOnce(runID, "io")

	var wg sync.WaitGroup
	var mu sync.Mutex
	won, refused := 0, 0
	for i := range 16 {
		svc := services[i%2]
		wg.Go(func() {
			_, err := svc.RetryRun(t.Context(), "default", runID, nil)
			mu.Lock()
			defer mu.Unlock()
			var conflict *scheduling.ConflictError
			switch {
			case err == nil:
				won++
			case errors.As(err, &conflict) && conflict.Code == scheduling.CodeRunNotRetryable:
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, won)
	require.Equal(t, 15, refused)
	retried := 0
	for _, e := range runEventTypes(t, f, runID) {
		if e == scheduling.RunEventRetried {
			retried++
		}
	}
	require.Equal(t, 1, retried)
}
