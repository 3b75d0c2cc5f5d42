package scheduling_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// BenchmarkRingFootprint measures the rings of recent actions
// (workflow_schedule_rings, migration 0033) on PostgreSQL: 10,000
// schedules whose rings the fire path fills (ten fires each, on an
// emptied table: a size on disk never shrinks, so rows seeded in another
// shape would decide it), then three rounds of ten fires a schedule. It
// reports the table's heap and index bytes per schedule after each stage:
// the rounds matter because every fire rewrites the ring, leaving a dead
// version behind, on its page if the page has room (HOT), else the new
// version goes to another page with a new index entry, and with
// autovacuum off (as on CI machines) only a vacuum makes that space
// reusable. vacuum=true vacuums the table after every fire (they are a
// minute apart), as a served loop does. The numbers are sizes, not times:
// one iteration is the whole measurement.
//
//	go test ./scheduling -run '^$' -bench RingFootprint -benchtime 1x -v
func BenchmarkRingFootprint(b *testing.B) {
	for _, vacuum := range []bool{false, true} {
		b.Run(fmt.Sprintf("vacuum=%t", vacuum), func(b *testing.B) {
			for b.Loop() {
				ringFootprint(b, vacuum)
			}
		})
	}
}

func ringFootprint(b *testing.B, vacuum bool) {
	const (
		n      = 10000
		rounds = 3
	)
	ctx := context.Background()
	db := dbtest.Open(b, "postgres")
	clock := schedtest.NewClock(t0)
	svc := schedtest.Service(db, clock)
	seedSchedules(b, db, "ring", n, t0)
	if _, err := db.ExecContext(ctx, "TRUNCATE workflow_schedule_recent_actions, "+ringTable); err != nil {
		b.Fatal(err)
	}
	loop := &scheduling.Loop{Service: svc, Limit: 500}
	report := func(stage string) {
		heap, index := ringSize(b, db)
		b.Logf("%-8s heap %6.1f  index %6.1f  total %6.1f bytes/schedule", stage,
			float64(heap)/n, float64(index)/n, float64(heap+index)/n)
		b.ReportMetric(float64(heap)/n, "heap-B/sched-"+stage)
		b.ReportMetric(float64(index)/n, "index-B/sched-"+stage)
		b.ReportMetric(float64(heap+index)/n, "B/sched-"+stage)
	}
	fire := 0
	var vacuumed time.Duration
	for round := 0; round <= rounds; round++ {
		for range 10 {
			at := t0.Add(time.Duration(fire) * time.Minute)
			makeDue(b, db, "ring", at)
			clock.Set(at.Add(time.Second))
			res, err := loop.RunOnce(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Rows) != n {
				b.Fatalf("fire %d: %d schedules fired, want %d", fire, len(res.Rows), n)
			}
			if vacuum {
				started := time.Now()
				if err := database.Of(db).Vacuum(ctx, db, ringTable); err != nil {
					b.Fatal(err)
				}
				vacuumed += time.Since(started)
			}
			fire++
		}
		if round == 0 {
			report("filled")
		} else {
			report(fmt.Sprintf("round%d", round))
		}
	}
	if vacuum {
		b.ReportMetric(float64(vacuumed.Microseconds())/1000/float64(fire), "vacuum-ms/fire")
	}
}

// ringTable holds the rings.
const ringTable = "workflow_schedule_rings"

// ringSize is the ring table's heap (with its free space map and
// visibility map) and its indexes, in bytes; the ten-row ring of the
// releases before 0033 is counted too, though this one does not write it.
func ringSize(b *testing.B, db *bun.DB) (heap, index int64) {
	b.Helper()
	err := db.QueryRowContext(context.Background(),
		`SELECT pg_table_size(?) + pg_table_size('workflow_schedule_recent_actions'),
			pg_indexes_size(?) + pg_indexes_size('workflow_schedule_recent_actions')`, ringTable, ringTable).
		Scan(&heap, &index)
	if err != nil {
		b.Fatal(err)
	}
	return heap, index
}
