package scheduling_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
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

func intp(n int) *int { return &n }

// backfillRuns counts the backfilled runs of a schedule and fails on an
// occurrence started twice (impossible by the unique instance key; the
// counts must agree with it).
func backfillRuns(t *testing.T, db *bun.DB, scheduleID string) int {
	t.Helper()
	var runs []models.Run
	require.NoError(t, db.NewSelect().Model(&runs).Where("schedule_id = ? AND trigger = 'backfilled'", scheduleID).Scan(context.Background()))
	seen := map[string]bool{}
	for _, r := range runs {
		require.False(t, seen[r.InstanceID], "instance %s started twice", r.InstanceID)
		seen[r.InstanceID] = true
	}
	return len(runs)
}

// noGuard works jobs whatever fires are due: the tests' clocks stand
// still beside schedules that would be due.
func worker(svc *scheduling.Service) *scheduling.BackfillWorker {
	return &scheduling.BackfillWorker{Service: svc, FireGuard: -1}
}

// A job is accepted at once, its first slice done before the answer, and
// the worker takes it to the end in bounded slices: every occurrence
// started exactly once, the cursor on the last, backfill_finished once.
func TestBackfillJobWorksInSlicesToTheEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		f.svc = scheduling.New(scheduling.Config{DB: db, Clock: f.clock, Rand: schedtest.Rand{},
			Logger: slog.New(slog.DiscardHandler), Notify: scheduling.NotifyConfig{AllowPrivate: true}})
		r := newReceiver(t)
		f.notifier("backfills", r.URL, []string{"backfill_finished"}, nil)
		in := cronInput("m", "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		from, to := t0.Add(-3000*time.Minute), t0.Add(-1000*time.Minute)

		job, err := f.svc.StartBackfill(f.ctx, "default", "m", scheduling.BackfillJobInput{From: from, To: to,
			CommandContext: &scheduling.CommandContext{Source: "api", Actor: "ops", Reason: "replay"}})
		require.NoError(t, err)
		require.Equal(t, "running", job.Status)
		require.EqualValues(t, 2000, job.Total)
		require.EqualValues(t, scheduling.BackfillAtOnce, job.Started, "the first slices are worked before the answer")
		require.EqualValues(t, 2000-scheduling.BackfillAtOnce, job.Remaining())
		require.Equal(t, "ops", job.CreatedBy)

		// The ledger shows what the job will still start.
		mid := from.Add(400 * time.Minute)
		page, err := f.svc.Ledger(f.ctx, "default", "m", scheduling.LedgerQuery{From: &mid, To: ptr(mid.Add(200 * time.Minute))})
		require.NoError(t, err)
		require.Equal(t, scheduling.FateStarted, page.Occurrences[99].Fate)
		require.Equal(t, scheduling.FateBackfillPending, page.Occurrences[100].Fate)
		require.Equal(t, scheduling.FateBackfillPending, page.Occurrences[199].Fate)

		w := &scheduling.BackfillWorker{Service: f.svc, FireGuard: -1, SliceSize: 50, PassBudget: 200}
		passes := 0
		for {
			n, err := w.Work(f.ctx)
			require.NoError(t, err)
			if n == 0 {
				break
			}
			require.LessOrEqual(t, n, 200, "a pass is bounded")
			passes++
		}
		require.Equal(t, 8, passes, "1,500 occurrences, 200 a pass")
		job, err = f.svc.GetBackfill(f.ctx, "default", job.ID)
		require.NoError(t, err)
		require.Equal(t, "completed", job.Status)
		require.EqualValues(t, 2000, job.Started)
		require.Zero(t, job.Skipped+job.Failed+job.Buffered)
		require.True(t, job.CursorAt.Equal(to.Add(-time.Minute)), "cursor %v", job.CursorAt)
		require.NotNil(t, job.FinishedAt)
		require.Equal(t, 2000, backfillRuns(t, db, "m"))
		require.Nil(t, scheduling.BackfillETA(job, f.clock.Now()))

		require.Equal(t, 1, f.dispatch())
		doc := r.all()[0].doc
		require.Equal(t, "backfill_finished", doc["event"])
		details := doc["details"].(map[string]any)
		require.Equal(t, job.ID, details["backfill_id"])
		require.EqualValues(t, 2000, details["started"])
		require.Equal(t, "completed", details["status"])

		// The provenance of each run names the operator, as a synchronous backfill did.
		events := f.events("m")
		require.Equal(t, map[string]any{"source": "api", "actor": "ops", "reason": "replay"}, payload(t, events[len(events)-1])["command_context"])

		page, err = f.svc.Ledger(f.ctx, "default", "m", scheduling.LedgerQuery{From: &mid, To: ptr(mid.Add(200 * time.Minute))})
		require.NoError(t, err)
		require.Equal(t, scheduling.FateStarted, page.Occurrences[199].Fate)
	})
}

