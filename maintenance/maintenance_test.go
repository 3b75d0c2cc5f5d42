package maintenance_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/maintenance"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

func runner(clock *schedtest.Clock, tasks ...maintenance.Task[int]) *maintenance.Runner[int] {
	return &maintenance.Runner[int]{
		Tasks: tasks, Now: clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) bool {
			t := clock.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return false
			case <-t.C():
				return true
			}
		},
	}
}

// A task's error, its panic and the hook's error each come back as the
// run's error, named after the task; nothing escapes the runner.
func TestRunOneKeepsFailuresToTheRun(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC))
	boom := errors.New("boom")
	cases := map[string]maintenance.Task[int]{
		"error": {Name: "erring", Run: func(context.Context) (int, error) { return 3, boom }},
		"panic": {Name: "panicking", Run: func(context.Context) (int, error) { panic("bad row") }},
	}
	r := runner(clock)
	var seen []maintenance.Report[int]
	r.OnRun = func(rep maintenance.Report[int]) { seen = append(seen, rep) }
	rep := r.RunOne(t.Context(), cases["error"])
	require.ErrorIs(t, rep.Err, boom)
	require.EqualError(t, rep.Err, "run erring: boom")
	require.Equal(t, 3, rep.Result, "what the failed run did is still reported")
	rep = r.RunOne(t.Context(), cases["panic"])
	require.EqualError(t, rep.Err, "run panicking: panic: bad row")

	called := false
	r.Before = func(context.Context, string) error { return boom }
	rep = r.RunOne(t.Context(), maintenance.Task[int]{Name: "hooked", Run: func(context.Context) (int, error) { called = true; return 0, nil }})
	require.EqualError(t, rep.Err, "run hooked: boom")
	require.False(t, called, "a failing hook fails the run without calling the task")
	require.Len(t, seen, 3, "every run is reported")
}

// Started tasks are independent: one hung for good does not keep another
// from running on its period, and each failed run is retried on it.
func TestStartedTasksRunApart(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	runs := make(chan time.Time, 10)
	r := runner(clock,
		maintenance.Task[int]{Name: "hung", Every: time.Second, Run: func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}},
		maintenance.Task[int]{Name: "flaky", Every: time.Minute, Run: func(context.Context) (int, error) {
			runs <- clock.Now()
			return 0, errors.New("flaky")
		}},
	)
	wait := r.Start(ctx)
	at := func() time.Time { return nextRun(ctx, t, runs, "the flaky task") }
	first := at()
	for i := 1; i <= 3; i++ {
		clock.WaitTimers(1) // the flaky task waits out its period
		clock.Advance(time.Minute)
		require.Equal(t, first.Add(time.Duration(i)*time.Minute), at(), "run %d, one period after the last", i)
	}
	cancel()
	wait() // the hung task ends with its context
}

// A task with a Rest waits it after a run that Idle calls idle, and its
// period after one that found work or failed.
func TestRestAfterAnIdleRun(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// What each run reports: work found, nothing, a failure, nothing.
	script := []struct {
		found int
		err   error
	}{{2, nil}, {0, nil}, {0, errors.New("down")}, {0, nil}, {0, nil}}
	runs := make(chan time.Time, len(script))
	n := 0
	r := runner(clock, maintenance.Task[int]{Name: "sweep", Every: time.Second, Rest: time.Minute,
		Idle: func(found int) bool { return found == 0 },
		Run: func(context.Context) (int, error) {
			step := script[min(n, len(script)-1)]
			n++
			runs <- clock.Now()
			return step.found, step.err
		}})
	wait := r.Start(ctx)
	at := func() time.Time { return nextRun(ctx, t, runs, "the task") }
	last := at()
	for i, want := range []time.Duration{time.Second, time.Minute, time.Second, time.Minute} {
		clock.WaitTimers(1)
		if want == time.Minute {
			clock.Advance(time.Second) // a period is not enough after an idle run
			clock.WaitTimers(1)
			select {
			case <-runs:
				t.Fatalf("run %d came a period after an idle run, not after the rest", i+2)
			default:
			}
			clock.Advance(want - time.Second)
		} else {
			clock.Advance(want)
		}
		next := at()
		require.Equal(t, last.Add(want), next, "run %d", i+2)
		last = next
	}
	cancel()
	wait()
}

// nextRun waits for a task's next run and returns when, by the fake
// clock, it ran.
func nextRun(ctx context.Context, t *testing.T, runs <-chan time.Time, task string) time.Time {
	t.Helper()
	select {
	case at := <-runs:
		return at
	case <-ctx.Done():
		t.Fatalf("%s did not run", task)
		return time.Time{}
	}
}
