package scheduling_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/retention"
	"github.com/tidelinehq/tideline/scheduling"
)

// TestCompactionLevelsOffOverSimulatedDays: 200 schedules on "*/10 * * * *" fired
// over four simulated days (fake clock, real PostgreSQL) with a one-day
// retention, a worker finishing every run; each simulated day logs every
// table's size (pg_total_relation_size, after the swept tables' vacuum).
// With compaction the audit stream levels off with the runs; before it,
// workflow_schedule_history_events grew by a day of fires each day.
//
// The audit stream's and the runs' row counts are the same on days 3 and
// 4 (the window is full from day 2 on), and no table grows by more than a
// tenth (or 256 kB) from day 3 to day 4. The loop's upkeep runs each step,
// as a served loop runs it every minute: without it, where autovacuum is
// off, the health rows grew 57 MB a day and the due queue 2.5 MB.
//
//	go test ./scheduling -run CompactionLevelsOff -count=1 -v
func TestCompactionLevelsOffOverSimulatedDays(t *testing.T) {
	if os.Getenv("TIDELINE_SIMULATED_DAYS") == "" {
		t.Skip("minutes long on a shared machine: set TIDELINE_SIMULATED_DAYS=1 to run it")
	}
	b := t
	db := dbtest.Postgres(t)
	f := newFixture(t, db)
	const schedules = 200
	for i := range schedules {
		in := cronInput(fmt.Sprintf("s%03d", i), "*/10 * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
	}
	loop := &scheduling.Loop{Service: f.svc, Retention: retention.Policy{KeepRuns: 24 * time.Hour, Budget: time.Second}}
	start := t0.Truncate(time.Hour)
	var rows [][2]int
	sizes := map[string][]int64{} // table → kB at the end of each day
	tables := []string{"workflow_schedules", "workflow_schedule_history_events", "workflow_runs", "workflow_history_events",
		"workflow_schedule_rings", "workflow_schedule_health", "workflow_schedule_due", "workflow_schedule_compaction"}
	for step := 1; step <= 4*24*6; step++ {
		f.clock.Set(start.Add(time.Duration(step) * 10 * time.Minute))
		_, err := loop.RunOnce(f.ctx)
		require.NoError(b, err)
		// A served loop also runs its upkeep (the vacuums of the due
		// queue and the health rows) every minute; RunOnce does not.
		_, err = loop.Upkeep(f.ctx)
		require.NoError(b, err)
		for {
			runs := f.poll(100, 30)
			for _, run := range runs {
				_, err := f.svc.CompleteRun(f.ctx, "default", run.ID, w1, nil)
				require.NoError(b, err)
			}
			if len(runs) < 100 {
				break
			}
		}
		if step%(24*6) == 0 {
			rows = append(rows, [2]int{f.count((*models.ScheduleEvent)(nil), ""), f.count((*models.Run)(nil), "")})
			line := fmt.Sprintf("day %d:", step/(24*6))
			for _, table := range tables {
				var size int64
				require.NoError(b, db.NewRaw("SELECT pg_total_relation_size(?)", table).Scan(f.ctx, &size))
				n, err := db.NewSelect().Table(table).Count(f.ctx)
				require.NoError(b, err)
				line += fmt.Sprintf(" %s=%d rows/%d kB", table, n, size/1024)
				sizes[table] = append(sizes[table], size/1024)
			}
			b.Log(line)
		}
	}
	require.Equal(t, rows[2], rows[3], "audit events and runs level off (day 3 vs day 4)")
	for _, table := range tables {
		day3, day4 := sizes[table][2], sizes[table][3]
		require.LessOrEqual(t, day4, day3+max(day3/10, 256), "%s grew from %d kB on day 3 to %d kB on day 4: it does not level off", table, day3, day4)
	}
}
