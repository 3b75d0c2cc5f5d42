// Package maintenance runs housekeeping apart from the work it keeps
// healthy. Each task is a small service with its own period, its own error
// handling and its own goroutine: a task that fails is logged, reported
// (metrics) and tried again on its next period, and a task that is slow or
// stuck holds up nobody but itself. The scheduler's fire loop therefore
// only claims and fires; resuming timed pauses, folding health, pausing
// failing schedules, run deadlines, retention and the database's upkeep
// are tasks here (scheduling/housekeeping.go lists them).
//
// The package knows nothing of schedules: a task is a name, a period and a
// function. Time comes from the caller (Now and Sleep), so a test drives
// the tasks with a fake clock, or runs them one at a time with RunOne.
package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Task is one housekeeping job. R is what a run reports besides its error
// (how many rows it touched, say), handed to the Runner's observer.
type Task[R any] struct {
	// Name identifies the task in logs and metrics (snake_case).
	Name string
	// Every is the wait between the end of one run and the start of the
	// next; a run that fails waits the same period (its retry).
	Every time.Duration
	// Rest, when set, replaces Every after a run that succeeded and that
	// Idle says found nothing to do: a task whose work comes slowly (rows
	// growing old) need not look for it every period when it has none,
	// and goes on every period while it has a backlog.
	Rest time.Duration
	Idle func(R) bool
	// Run does one bounded unit of work.
	Run func(ctx context.Context) (R, error)
}

// Report is what one run of a task did.
type Report[R any] struct {
	Task   string
	Result R
	Took   time.Duration
	Err    error
}

// Runner runs tasks. Its zero value is not usable: Now and Sleep are
// required.
type Runner[R any] struct {
	Tasks []Task[R]
	// Now reads the clock the periods are measured on.
	Now func() time.Time
	// Sleep waits d by that clock, or until ctx ends; it reports whether
	// ctx is still live.
	Sleep  func(ctx context.Context, d time.Duration) bool
	Logger *slog.Logger
	// Before, when set, runs before each run of a task; an error it
	// returns fails that run without calling the task. It is the fault
	// injection point of tests (an error, or a block until released), and
	// nil in production.
	Before func(ctx context.Context, task string) error
	// OnRun, when set, observes every run (metrics, test signals). It is
	// called from the task's goroutine and must not block for long.
	OnRun func(Report[R])
	// Failed, when set, reports a failed run instead of the ERROR line
	// the runner logs itself (the loop logs an unavailable database once
	// per outage, whichever part meets it).
	Failed func(task string, err error)
}

// RunOne runs task once, now: the hook, the task, a panic turned into an
// error, the log line and the report. It returns the report.
func (r *Runner[R]) RunOne(ctx context.Context, task Task[R]) Report[R] {
	started := r.Now()
	rep := Report[R]{Task: task.Name}
	rep.Result, rep.Err = r.call(ctx, task)
	rep.Took = r.Now().Sub(started)
	if rep.Err != nil && ctx.Err() == nil && r.Failed != nil {
		r.Failed(task.Name, rep.Err)
	} else if rep.Err != nil && ctx.Err() == nil {
		r.logger().Error("maintenance task failed; it runs again next period", "task", task.Name, "every", task.Every, "err", rep.Err)
	}
	if r.OnRun != nil && ctx.Err() == nil {
		r.OnRun(rep)
	}
	return rep
}

// call runs the hook and the task; a panic in either becomes the run's
// error, so one bad task cannot take the process down with it.
func (r *Runner[R]) call(ctx context.Context, task Task[R]) (res R, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("run %s: panic: %v", task.Name, p)
		}
	}()
	if r.Before != nil {
		if err := r.Before(ctx, task.Name); err != nil {
			return res, fmt.Errorf("run %s: %w", task.Name, err)
		}
	}
	res, err = task.Run(ctx)
	if err != nil {
		err = fmt.Errorf("run %s: %w", task.Name, err)
	}
	return res, err
}

// Start runs every task in a goroutine of its own until ctx ends: at
// once, then every period after the end of its last run. The returned
// function waits for the goroutines to end (after ctx is cancelled).
func (r *Runner[R]) Start(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for _, task := range r.Tasks {
		every := task.Every
		if every <= 0 {
			every = time.Second
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				rep := r.RunOne(ctx, task)
				wait := every
				if task.Rest > 0 && rep.Err == nil && task.Idle != nil && task.Idle(rep.Result) {
					wait = task.Rest
				}
				if !r.Sleep(ctx, wait) {
					return
				}
			}
		})
	}
	return wg.Wait
}

func (r *Runner[R]) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}