// max_per_minute: no slice above a tenth of the rate and no 60 s window
// above the rate, driven second by second by the fake clock; the rate is
// still reached over minutes.
func TestBackfillJobPacing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("p", "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		job, err := f.svc.StartBackfill(f.ctx, "default", "p", scheduling.BackfillJobInput{
			From: t0.Add(-5000 * time.Minute), To: t0, MaxPerMinute: intp(600)})
		require.NoError(t, err)
		require.EqualValues(t, 60, job.Started, "the first slice is a full bucket: a tenth of the rate")
		perSecond := []int64{job.Started}
		w := worker(f.svc)
		for range 180 {
			f.clock.Advance(time.Second)
			n, err := w.Work(f.ctx)
			require.NoError(t, err)
			require.LessOrEqual(t, n, 60, "never a burst above a tenth of the rate")
			perSecond = append(perSecond, int64(n))
		}
		var total, window int64
		for i, n := range perSecond {
			total += n
			window += n
			if i >= 60 {
				window -= perSecond[i-60]
			}
			require.LessOrEqual(t, window, int64(600), "the 60 s ending at second %d", i)
		}
		// Three minutes at 600 a minute: the window lets through the rate,
		// less what the first slice's minute holds back.
		require.GreaterOrEqual(t, total, int64(3*600-60))
		job, err = f.svc.GetBackfill(f.ctx, "default", job.ID)
		require.NoError(t, err)
		require.Equal(t, total, job.Started)
		eta := scheduling.BackfillETA(job, f.clock.Now())
		require.NotNil(t, eta)
		require.WithinDuration(t, f.clock.Now().Add(time.Duration(job.Remaining())*time.Second/10), *eta, 2*time.Second, "the ETA follows the pace")

		// One a minute: a bucket of one.
		slow, err := f.svc.StartBackfill(f.ctx, "default", "p", scheduling.BackfillJobInput{
			From: t0.Add(-10000 * time.Minute), To: t0.Add(-9000 * time.Minute), MaxPerMinute: intp(1)})
		require.NoError(t, err)
		require.EqualValues(t, 1, slow.Started)
		for range 59 {
			f.clock.Advance(time.Second)
			_, err := f.svc.WorkBackfill(f.ctx, slow.ID, 100)
			require.NoError(t, err)
		}
		slow, _ = f.svc.GetBackfill(f.ctx, "default", slow.ID)
		require.EqualValues(t, 1, slow.Started, "nothing more within the minute")
		f.clock.Advance(time.Second)
		_, err = f.svc.WorkBackfill(f.ctx, slow.ID, 100)
		require.NoError(t, err)
		slow, _ = f.svc.GetBackfill(f.ctx, "default", slow.ID)
		require.EqualValues(t, 2, slow.Started, "the next one a minute later")
	})
}

