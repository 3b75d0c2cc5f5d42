package scheduling_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// seedSchedules bulk-inserts n active schedules firing every minute whose
// next fire is at `next`; it bypasses Create to keep setup fast. Each has
// fired before: its ring of recent actions is full (loadgen.Seed), as any
// schedule's is from its eleventh fire on.
func seedSchedules(b testing.TB, db *bun.DB, prefix string, n int, next time.Time) {
	b.Helper()
	spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
	if err := loadgen.Seed(context.Background(), db, prefix, n, spec, next); err != nil {
		b.Fatal(err)
	}
}

// makeDue moves the next fire of the prefix's schedules to at (a new
// occurrence each time, so instance IDs don't collide across iterations).
func makeDue(b *testing.B, db *bun.DB, prefix string, at time.Time) {
	b.Helper()
	_, err := db.NewUpdate().Model((*models.Schedule)(nil)).
		Set("next_fire_at = ?", at).Set("next_nominal_at = ?", at).
		Where("schedule_id LIKE ?", prefix+"-%").Exec(context.Background())
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkFireThroughput: 10,000 schedules due at once, drained by one
// loop pass (batches of 500). Reports fires per second.
func BenchmarkFireThroughput(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			const n = 10000
			db := dbtest.Open(b, dialect)
			clock := schedtest.NewClock(t0)
			svc := schedtest.Service(db, clock)
			seedSchedules(b, db, "due", n, t0)
			loop := &scheduling.Loop{Service: svc, Limit: 500}
			var fired int
			var elapsed, cpu time.Duration
			sizeBefore := fireTablesSize(b, db)
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				at := t0.Add(time.Duration(i) * time.Minute)
				makeDue(b, db, "due", at)
				clock.Set(at.Add(time.Second))
				b.StartTimer()
				started, cpuStarted := time.Now(), processCPU()
				res, err := loop.RunOnce(context.Background())
				elapsed += time.Since(started)
				cpu += processCPU() - cpuStarted
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res.Rows {
					if r.Outcome != scheduling.OutcomeTriggered {
						b.Fatalf("%s: %s %s", r.ScheduleID, r.Outcome, r.Reason)
					}
				}
				fired += len(res.Rows)
			}
			b.ReportMetric(float64(fired)/elapsed.Seconds(), "fires/s")
			if fired > 0 {
				// The benchmark process's CPU per fire (the loop's side; the
				// database's is its own): steadier than fires/s on a busy
				// machine, where a fire waits for the CPU as well.
				b.ReportMetric(float64(cpu.Microseconds())/float64(fired), "cpu-µs/fire")
			}
			if database.Of(db).Name() == database.PostgreSQL && fired > 0 {
				b.ReportMetric(float64(fireTablesSize(b, db)-sizeBefore)/float64(fired), "bytes/fire")
				logRelationSizes(b, db, fired)
			}
		})
	}
}

// processCPU is the user and system CPU this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// logRelationSizes logs each table's and index's size per fire, largest
// first, to show where a fire's bytes go.
func logRelationSizes(b *testing.B, db *bun.DB, fires int) {
	var rows []struct {
		Name string `bun:"name"`
		Size int64  `bun:"size"`
	}
	err := db.NewRaw(`SELECT c.relname AS name, pg_relation_size(c.oid) AS size FROM pg_class c
		WHERE c.relkind IN ('r', 'i', 't') AND c.relnamespace = current_schema()::regnamespace AND pg_relation_size(c.oid) > 0
		ORDER BY 2 DESC`).Scan(context.Background(), &rows)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range rows {
		b.Logf("%-60s %8.0f bytes/fire", r.Name, float64(r.Size)/float64(fires))
	}
}

