package scheduling_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/retention"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// BenchmarkLoopPassIdle: one whole loop pass with nothing due among
// 1k/10k/100k idle schedules — what every replica does every second most
// of the time: timed pauses that ended, failing schedules to pause, the
// tick, the deadline sweep and retention (serve's default, 30 days), then
// the look for the next instant that decides how long to sleep and what to
// prepare. BenchmarkTickIdle covers the tick alone; this is the rest of
// the pass, which must not grow with idle schedules either. Every schedule
// has a health row (it has finished runs), and the statistics are what the
// running loop gives SQLite (database.Optimize) — without them SQLite read
// every schedule each pass to find the failing ones: 2 ms at 1,000, 70 ms
// at 100,000.
//
//	go test ./scheduling -run '^$' -bench LoopPassIdle -count 3 -timeout 60m
func BenchmarkLoopPassIdle(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		for _, idle := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/idle=%d", dialect, idle), func(b *testing.B) {
				db := dbtest.Open(b, dialect)
				clock := schedtest.NewClock(t0)
				svc := schedtest.Service(db, clock)
				seedSchedules(b, db, "idle", idle, t0.Add(365*24*time.Hour))
				ctx := context.Background()
				// Every schedule has a health row once it finished a run.
				if _, err := db.ExecContext(ctx, "INSERT INTO workflow_schedule_health (schedule_ulid, updated_at) SELECT id, updated_at FROM workflow_schedules"); err != nil {
					b.Fatal(err)
				}
				// What the running loop does at start and hourly (SQLite's
				// statistics); on PostgreSQL, what autovacuum would have done.
				if err := database.Of(db).Optimize(ctx, db); err != nil {
					b.Fatal(err)
				}
				if database.Of(db).Name() == database.PostgreSQL {
					if err := loadgen.Analyze(ctx, db, "workflow_schedules", "workflow_schedule_health"); err != nil {
						b.Fatal(err)
					}
				}
				loop := &scheduling.Loop{Service: svc, Limit: 500, Retention: retention.Policy{KeepRuns: 30 * 24 * time.Hour}}
				for i := 0; b.Loop(); i++ {
					now := t0.Add(time.Duration(i) * time.Second)
					clock.Set(now)
					res, err := loop.RunOnce(ctx)
					if err != nil || len(res.Rows) != 0 {
						b.Fatalf("pass: %d rows, %v", len(res.Rows), err)
					}
					if _, _, ok, err := svc.NextFireInstant(ctx, now, now.Add(10*time.Second)); err != nil || ok {
						b.Fatalf("next instant: %v %v", ok, err)
					}
				}
			})
		}
	}
}

// BenchmarkRegistryCounts: the console registry's health chips
// (Service.Counts: all, failing, overdue, paused, active) with 1k/10k/100k
// schedules, every one with a health row. The registry computes them on
// every page view, so their cost is the page's floor.
//
//	go test ./scheduling -run '^$' -bench RegistryCounts -count 3
func BenchmarkRegistryCounts(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		for _, n := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("%s/schedules=%d", dialect, n), func(b *testing.B) {
				db := dbtest.Open(b, dialect)
				svc := schedtest.Service(db, schedtest.NewClock(t0))
				seedSchedules(b, db, "reg", n, t0.Add(24*time.Hour))
				ctx := context.Background()
				if _, err := db.ExecContext(ctx, "INSERT INTO workflow_schedule_health (schedule_ulid, updated_at) SELECT id, updated_at FROM workflow_schedules"); err != nil {
					b.Fatal(err)
				}
				if err := database.Of(db).Optimize(ctx, db); err != nil {
					b.Fatal(err)
				}
				if database.Of(db).Name() == database.PostgreSQL {
					if err := loadgen.Analyze(ctx, db, "workflow_schedules", "workflow_schedule_health"); err != nil {
						b.Fatal(err)
					}
				}
				for b.Loop() {
					c, err := svc.Counts(ctx, "default")
					if err != nil || c.All != int64(n) {
						b.Fatalf("counts %+v, %v", c, err)
					}
				}
			})
		}
	}
}

// BenchmarkScheduleCounts: the registry's status chips (active, paused,
// all) read two ways, in a namespace of 1k/10k schedules, a tenth of them
// paused by one statement — scan: what models.CountSchedules did before
// migration 0025, a pass over the namespace's live schedule rows
// (schedtest.ScanCounts); read: what it does now, the namespace's rows of
// namespace_schedule_counts, which the triggers keep. The scan grows with
// the namespace, the read must not. TIDELINE_BENCH_COUNTS_SCHEDULES adds a
// size (100,000 seeds in about a minute; 1,000,000 took eleven for both
// databases here):
//
//	TIDELINE_BENCH_COUNTS_SCHEDULES=100000 go test ./scheduling -run '^$' -bench ScheduleCounts -count 3
func BenchmarkScheduleCounts(b *testing.B) {
	sizes := []int{1000, 10000}
	if n := envSize("TIDELINE_BENCH_COUNTS_SCHEDULES", 0); n > 0 {
		sizes = append(sizes, n)
	}
	for _, dialect := range dbtest.Dialects {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/schedules=%d", dialect, n), func(b *testing.B) {
				db := dbtest.Open(b, dialect)
				seedSchedules(b, db, "cnt", n, t0.Add(24*time.Hour))
				ctx := context.Background()
				if _, err := db.NewUpdate().Model((*models.Schedule)(nil)).Set("status = ?", models.StatusPaused).
					Where("schedule_id LIKE ?", "cnt-%0").Exec(ctx); err != nil {
					b.Fatal(err)
				}
				if err := database.Of(db).Optimize(ctx, db); err != nil {
					b.Fatal(err)
				}
				if database.Of(db).Name() == database.PostgreSQL {
					if err := loadgen.Analyze(ctx, db, "workflow_schedules", "namespace_schedule_counts"); err != nil {
						b.Fatal(err)
					}
				}
				want := models.ScheduleCounts{All: int64(n), Active: int64(n - n/10), Paused: int64(n / 10)}
				for _, way := range []struct {
					name  string
					count func(context.Context, bun.IDB, string) (models.ScheduleCounts, error)
				}{{"scan", schedtest.ScanCounts}, {"read", models.CountSchedules}} {
					b.Run(way.name, func(b *testing.B) {
						for b.Loop() {
							c, err := way.count(ctx, db, "default")
							if err != nil || c != want {
								b.Fatalf("counts %+v, want %+v: %v", c, want, err)
							}
						}
					})
				}
			})
		}
	}
}