// max_concurrent_runs counts the job's runs that are pending or running.
func TestBackfillJobMaxConcurrentRuns(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("c", "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		// A run of the schedule outside the job's range does not count.
		_, err := f.svc.Backfill(f.ctx, "default", "c", scheduling.BackfillInput{From: t0.Add(-time.Hour), To: t0.Add(-59 * time.Minute)})
		require.NoError(t, err)
		job, err := f.svc.StartBackfill(f.ctx, "default", "c", scheduling.BackfillJobInput{
			From: t0.Add(-30 * time.Minute), To: t0.Add(-10 * time.Minute), MaxConcurrentRuns: intp(5)})
		require.NoError(t, err)
		require.EqualValues(t, 5, job.Started)
		w := worker(f.svc)
		f.clock.Advance(time.Second)
		n, err := w.Work(f.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "five runs are pending")

		var runs []models.Run
		require.NoError(t, db.NewSelect().Model(&runs).Where("schedule_id = 'c' AND instance_id >= ?", "schedule:c:backfill:"+unix(t0.Add(-30*time.Minute))).Order("instance_id").Scan(f.ctx))
		require.Len(t, runs, 5)
		f.setRunStatus(runs[0].ID, models.RunCompleted)
		f.setRunStatus(runs[1].ID, models.RunRunning)
		f.setRunStatus(runs[2].ID, models.RunFailed)
		f.clock.Advance(time.Second)
		n, err = w.Work(f.ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n, "two ended: two more start")
	})
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// Pause, resume and cancel from another instance (another replica's
// service on the same database): a paused job starts nothing, resumes from
// its cursor; a cancelled one ends and reports it; each state says no to
// what it forbids.
func TestBackfillJobPauseResumeCancelFromAnotherInstance(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		f.svc = scheduling.New(scheduling.Config{DB: db, Clock: f.clock, Rand: schedtest.Rand{},
			Logger: slog.New(slog.DiscardHandler), Notify: scheduling.NotifyConfig{AllowPrivate: true}})
		other := scheduling.New(scheduling.Config{DB: db, Clock: f.clock, Rand: schedtest.Rand{}, Logger: slog.New(slog.DiscardHandler)})
		r := newReceiver(t)
		f.notifier("backfills", r.URL, []string{"backfill_finished"}, nil)
		in := cronInput("pr", "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		job, err := f.svc.StartBackfill(f.ctx, "default", "pr", scheduling.BackfillJobInput{From: t0.Add(-3000 * time.Minute), To: t0})
		require.NoError(t, err)
		w := worker(f.svc)

		paused, err := other.PauseBackfill(f.ctx, "default", job.ID, nil)
		require.NoError(t, err)
		require.Equal(t, "paused", paused.Status)
		require.Nil(t, scheduling.BackfillETA(paused, f.clock.Now()))
		var conflict *scheduling.ConflictError
		_, err = other.PauseBackfill(f.ctx, "default", job.ID, nil)
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, "backfill_not_running", conflict.Code)
		n, err := w.Work(f.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a paused job starts nothing")

		resumed, err := other.ResumeBackfill(f.ctx, "default", job.ID, nil)
		require.NoError(t, err)
		require.Equal(t, "running", resumed.Status)
		_, err = other.ResumeBackfill(f.ctx, "default", job.ID, nil)
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, "backfill_not_paused", conflict.Code)
		n, err = w.Work(f.ctx)
		require.NoError(t, err)
		require.Equal(t, scheduling.DefaultBackfillPassBudget, n, "from its cursor on")

		cancelled, err := other.CancelBackfill(f.ctx, "default", job.ID, &scheduling.CommandContext{Actor: "ops"})
		require.NoError(t, err)
		require.Equal(t, "cancelled", cancelled.Status)
		require.EqualValues(t, 1000, cancelled.Started)
		require.EqualValues(t, 2000, cancelled.Remaining())
		require.Equal(t, "cancelled by ops", *cancelled.Error)
		_, err = other.CancelBackfill(f.ctx, "default", job.ID, nil)
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, "backfill_finished", conflict.Code)
		n, err = w.Work(f.ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Equal(t, 1000, backfillRuns(t, db, "pr"))
		require.Equal(t, 1, f.dispatch())
		require.Equal(t, "cancelled", r.all()[0].doc["details"].(map[string]any)["status"])

		var nf *scheduling.NotFoundError
		_, err = other.PauseBackfill(f.ctx, "other-ns", job.ID, nil)
		require.ErrorAs(t, err, &nf, "another namespace's job is not found")
		require.Equal(t, "backfill_not_found", nf.Code)
	})
}