// fireTablesSize is the size on disk (heap, indexes and TOAST) of the
// tables that fires add rows to, on PostgreSQL: what a fire keeps. The
// schedules table is left out: it holds one row per schedule, whose old
// versions vacuum reuses, and the benchmark's own makeDue rewrites it.
// Tables that do not exist (any more) count as zero.
func fireTablesSize(b *testing.B, db *bun.DB) int64 {
	b.Helper()
	if database.Of(db).Name() != database.PostgreSQL {
		return 0
	}
	var size int64
	err := db.NewRaw(`SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace
		AND c.relname IN ('workflow_runs', 'workflow_history_events', 'workflow_schedule_history_events')`).
		Scan(context.Background(), &size)
	if err != nil {
		b.Fatal(err)
	}
	return size
}

// BenchmarkTickIdle: one tick with 100 due schedules among 1k/10k/100k idle
// ones. Its cost must not grow with the idle count.
func BenchmarkTickIdle(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		for _, idle := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/idle=%d", dialect, idle), func(b *testing.B) {
				db := dbtest.Open(b, dialect)
				clock := schedtest.NewClock(t0)
				svc := schedtest.Service(db, clock)
				seedSchedules(b, db, "idle", idle, t0.Add(365*24*time.Hour))
				seedSchedules(b, db, "due", 100, t0)
				if _, err := db.ExecContext(context.Background(), "ANALYZE"); err != nil {
					b.Fatal(err)
				}
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					at := t0.Add(time.Duration(i) * time.Minute)
					makeDue(b, db, "due", at)
					clock.Set(at.Add(time.Second))
					b.StartTimer()
					rows, err := svc.Tick(context.Background(), 100)
					if err != nil || len(rows) != 100 {
						b.Fatalf("tick: %d rows, %v", len(rows), err)
					}
				}
			})
		}
	}
}

// BenchmarkClaimComplete: 4 concurrent pollers claim runs (batches of 10)
// and complete each one, on PostgreSQL; all runs belong to one schedule,
// so every completion updates the same health row (the worst case).
// retries=on gives the action a retry policy (the runs still complete).
// Reports runs per second.
func BenchmarkClaimComplete(b *testing.B) {
	for _, retries := range []bool{false, true} {
		b.Run(map[bool]string{false: "retries=off", true: "retries=on"}[retries], func(b *testing.B) { benchClaimComplete(b, retries, 1) })
	}
	// The same runs spread over 40 schedules: what completions cost when
	// they do not all update one schedule's health row.
	b.Run("retries=on/schedules=40", func(b *testing.B) { benchClaimComplete(b, true, 40) })
}

func benchClaimComplete(b *testing.B, retries bool, schedules int) {
	const pollers, runs = 4, 2000
	db := dbtest.Postgres(b)
	clock := schedtest.NewClock(t0)
	svc := schedtest.Service(db, clock)
	ctx := context.Background()
	for s := range schedules {
		in := scheduling.CreateInput{Namespace: "default", ScheduleID: fmt.Sprint("bench-", s), Spec: models.Spec{CronExpressions: []string{"* * * * *"}},
			Action: models.Action{WorkflowType: "bench"}, OverlapPolicy: scheduling.OverlapAllowAll}
		if retries {
			attempts := 3
			in.Action.RetryPolicy = &models.RetryPolicy{MaxAttempts: &attempts}
		}
		if _, err := svc.Create(ctx, in, nil); err != nil {
			b.Fatal(err)
		}
	}
	var done int
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		each := runs / schedules
		from := t0.Add(time.Duration(i*each) * time.Minute)
		for s := range schedules {
			if _, err := svc.Backfill(ctx, "default", fmt.Sprint("bench-", s), scheduling.BackfillInput{From: from, To: from.Add(time.Duration(each) * time.Minute)}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		started := time.Now()
		var wg sync.WaitGroup
		counts := make([]int, pollers)
		for p := range pollers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					claimed, err := svc.Poll(ctx, scheduling.PollRequest{Namespace: "default", Limit: 10, LeaseSeconds: 60, WorkerID: fmt.Sprint("p", p)})
					if err != nil {
						b.Error(err)
						return
					}
					if len(claimed) == 0 {
						return
					}
					for _, r := range claimed {
						if _, err := svc.CompleteRun(ctx, "default", r.ID, scheduling.LeaseHolder{WorkerID: fmt.Sprint("p", p)}, nil); err != nil {
							b.Error(err)
							return
						}
					}
					counts[p] += len(claimed)
				}
			}()
		}
		wg.Wait()
		elapsed += time.Since(started)
		for _, n := range counts {
			done += n
		}
	}
	b.ReportMetric(float64(done)/elapsed.Seconds(), "runs/s")
}

