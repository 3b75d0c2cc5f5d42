package scheduling

import (
	"context"
	"errors"
	"time"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/maintenance"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/retention"
)

// The loop's housekeeping tasks (the "task" label of the maintenance
// metrics). Each runs apart from the fires (package maintenance): in a
// served loop on a goroutine and period of its own; in RunOnce around the
// tick, each failure kept to itself.
const (
	TaskResumeTimedPauses = "resume_timed_pauses"   // ResumeDue
	TaskFoldHealth        = "fold_health"           // FoldHealth
	TaskPauseFailing      = "pause_failing"         // PauseFailing
	TaskEnforceDeadlines  = "enforce_deadlines"     // EnforceDeadlines
	TaskRetention         = "retention"             // Retain (and its vacuum of the swept tables)
	TaskCompactAudit      = "compact_audit"         // Compact: fire and skip events older than KeepRuns
	TaskOptimize          = "optimize"              // Dialect.Optimize
	TaskVacuumDueQueue    = "vacuum_due_queue"      // models.VacuumDueQueue
	TaskVacuumHealth      = "vacuum_health"         // models.VacuumHealth
	TaskVacuumRing        = "vacuum_recent_actions" // models.VacuumRecentActions
)

// optimizeEvery is how often the loop refreshes SQLite's statistics.
const optimizeEvery = time.Hour

// vacuumEvery is how often the loop vacuums the due queue, which takes a
// new row version per fire (models.VacuumDueQueue): at 10,000 fires a
// minute, a minute's worth is ~1 MB the next minute's fires reuse.
const vacuumEvery = time.Minute

// retentionRest is how long retention waits after a pass that deleted
// nothing before it looks again (in a served loop; RunOnce runs it every
// time). Runs become old enough at the rate they finished, --retain-runs
// earlier (at least an hour), so a minute more is nothing to what is kept,
// while looking every period was two statements a second on a database
// with nothing to delete.
const retentionRest = time.Minute

func deletedNothing(res LoopResult) bool { return res.Deleted == models.DeletedRows{} }

// housekeeping lists the loop's tasks. beforeFire and afterFire run every
// period (and in RunOnce before and after the tick, the order the domain
// rules were written for: a timed pause that ended fires this pass, a
// failing schedule is paused before it fires again); upkeep is the
// database's, on periods of its own, in a served loop only.
func (l *Loop) housekeeping(limit int, period time.Duration) (beforeFire, afterFire, upkeep []maintenance.Task[LoopResult]) {
	svc := l.Service
	l.sweeperOnce.Do(func() { l.sweeper = retention.New(svc.db, svc.clock.Now) })
	beforeFire = []maintenance.Task[LoopResult]{
		{Name: TaskResumeTimedPauses, Every: period, Run: func(ctx context.Context) (LoopResult, error) {
			resumed, err := svc.ResumeDue(ctx, limit)
			return LoopResult{Resumed: resumed}, err
		}},
		{Name: TaskFoldHealth, Every: period, Run: func(ctx context.Context) (LoopResult, error) {
			_, err := svc.FoldHealth(ctx, limit)
			return LoopResult{}, err
		}},
		{Name: TaskPauseFailing, Every: period, Run: func(ctx context.Context) (LoopResult, error) {
			paused, err := svc.PauseFailing(ctx, limit)
			return LoopResult{Paused: paused}, err
		}},
	}
	afterFire = []maintenance.Task[LoopResult]{
		{Name: TaskEnforceDeadlines, Every: period, Run: func(ctx context.Context) (LoopResult, error) {
			expired, err := svc.EnforceDeadlines(ctx, limit)
			return LoopResult{Expired: expired}, err
		}},
		{Name: TaskRetention, Every: period, Rest: retentionRest, Idle: deletedNothing, Run: func(ctx context.Context) (LoopResult, error) {
			deleted, err := l.sweeper.Retain(ctx, l.Retention)
			return LoopResult{Deleted: deleted}, err
		}},
		{Name: TaskCompactAudit, Every: period, Run: func(ctx context.Context) (LoopResult, error) {
			deleted, err := l.sweeper.Compact(ctx, l.Retention)
			return LoopResult{Deleted: deleted}, err
		}},
	}
	upkeep = []maintenance.Task[LoopResult]{
		// SQLite's planner needs statistics as the tables grow (see
		// Dialect.Optimize); at start, then once an hour.
		{Name: TaskOptimize, Every: optimizeEvery, Run: func(ctx context.Context) (LoopResult, error) {
			return LoopResult{}, database.Of(svc.db).Optimize(ctx, svc.db)
		}},
		{Name: TaskVacuumDueQueue, Every: vacuumEvery, Run: func(ctx context.Context) (LoopResult, error) {
			return LoopResult{}, models.VacuumDueQueue(ctx, svc.db)
		}},
		{Name: TaskVacuumHealth, Every: vacuumEvery, Run: func(ctx context.Context) (LoopResult, error) {
			return LoopResult{}, models.VacuumHealth(ctx, svc.db)
		}},
		{Name: TaskVacuumRing, Every: vacuumEvery, Run: func(ctx context.Context) (LoopResult, error) {
			return LoopResult{}, models.VacuumRecentActions(ctx, svc.db)
		}},
	}
	return beforeFire, afterFire, upkeep
}

// runner is the maintenance runner of the loop's tasks, reporting to
// OnTask and faulted by BeforeTask.
func (l *Loop) runner(tasks []maintenance.Task[LoopResult]) *maintenance.Runner[LoopResult] {
	return &maintenance.Runner[LoopResult]{
		Tasks:  tasks,
		Now:    l.Service.clock.Now,
		Sleep:  func(ctx context.Context, d time.Duration) bool { return sleep(ctx, l.Service.clock, d) },
		Logger: l.Logger,
		Before: l.BeforeTask,
		OnRun:  l.OnTask,
		Failed: func(task string, err error) {
			l.failed(l.logger(), "maintenance task failed; it runs again next period", err, "task", task)
		},
	}
}

// runTasks runs tasks one after another into res; a failure is kept and
// the next task still runs.
func (l *Loop) runTasks(ctx context.Context, r *maintenance.Runner[LoopResult], tasks []maintenance.Task[LoopResult], res *LoopResult) error {
	var errs []error
	for _, task := range tasks {
		rep := r.RunOne(ctx, task)
		res.merge(rep.Result)
		if rep.Err != nil {
			errs = append(errs, rep.Err)
		}
	}
	return errors.Join(errs...)
}

// merge adds what one task reported.
func (res *LoopResult) merge(part LoopResult) {
	res.Rows = append(res.Rows, part.Rows...)
	res.Expired += part.Expired
	res.Paused = append(res.Paused, part.Paused...)
	res.Resumed = append(res.Resumed, part.Resumed...)
	res.Deleted.Add(part.Deleted)
}