// The bounds: a million occurrences at most, one unfinished job per
// range of a schedule, MaxUnfinishedBackfills per namespace; a year of
// minutes is accepted at once.
func TestBackfillJobBounds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("y", "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		year, err := f.svc.StartBackfill(f.ctx, "default", "y", scheduling.BackfillJobInput{From: t0.AddDate(-1, 0, 0), To: t0, MaxPerMinute: intp(60000)})
		require.NoError(t, err)
		require.EqualValues(t, 525_600, year.Total)
		require.Equal(t, "running", year.Status)

		var v *scheduling.ValidationError
		_, err = f.svc.StartBackfill(f.ctx, "default", "y", scheduling.BackfillJobInput{From: t0.AddDate(-2, 0, 0), To: t0})
		require.ErrorAs(t, err, &v)
		require.Equal(t, "backfill_too_large", v.Code)
		for _, bad := range []scheduling.BackfillJobInput{
			{From: t0.Add(-time.Hour), To: t0, MaxPerMinute: intp(0)},
			{From: t0.Add(-time.Hour), To: t0, MaxConcurrentRuns: intp(10_001)},
			{From: t0.Add(-time.Hour), To: t0, OverlapPolicy: "sometimes"},
		} {
			_, err = f.svc.StartBackfill(f.ctx, "default", "y", bad)
			require.ErrorAs(t, err, &v)
			require.Equal(t, "validation_failed", v.Code)
		}
		var c *scheduling.ConflictError
		_, err = f.svc.StartBackfill(f.ctx, "default", "y", scheduling.BackfillJobInput{From: t0.Add(-time.Hour), To: t0})
		require.ErrorAs(t, err, &c)
		require.Equal(t, "backfill_overlaps", c.Code)

		for i := range scheduling.MaxUnfinishedBackfills - 1 {
			id := "s" + strconv.Itoa(i)
			f.create(cronInput(id, "0 0 * * *"))
			_, err := f.svc.StartBackfill(f.ctx, "default", id, scheduling.BackfillJobInput{From: t0.AddDate(0, 0, -300), To: t0, MaxPerMinute: intp(1)})
			require.NoError(t, err)
		}
		f.create(cronInput("last", "0 0 * * *"))
		_, err = f.svc.StartBackfill(f.ctx, "default", "last", scheduling.BackfillJobInput{From: t0.AddDate(0, 0, -3), To: t0})
		require.ErrorAs(t, err, &c)
		require.Equal(t, "too_many_backfills", c.Code)

		page, err := f.svc.ListBackfills(f.ctx, "default", scheduling.BackfillListQuery{Limit: 15})
		require.NoError(t, err)
		require.Len(t, page.Backfills, 15)
		require.True(t, page.HasMore)
		next, err := f.svc.ListBackfills(f.ctx, "default", scheduling.BackfillListQuery{Limit: 15, Cursor: page.NextCursor})
		require.NoError(t, err)
		require.Len(t, next.Backfills, 5)
		require.False(t, next.HasMore)
		require.Equal(t, year.ID, next.Backfills[4].ID, "newest first: the year is the oldest")
		mine, err := f.svc.ListBackfills(f.ctx, "default", scheduling.BackfillListQuery{ScheduleID: "y"})
		require.NoError(t, err)
		require.Len(t, mine.Backfills, 1)
		none, err := f.svc.ListBackfills(f.ctx, "elsewhere", scheduling.BackfillListQuery{})
		require.NoError(t, err)
		require.Empty(t, none.Backfills)
	})
}