// BenchmarkDeadlineSweep: one run-deadline sweep (the loop runs one per
// pass) while 1,000 / 10,000 / 100,000 runs wait for a worker — a worker
// outage, say. Every tenth has a run deadline, none has passed, so the sweep
// finds nothing: its cost should not grow with the waiting runs.
func BenchmarkDeadlineSweep(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		for _, waiting := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/waiting=%d", dialect, waiting), func(b *testing.B) {
				db := dbtest.Open(b, dialect)
				svc := schedtest.Service(db, schedtest.NewClock(t0))
				seedWaitingRuns(b, db, waiting, t0.Add(time.Hour))
				if _, err := db.ExecContext(context.Background(), "ANALYZE"); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					ended, err := svc.EnforceDeadlines(context.Background(), 500)
					if err != nil || ended != 0 {
						b.Fatalf("sweep: %d ended, %v", ended, err)
					}
				}
			})
		}
	}
}

// seedWaitingRuns bulk-inserts n pending runs; every tenth has a run
// deadline at deadline.
func seedWaitingRuns(b *testing.B, db *bun.DB, n int, deadline time.Time) {
	b.Helper()
	ctx := context.Background()
	const chunk = 1000
	for start := 0; start < n; start += chunk {
		runs := make([]models.Run, 0, chunk)
		for i := start; i < min(start+chunk, n); i++ {
			id := fmt.Sprintf("wait%022d", i)
			run := models.Run{
				ID: id, Namespace: "default", InstanceID: id, WorkflowType: "bench",
				Status: models.RunPending, Trigger: "manual", Connection: "default", Queue: "default", CreatedAt: t0, UpdatedAt: t0,
			}
			if i%10 == 0 {
				run.RunDeadlineAt = &deadline
			}
			runs = append(runs, run)
		}
		if _, err := db.NewInsert().Model(&runs).Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListWithHealth: one registry page of 50 schedules whose runs
// number 100,000 in all (2,000 each, a fifth failed, the last 10 fires in
// the ring of recent actions as every firing schedule has them), read as the API does
// (with health: last run, failure counts, the last 10 runs) and, for the
// comparison, the schedules alone as before health existed.
func BenchmarkListWithHealth(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			const schedules, runsEach = 50, 2000
			db := dbtest.Open(b, dialect)
			clock := schedtest.NewClock(t0)
			svc := schedtest.Service(db, clock)
			ctx := context.Background()
			seedSchedules(b, db, "h", schedules, t0.Add(time.Hour))
			seedRuns(b, db, "h", schedules, runsEach)
			// The page as it was read before health existed: the same
			// keyset query on the schedules table alone…
			schedulesOnly := func() {
				var page []models.Schedule
				err := db.NewSelect().Model(&page).Where("s.namespace = ? AND s.status IN (?)", "default", bun.In([]string{models.StatusActive, models.StatusPaused})).
					OrderExpr("s.schedule_id ASC").Limit(schedules + 1).Scan(ctx)
				if err != nil || len(page) != schedules {
					b.Fatal(len(page), err)
				}
				// …and their recent actions, in the row then, in their
				// rings since migration 0012.
				ids := make([]string, len(page))
				for i := range page {
					ids[i] = page[i].ID
				}
				if _, err := models.RecentActionsOf(ctx, db, ids); err != nil {
					b.Fatal(err)
				}
			}
			withHealth := func() {
				page, err := svc.List(ctx, scheduling.ListFilter{Namespace: "default", Limit: schedules})
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Schedules) != schedules || len(page.Schedules[0].Health.RecentRuns) != models.RecentRunsKept {
					b.Fatalf("page of %d schedules, %d recent runs", len(page.Schedules), len(page.Schedules[0].Health.RecentRuns))
				}
			}
			b.Run("schedules-only", func(b *testing.B) {
				for b.Loop() {
					schedulesOnly()
				}
			})
			b.Run("with-health", func(b *testing.B) {
				for b.Loop() {
					withHealth()
				}
			})
			// Both pages alternately, reporting the ratio of their median
			// times: on a shared machine the load changes between the two
			// sub-benchmarks above, but not between two adjacent reads.
			b.Run("ratio", func(b *testing.B) {
				var only, health []time.Duration
				for b.Loop() {
					for range 25 {
						started := time.Now()
						schedulesOnly()
						only = append(only, time.Since(started))
						started = time.Now()
						withHealth()
						health = append(health, time.Since(started))
					}
				}
				slices.Sort(only)
				slices.Sort(health)
				b.ReportMetric(float64(health[len(health)/2])/float64(only[len(only)/2]), "with/only")
			})
		})
	}
}

