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
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// BenchmarkRegistryHealthOrder: the console registry's default page
// (sort=health: failing, stuck, overdue, skipping, then the rest by ID)
// among 1k and 20k schedules, 1 % each failing, stuck (a run pending with
// no worker) and overdue, every schedule with a health row. Sub-benchmarks:
// the first page of 50, a page deep in the rest (a cursor halfway through
// the IDs), the Stuck chip's list, and the chips' counts (also with 20k
// failing schedules in another namespace, then with every schedule of
// this one failing: issue 35 goal 3). Each rank is a
// keyset query started from its state's index, so the pages must cost the
// same at 20k as at 1k (docs/PERFORMANCE.md).
//
//	go test ./scheduling -run '^$' -bench RegistryHealthOrder -count 3
func BenchmarkRegistryHealthOrder(b *testing.B) {
	const failingElsewhere = 20000
	for _, dialect := range dbtest.Dialects {
		for _, n := range []int{1000, 20000} {
			b.Run(fmt.Sprintf("%s/schedules=%d", dialect, n), func(b *testing.B) {
				db := dbtest.Open(b, dialect)
				clock := schedtest.NewClock(t0)
				svc := schedtest.Service(db, clock)
				ctx := context.Background()
				seedSchedules(b, db, "reg", n, t0.Add(24*time.Hour))
				if _, err := db.ExecContext(ctx, "INSERT INTO workflow_schedule_health (schedule_ulid, updated_at) SELECT id, updated_at FROM workflow_schedules"); err != nil {
					b.Fatal(err)
				}
				var failing, overdue []string
				for i := 0; i < n; i += 100 {
					failing = append(failing, fmt.Sprintf("reg%020d", i))
					overdue = append(overdue, fmt.Sprintf("reg%020d", i+1))
					// stuck: a manual run nobody claims.
					if _, err := svc.Trigger(ctx, "default", loadgen.ScheduleID("reg", i+2), "", nil); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := db.NewUpdate().Model((*models.ScheduleHealth)(nil)).Set("consecutive_failures = 1, failures_count = 1").
					Where("schedule_ulid IN (?)", bun.In(failing)).Exec(ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := db.NewUpdate().Model((*models.Schedule)(nil)).Set("next_fire_at = ?", t0.Add(-time.Minute)).
					Where("id IN (?)", bun.In(overdue)).Exec(ctx); err != nil {
					b.Fatal(err)
				}
				clock.Set(t0.Add(10 * time.Minute))
				if err := database.Of(db).Optimize(ctx, db); err != nil {
					b.Fatal(err)
				}
				if database.Of(db).Name() == database.PostgreSQL {
					if err := loadgen.Analyze(ctx, db, "workflow_schedules", "workflow_schedule_health", "workflow_runs", "workflow_schedule_due"); err != nil {
						b.Fatal(err)
					}
				}
				perState := int64(n / 100)
				c, err := svc.Counts(ctx, "default")
				if err != nil || c.Failing != perState || c.Stuck != perState || c.Overdue != perState {
					b.Fatalf("counts %+v, %v", c, err)
				}
				first, err := svc.List(ctx, scheduling.ListFilter{Namespace: "default", Sort: "health"})
				if err != nil || len(first.Schedules) != 50 || first.Schedules[0].HealthState != scheduling.HealthFailing {
					b.Fatalf("first page: %v", err)
				}
				// A cursor in the rest, halfway through the IDs.
				deep := first
				for deep.Schedules[len(deep.Schedules)-1].HealthRank < int64(len(scheduling.HealthStates())) ||
					deep.Schedules[len(deep.Schedules)-1].ScheduleID < loadgen.ScheduleID("reg", n/2) {
					next, err := svc.List(ctx, scheduling.ListFilter{Namespace: "default", Sort: "health", Limit: scheduling.MaxListLimit, Cursor: deep.NextCursor})
					if err != nil {
						b.Fatal(err)
					}
					deep = next
				}
				cursor := deep.NextCursor
				b.Run("page=first", func(b *testing.B) {
					for b.Loop() {
						if p, err := svc.List(ctx, scheduling.ListFilter{Namespace: "default", Sort: "health"}); err != nil || len(p.Schedules) != 50 {
							b.Fatal(err)
						}
					}
				})
				b.Run("page=deep", func(b *testing.B) {
					for b.Loop() {
						if p, err := svc.List(ctx, scheduling.ListFilter{Namespace: "default", Sort: "health", Cursor: cursor}); err != nil || len(p.Schedules) != 50 {
							b.Fatal(err)
						}
					}
				})
				b.Run("filter=stuck", func(b *testing.B) {
					want := min(int(perState), 50)
					for b.Loop() {
						if p, err := svc.List(ctx, scheduling.ListFilter{Namespace: "default", Health: scheduling.HealthStuck, Sort: "health"}); err != nil || len(p.Schedules) != want {
							b.Fatal(err)
						}
					}
				})
				b.Run("counts", func(b *testing.B) {
					for b.Loop() {
						if c, err := svc.Counts(ctx, "default"); err != nil || c.Stuck != perState {
							b.Fatal(err)
						}
					}
				})
				// Issue 35 goal 3: another namespace's failures, then every
				// schedule of this one failing, must not cost this
				// namespace's chips.
				seedSchedules(b, db, "oth", failingElsewhere, t0.Add(24*time.Hour))
				for _, q := range []string{
					"UPDATE workflow_schedules SET namespace = 'other' WHERE id LIKE 'oth%'",
					"INSERT INTO workflow_schedule_health (schedule_ulid, consecutive_failures, updated_at) SELECT id, 1, updated_at FROM workflow_schedules WHERE id LIKE 'oth%' ON CONFLICT (schedule_ulid) DO UPDATE SET consecutive_failures = 1",
				} {
					if _, err := db.ExecContext(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
				analyze := func() {
					if database.Of(db).Name() == database.PostgreSQL {
						if err := loadgen.Analyze(ctx, db, "workflow_schedules", "workflow_schedule_health"); err != nil {
							b.Fatal(err)
						}
					}
				}
				analyze()
				b.Run(fmt.Sprintf("counts/failing-elsewhere=%d", failingElsewhere), func(b *testing.B) {
					for b.Loop() {
						if c, err := svc.Counts(ctx, "default"); err != nil || c.Failing != perState || c.Stuck != perState {
							b.Fatalf("%+v %v", c, err)
						}
					}
				})
				if _, err := db.ExecContext(ctx, "UPDATE workflow_schedule_health SET consecutive_failures = 1 WHERE schedule_ulid LIKE 'reg%'"); err != nil {
					b.Fatal(err)
				}
				analyze()
				b.Run("counts/all-failing", func(b *testing.B) {
					for b.Loop() {
						if c, err := svc.Counts(ctx, "default"); err != nil || c.Failing != int64(n) {
							b.Fatalf("%+v %v", c, err)
						}
					}
				})
			})
		}
	}
}