// A job whose schedule runs out of max_runs fails, saying so.
func TestBackfillJobMaxRunsExhausted(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("few", "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		in.MaxRuns = ptr(int64(30))
		f.create(in)
		job, err := f.svc.StartBackfill(f.ctx, "default", "few", scheduling.BackfillJobInput{From: t0.Add(-100 * time.Minute), To: t0})
		require.NoError(t, err)
		require.Equal(t, "failed", job.Status)
		require.Equal(t, "max_runs_exhausted", *job.Error)
		require.EqualValues(t, 30, job.Started)
		require.EqualValues(t, 70, job.Remaining())
	})
}

// Two replicas (two services and workers on one PostgreSQL) work one job
// at once: the slices never overlap, so no occurrence is skipped as
// already started and each has one run.
func TestBackfillJobTwoReplicasPostgres(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	clock := schedtest.NewClock(t0)
	a, b := schedtest.Service(db, clock), schedtest.Service(db, clock)
	in := cronInput("two", "* * * * *")
	in.OverlapPolicy = scheduling.OverlapAllowAll
	_, err := a.Create(t.Context(), in, nil)
	require.NoError(t, err)
	job, err := a.StartBackfill(t.Context(), "default", "two", scheduling.BackfillJobInput{From: t0.Add(-4000 * time.Minute), To: t0})
	require.NoError(t, err)
	var wg sync.WaitGroup
	worked := make([]int, 2)
	for i, svc := range []*scheduling.Service{a, b} {
		w := &scheduling.BackfillWorker{Service: svc, FireGuard: -1, SliceSize: 25, PassBudget: 100}
		wg.Go(func() {
			for {
				n, err := w.Work(t.Context())
				if err != nil {
					t.Error(err)
					return
				}
				worked[i] += n
				j, err := svc.GetBackfill(t.Context(), "default", job.ID)
				if err != nil || j.Status != "running" {
					return
				}
			}
		})
	}
	wg.Wait()
	job, err = a.GetBackfill(t.Context(), "default", job.ID)
	require.NoError(t, err)
	require.Equal(t, "completed", job.Status)
	require.EqualValues(t, 4000, job.Started)
	require.Zero(t, job.Skipped, "no slice worked twice")
	require.Equal(t, 3500, worked[0]+worked[1])
	require.Positive(t, worked[0])
	require.Positive(t, worked[1], "both replicas took slices")
	require.Equal(t, 4000, backfillRuns(t, db, "two"))
}

// The worker yields to fires: nothing while one is due within the guard.
func TestBackfillWorkerYieldsToDueFires(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("g", "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in) // next fire at t0 + 1 min
		job, err := f.svc.StartBackfill(f.ctx, "default", "g", scheduling.BackfillJobInput{From: t0.Add(-3000 * time.Minute), To: t0})
		require.NoError(t, err)
		w := &scheduling.BackfillWorker{Service: f.svc}
		f.clock.Advance(59 * time.Second)
		n, err := w.Work(f.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a fire is due within two seconds")
		_, err = f.svc.Tick(f.ctx, 100)
		require.NoError(t, err)
		f.clock.Advance(2 * time.Second)
		_, err = f.svc.Tick(f.ctx, 100)
		require.NoError(t, err)
		n, err = w.Work(f.ctx)
		require.NoError(t, err)
		require.Positive(t, n, "the fire is done")
		require.False(t, errors.Is(err, context.Canceled))
		job, err = f.svc.GetBackfill(f.ctx, "default", job.ID)
		require.NoError(t, err)
		require.EqualValues(t, scheduling.BackfillAtOnce+n, job.Started)
	})
}