// seedRuns bulk-inserts finished runs (one in five failed) for the
// prefix's schedules, and their health rows.
func seedRuns(b *testing.B, db *bun.DB, prefix string, schedules, each int) {
	b.Helper()
	ctx := context.Background()
	for s := range schedules {
		ulid := fmt.Sprintf("%s%020d", prefix, s)
		sid := fmt.Sprintf("%s-%06d", prefix, s)
		runs := make([]models.Run, 0, each)
		for i := range each {
			at := t0.Add(-time.Duration(each-i) * time.Minute)
			status := models.RunCompleted
			if i%5 == 0 {
				status = models.RunFailed
			}
			id := fmt.Sprintf("%s%06d%06d", prefix, s, i)
			started, finished := at.Add(time.Second), at.Add(2*time.Second)
			runs = append(runs, models.Run{ID: "r" + id, Namespace: "default", InstanceID: fmt.Sprintf("schedule:%s:%d", sid, at.Unix()),
				WorkflowScheduleID: &ulid, ScheduleID: &sid, WorkflowType: "bench", Status: status, Trigger: "scheduled",
				Connection: "default", Queue: "default", Attempt: 1, OccurrenceTime: &at, CreatedAt: at, StartedAt: &started,
				FinishedAt: &finished, UpdatedAt: finished})
		}
		if _, err := db.NewInsert().Model(&runs).Exec(ctx); err != nil {
			b.Fatal(err)
		}
		last := runs[len(runs)-1]
		h := models.ScheduleHealth{ScheduleULID: ulid, FailuresCount: int64(each / 5), LastRunID: &last.ID,
			LastRunStatus: &last.Status, LastRunFinishedAt: last.FinishedAt, UpdatedAt: t0, RecentRuns: []models.RecentRun{}}
		for i := len(runs) - 1; i >= len(runs)-models.RecentRunsKept; i-- {
			ms := int64(1000)
			at := runs[i].OccurrenceTime.UnixMilli()
			h.RecentRuns = append(h.RecentRuns, models.RecentRun{RunID: runs[i].ID, Status: runs[i].Status, OccurrenceMs: &at, DurationMs: &ms})
		}
		if _, err := db.NewInsert().Model(&h).Exec(ctx); err != nil {
			b.Fatal(err)
		}
		// A schedule that fired 2,000 times holds its last 10 actions, as
		// it did before health existed.
		actions := make([]*models.RecentActionRow, 0, models.RecentActionsKept)
		for i := len(runs) - models.RecentActionsKept; i < len(runs); i++ {
			actions = append(actions, models.RecentActionSlot(ulid, int64(i), models.RecentAction{InstanceID: runs[i].InstanceID,
				RunID: runs[i].ID, Outcome: "scheduled", FiredAt: runs[i].CreatedAt, OccurrenceTime: *runs[i].OccurrenceTime}))
		}
		if err := models.SaveRecentActions(ctx, db, actions); err != nil {
			b.Fatal(err)
		}
		if _, err := db.NewUpdate().Model((*models.Schedule)(nil)).Set("actions_count = ?", len(runs)).Where("id = ?", ulid).Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if database.Of(db).Name() == database.PostgreSQL {
		if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
	}
}
