package reliability

// The seeding helpers of the fire benchmarks. BenchmarkFireBaseline, the
// same write set as hand-written SQL, lived here until migration 0012 made
// that write set something else (due queue, recent-action ring); its
// numbers stay in docs/PERFORMANCE.md.

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
)

// benchT0 matches the scheduling benchmarks' start instant.
var benchT0 = time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)

// seedMinutely bulk-inserts n active allow_all schedules on "* * * * *"
// whose next fire is at next (loadgen.Seed, as `tideline bench` seeds).
func seedMinutely(b testing.TB, db *bun.DB, prefix string, n int, next time.Time) {
	b.Helper()
	spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
	if err := loadgen.Seed(context.Background(), db, prefix, n, spec, next); err != nil {
		b.Fatal(err)
	}
}

// makeAllDue moves every schedule's next fire to at.
func makeAllDue(b testing.TB, db *bun.DB, at time.Time) {
	b.Helper()
	_, err := db.NewUpdate().Model((*models.Schedule)(nil)).
		Set("next_fire_at = ?", at).Set("next_nominal_at = ?", at).Where("TRUE").Exec(context.Background())
	if err != nil {
		b.Fatal(err)
	}
}
