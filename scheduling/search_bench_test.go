package scheduling_test

import (
	"context"
	"os"
	"strconv"
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

// BenchmarkListFiltered: the first page of a namespace's schedules
// filtered by a rare workflow type, a rare label or a free-text search
// matching rare notes (1 in 1,000 of 100,000 schedules;
// TIDELINE_BENCH_SCHEDULES sets another count), with the search indexes of
// migrations 0026 and 0028 and, in the same run, without them (index=off
// drops them: what every page cost before). Without an index such a page
// walks the whole namespace; with one it is a range of the type index, a
// lookup in the labels' GIN index or in the trigram indexes (PostgreSQL),
// or in the labels side table or the trigram full-text table of migration
// 0031 (SQLite; those are tables kept by triggers, which index=off leaves
// in place: SQLite's numbers without them are the previous release's).
// docs/PERFORMANCE.md.
//
//	go test ./scheduling -run '^$' -bench ListFiltered -benchtime 20x -count 3
//	TIDELINE_BENCH_SCHEDULES=1000 go test ./scheduling -run '^$' -bench 'ListFiltered/sqlite/.*index=on' -benchtime 3x
func BenchmarkListFiltered(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("TIDELINE_BENCH_SCHEDULES")); err == nil && v > 0 {
		n = v
	}
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := dbtest.Open(b, dialect)
			ctx := context.Background()
			svc := schedtest.Service(db, schedtest.NewClock(t0))
			seedSchedules(b, db, "srch", n, t0.Add(24*time.Hour))
			rare := make([]string, 0, n/1000)
			for i := 0; i < n; i += 1000 {
				rare = append(rare, loadgen.ScheduleID("srch", i))
			}
			if _, err := db.NewUpdate().Model((*models.Schedule)(nil)).
				Set("action = ?", models.Action{WorkflowType: "rare.Type"}).Set("labels = ?", map[string]string{"tier": "rare"}).
				Set("note = ?", "Rarely fired").
				Where("schedule_id IN (?)", bun.In(rare)).Exec(ctx); err != nil {
				b.Fatal(err)
			}
			analyze := func() {
				if err := database.Of(db).Optimize(ctx, db); err != nil {
					b.Fatal(err)
				}
				if database.Of(db).Name() == database.PostgreSQL {
					if err := loadgen.Analyze(ctx, db, "workflow_schedules"); err != nil {
						b.Fatal(err)
					}
				}
			}
			analyze()
			filters := map[string]scheduling.ListFilter{
				"type":  {Namespace: "default", WorkflowType: "rare.Type"},
				"label": {Namespace: "default", Label: "tier=rare"},
				"text":  {Namespace: "default", Text: "rarely"},
			}
			run := func(index string) {
				for _, name := range []string{"type", "label", "text"} {
					b.Run(name+"/index="+index, func(b *testing.B) {
						for b.Loop() {
							page, err := svc.List(ctx, filters[name])
							if err != nil || len(page.Schedules) != min(len(rare), scheduling.DefaultListLimit) {
								b.Fatalf("%s page: %d schedules, %v", name, len(page.Schedules), err)
							}
						}
					})
				}
			}
			run("on")
			for _, idx := range []string{"workflow_schedules_workflow_type_idx", "workflow_schedules_labels_idx",
				"workflow_schedules_id_trgm_idx", "workflow_schedules_note_trgm_idx", "workflow_schedules_type_trgm_idx"} {
				if _, err := db.ExecContext(ctx, "DROP INDEX IF EXISTS "+idx); err != nil {
					b.Fatal(err)
				}
			}
			analyze()
			run("off")
		})
	}
}
