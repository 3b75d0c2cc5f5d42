package scheduling_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/retention"
	"github.com/tidelinehq/tideline/scheduling"
)

// simClock is a scheduling.Clock the benchmark sets to simulated instants
// and that runs at real speed in between, so a retention pass's time
// budget (real work) still ends the pass while the simulated minutes pass
// in seconds.
type simClock struct {
	mu    sync.Mutex
	base  time.Time
	since time.Time
}

func (c *simClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base, c.since = t, time.Now()
}

// NewTimer waits in real time, as the clock runs at real speed between
// the benchmark's jumps.
func (c *simClock) NewTimer(d time.Duration) scheduling.Timer {
	return scheduling.SystemClock{}.NewTimer(d)
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base.Add(time.Since(c.since))
}

// BenchmarkRetentionSteady: 10,000 schedules on "* * * * *" with a one-hour
// retention (CONTRACT §13), fired for 15 minutes of simulated time on a real
// database, after an hour of finished history was put in place (one real
// minute of fires, copied 60 times into the past), so that from the first
// simulated minute on a minute's worth of runs expires while one is fired.
// A bulk UPDATE stands in for the workers: each minute's runs finish 30 s
// after they fired (no RunStarted/RunCompleted events are written, so a
// run here is two history rows lighter than in production).
//
// Variants:
//   - off: no retention; the tables grow by a minute of fires each minute;
//   - between: what one replica's loop does: after the minute's fires, the
//     passes of the rest of the minute (one a simulated second) each sweep
//     within their 200 ms budget;
//   - during: the sweep of the minute's expired runs runs at the same time
//     as the minute's fires, as another replica's loop may do it.
//
// Each minute logs the runs table's rows and size (pg_total_relation_size;
// SQLite: its pages) and all tables' bytes; metrics report the fire path's
// time per 10,000 fires and fires/s (medians over the minutes), and the
// last minute's rows and sizes.
//
//	go test ./scheduling -run '^$' -bench RetentionSteady -benchtime 1x -timeout 60m -v
func BenchmarkRetentionSteady(b *testing.B) {
	// (Before migration 0009 an instance row was deleted with each run,
	// and without an index on workflow_runs.workflow_instance_id each one
	// read the whole runs table; the instance is the run's own column now.)
	variants := []struct{ name, mode string }{{"off", "off"}, {"between", "between"}, {"during", "during"}}
	for _, dialect := range dbtest.Dialects {
		for _, v := range variants {
			b.Run(dialect+"/"+v.name, func(b *testing.B) {
				for b.Loop() {
					benchRetention(b, dialect, v.mode)
				}
			})
		}
	}
}

// The benchmark's size; TIDELINE_BENCH_RETENTION_SCHEDULES and
// TIDELINE_BENCH_RETENTION_MINUTES make a quicker run (the history stays an
// hour: it is what the retention keeps).
var (
	retentionSchedules = envSize("TIDELINE_BENCH_RETENTION_SCHEDULES", 10000)
	retentionMinutes   = envSize("TIDELINE_BENCH_RETENTION_MINUTES", 15)
)

const retentionHistory = 60 // minutes of finished runs before the simulation

