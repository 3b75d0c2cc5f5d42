package scheduling_test

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// BenchmarkRingFootprint measures the ring of recent actions
// (workflow_schedule_recent_actions) on PostgreSQL: 10,000 schedules whose
// rings the fire path fills (ten fires each, on an emptied table: a size
// on disk never shrinks, so rows seeded in another shape would decide it),
// then three rounds in which it overwrites every slot once (ten fires a
// schedule per round). It reports the table's heap and index bytes per
// schedule after each stage: the rounds matter because an overwrite
// leaves a dead version on the page until the next reader prunes it
// (autovacuum is off on CI machines), so the steady state can be larger
// than a freshly filled table. The numbers are sizes, not times: one
// iteration is the whole measurement.
//
//	go test ./scheduling -run '^$' -bench RingFootprint -benchtime 1x -v
func BenchmarkRingFootprint(b *testing.B) {
	const (
		n      = 10000
		rounds = 3
	)
	for b.Loop() {
		db := dbtest.Open(b, "postgres")
		clock := schedtest.NewClock(t0)
		svc := schedtest.Service(db, clock)
		seedSchedules(b, db, "ring", n, t0)
		loop := &scheduling.Loop{Service: svc, Limit: 500}
		report := func(stage string) {
			heap, index := ringSize(b, db)
			b.Logf("%-8s heap %6.1f  index %6.1f  total %6.1f bytes/schedule", stage,
				float64(heap)/n, float64(index)/n, float64(heap+index)/n)
			b.ReportMetric(float64(heap)/n, "heap-B/sched-"+stage)
			b.ReportMetric(float64(index)/n, "index-B/sched-"+stage)
			b.ReportMetric(float64(heap+index)/n, "B/sched-"+stage)
		}
		if _, err := db.ExecContext(context.Background(), "TRUNCATE workflow_schedule_recent_actions"); err != nil {
			b.Fatal(err)
		}
		fire := 0
		for round := 0; round <= rounds; round++ {
			for range 10 {
				at := t0.Add(time.Duration(fire) * time.Minute)
				makeDue(b, db, "ring", at)
				clock.Set(at.Add(time.Second))
				res, err := loop.RunOnce(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Rows) != n {
					b.Fatalf("fire %d: %d schedules fired, want %d", fire, len(res.Rows), n)
				}
				fire++
			}
			if round == 0 {
				report("filled")
			} else {
				report("round" + string(rune('0'+round)))
			}
		}
	}
}

// ringSize is the ring table's heap (with its free space map and
// visibility map) and its indexes, in bytes.
func ringSize(b *testing.B, db *bun.DB) (heap, index int64) {
	b.Helper()
	err := db.QueryRowContext(context.Background(),
		`SELECT pg_table_size('workflow_schedule_recent_actions'), pg_indexes_size('workflow_schedule_recent_actions')`).
		Scan(&heap, &index)
	if err != nil {
		b.Fatal(err)
	}
	return heap, index
}