func envSize(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func benchRetention(b *testing.B, dialect, mode string) {
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	db := dbtest.Open(b, dialect)
	clock := &simClock{}
	svc := scheduling.New(scheduling.Config{DB: db, Clock: clock})
	policy := retention.Policy{KeepRuns: time.Hour}
	sweeper := retention.New(db, clock.Now)
	spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
	if err := loadgen.Seed(ctx, db, "ret", retentionSchedules, spec, t0); err != nil {
		b.Fatal(err)
	}
	fire := func(at time.Time) (time.Duration, int) {
		clock.Set(at.Add(time.Second))
		started := time.Now()
		fired := 0
		for {
			rows, err := svc.Tick(ctx, 500)
			if err != nil {
				b.Fatal(err)
			}
			fired += len(rows)
			if len(rows) < 500 {
				return time.Since(started), fired
			}
		}
	}
	finish := func(at time.Time) {
		done := at.Add(30 * time.Second)
		if _, err := db.NewUpdate().Model((*models.Run)(nil)).
			Set("status = ?", models.RunCompleted).Set("started_at = ?", at.Add(time.Second)).
			Set("finished_at = ?", done).Set("updated_at = ?", done).
			Where("status = ?", models.RunPending).Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	// The template minute, then its copies into the hour before it.
	if _, n := fire(t0); n != retentionSchedules {
		b.Fatalf("template minute fired %d", n)
	}
	finish(t0)
	started := time.Now()
	copyHistory(b, db, retentionHistory)
	if err := loadgen.Analyze(ctx, db, "workflow_schedules", "workflow_runs", "workflow_history_events"); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: an hour of history (%d runs) copied in %s", b.Name(), runRows(b, db), time.Since(started).Round(time.Millisecond))

	var tickTimes []time.Duration
	var sweepTook time.Duration
	var deleted int
	for k := 1; k <= retentionMinutes; k++ {
		at := t0.Add(time.Duration(k) * time.Minute)
		var took time.Duration
		var fired int
		switch mode {
		case "during":
			// Another replica sweeps while this one fires: everything that
			// expired at this instant, in budgeted passes back to back.
			var wg sync.WaitGroup
			clock.Set(at.Add(time.Second))
			wg.Go(func() {
				sweepStart := time.Now()
				defer func() { sweepTook += time.Since(sweepStart) }()
				for {
					d, err := sweeper.Retain(ctx, policy)
					if err != nil {
						b.Error(err)
						return
					}
					deleted += d.Runs
					if d.Runs == 0 {
						return
					}
				}
			})
			b.StartTimer()
			took, fired = fire(at)
			b.StopTimer()
			wg.Wait()
		default:
			b.StartTimer()
			took, fired = fire(at)
			b.StopTimer()
		}
		if fired != retentionSchedules {
			b.Fatalf("minute %d fired %d, want %d", k, fired, retentionSchedules)
		}
		tickTimes = append(tickTimes, took)
		finish(at)
		if mode == "between" {
			// The rest of the minute: one pass a second, each sweeping
			// within its budget; stop once a pass finds nothing.
			sweepStart := time.Now()
			for s := 2; s < 60; s++ {
				clock.Set(at.Add(time.Duration(s) * time.Second))
				d, err := sweeper.Retain(ctx, policy)
				if err != nil {
					b.Fatal(err)
				}
				deleted += d.Runs
				if d.Runs == 0 {
					break // what expired at this instant is gone
				}
			}
			sweepTook += time.Since(sweepStart)
		}
		runs, runBytes := runRows(b, db), tableBytes(b, db, "workflow_runs")
		all, err := loadgen.Measure(ctx, db)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s minute %2d: fired %d in %4.0f ms (%5.0f fires/s); runs %7d rows, %6.1f MB; all tables %6.1f MB, %8d rows",
			b.Name(), k, fired, ms(took), float64(fired)/took.Seconds(), runs, float64(runBytes)/1e6, float64(all.Bytes)/1e6, all.Rows)
		if k == 1 || k == retentionMinutes {
			b.Logf("%s minute %2d by table: %s", b.Name(), k, tableSizes(b, db))
		}
		if k == retentionMinutes {
			b.ReportMetric(float64(runs), "runs-rows")
			b.ReportMetric(float64(runBytes)/1e6, "runs-MB")
			b.ReportMetric(float64(all.Bytes)/1e6, "all-MB")
		}
	}
	med := medianDuration(tickTimes)
	b.ReportMetric(ms(med)*10000/float64(retentionSchedules), "ms/10k-fires")
	b.ReportMetric(float64(retentionSchedules)/med.Seconds(), "fires/s")
	b.ReportMetric(float64(deleted)/float64(retentionMinutes), "deleted-runs/min")
	b.ReportMetric(ms(sweepTook)/float64(retentionMinutes), "sweep-ms/min")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func medianDuration(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

func runRows(b *testing.B, db *bun.DB) int {
	b.Helper()
	n, err := db.NewSelect().Model((*models.Run)(nil)).Count(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return int(n)
}

// tableBytes is one table's size with its indexes: pg_total_relation_size
// on PostgreSQL; on SQLite the pages of the table and its indexes (dbstat).
func tableBytes(b *testing.B, db *bun.DB, table string) int64 {
	b.Helper()
	var n int64
	var err error
	if database.Of(db).Name() == database.PostgreSQL {
		err = db.NewRaw("SELECT pg_total_relation_size(?::regclass)", table).Scan(context.Background(), &n)
	} else {
		err = db.NewRaw(`SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?
			OR name IN (SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?)`, table, table).Scan(context.Background(), &n)
	}
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// copyHistory copies the finished runs there are (one minute of fires),
// with their history events, into each of the given number
// of minutes before them: IDs prefixed "hNN", instance IDs suffixed, every
// time column (named *_at or *_time) moved back NN minutes. The columns
// are read from the database, so the copy follows the schema as it is.
func copyHistory(b *testing.B, db *bun.DB, minutes int) {
	b.Helper()
	ctx := context.Background()
	renamed := map[string]bool{"id": true, "workflow_instance_id": true, "workflow_run_id": true, "latest_run_id": true}
	for _, table := range []string{"workflow_runs", "workflow_history_events"} {
		cols := columnsOf(b, db, table)
		if len(cols) == 0 {
			continue // not in this schema
		}
		for m := 1; m <= minutes; m++ {
			tag := fmt.Sprintf("h%02d", m)
			exprs := make([]string, len(cols))
			for i, c := range cols {
				switch {
				case renamed[c]:
					exprs[i] = fmt.Sprintf("'%s' || %s", tag, c)
				case c == "instance_id":
					exprs[i] = fmt.Sprintf("%s || ':%s'", c, tag)
				case strings.HasSuffix(c, "_at") || strings.HasSuffix(c, "_time"):
					exprs[i] = shiftMinutes(db, c, m)
				default:
					exprs[i] = c
				}
			}
			q := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s WHERE id NOT LIKE 'h%%'",
				table, strings.Join(cols, ", "), strings.Join(exprs, ", "), table)
			if _, err := db.ExecContext(ctx, q); err != nil {
				b.Fatalf("copy %s: %v", table, err)
			}
		}
	}
}

func shiftMinutes(db *bun.DB, col string, m int) string {
	if database.Of(db).Name() == database.PostgreSQL {
		return fmt.Sprintf("%s - interval '%d minutes'", col, m)
	}
	// bun keeps SQLite times as text "2006-01-02 15:04:05.999999-07:00" in UTC.
	return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE strftime('%%Y-%%m-%%d %%H:%%M:%%f', %s, '-%d minutes') || '+00:00' END", col, col, m)
}

func columnsOf(b *testing.B, db *bun.DB, table string) []string {
	b.Helper()
	var cols []string
	var err error
	if database.Of(db).Name() == database.PostgreSQL {
		err = db.NewRaw(`SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`, table).Scan(context.Background(), &cols)
	} else {
		err = db.NewRaw("SELECT name FROM pragma_table_info(?)", table).Scan(context.Background(), &cols)
	}
	if err != nil {
		b.Fatal(err)
	}
	return cols
}

// tableSizes lists every table's size with its indexes, in MB.
func tableSizes(b *testing.B, db *bun.DB) string {
	b.Helper()
	var names []string
	var err error
	if database.Of(db).Name() == database.PostgreSQL {
		err = db.NewRaw(`SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY c.relname`).Scan(context.Background(), &names)
	} else {
		err = db.NewRaw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY name`).Scan(context.Background(), &names)
	}
	if err != nil {
		b.Fatal(err)
	}
	var parts []string
	for _, n := range names {
		if size := tableBytes(b, db, n); size >= 1e6 {
			parts = append(parts, fmt.Sprintf("%s %.1f", n, float64(size)/1e6))
		}
	}
	return strings.Join(parts, ", ")
}
