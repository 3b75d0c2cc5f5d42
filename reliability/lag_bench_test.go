package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
)

// BenchmarkFireLag measures fire lag with 10,000 (and on PostgreSQL with
// default flags also 100,000) schedules on "* * * * *" and one `tideline
// serve` replica running its loop, over three minute boundaries (about 3
// minutes per sample, plus the seeding). On PostgreSQL sub-benchmarks vary
// --fire-ahead: "default" passes no flag (fires prepared before the instant
// and committed at it), 0 fires everything when the instant comes; SQLite
// always fires at the instant.
//
// Lag is measured from outside: an observer on its own connection counts
// the runs of the current minute every 20 ms (an index range on the run
// IDs, which are ULIDs stamped with the fire time), so the k-th run's lag
// is when the observer first saw k runs, minus the occurrence. That is the
// moment a worker could have claimed it. created_at − occurrence_time is
// reported too ("stamped"), but for prepared fires it is the instant by
// construction, so it proves nothing about them.
//
// On PostgreSQL it also reports bytes/fire: how much the schema's tables
// (heap, indexes and TOAST of every table, the schedules included) grew
// from just before the first occurrence to the end, per fire — autovacuum
// running as it would in production.
//
//	go test ./reliability -run '^$' -bench FireLag -benchtime 1x -count 3 -timeout 60m
func BenchmarkFireLag(b *testing.B) {
	const minutes = 3
	sqliteURL := func(b testing.TB) string { return "sqlite:" + filepath.Join(b.TempDir(), "lag.db") }
	variants := []struct {
		name  string
		url   func(b testing.TB) string
		n     int
		flags []string
	}{
		{"postgres/fire-ahead=default/schedules=10000", dbtest.PostgresURL, 10000, nil},
		{"postgres/fire-ahead=default/schedules=100000", dbtest.PostgresURL, 100000, nil},
		{"postgres/fire-ahead=0/schedules=10000", dbtest.PostgresURL, 10000, []string{"--fire-ahead", "0"}},
		// SQLite has one writer, so it cannot hold fires open: it always
		// fires at the instant (--fire-ahead does nothing there).
		{"sqlite/schedules=10000", sqliteURL, 10000, nil},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var p50, p99, worst, stamped, bytes []float64
			for b.Loop() {
				r := measureFireLag(b, v.url(b), v.n, minutes, v.flags, 0)
				p50, p99, worst, stamped = append(p50, r.p50), append(p99, r.p99), append(worst, r.max), append(stamped, r.stampedP99)
				bytes = append(bytes, r.bytesPerFire)
			}
			b.ReportMetric(mean(p50), "p50-ms")
			b.ReportMetric(mean(p99), "p99-ms")
			b.ReportMetric(mean(worst), "max-ms")
			b.ReportMetric(mean(stamped), "stamped-p99-ms")
			if bytes[0] > 0 {
				b.ReportMetric(mean(bytes), "bytes/fire")
			}
		})
	}
}

type lagResult struct {
	p50, p99, max, stampedP99, bytesPerFire float64
	job                                     jobProgress // when a backfill job ran beside
}

// measureFireLag measures the fire lag of n schedules over the minutes;
// with backfill > 0 a backfill job of that many occurrences runs beside
// them in the same replica (startYearJob), and its progress is reported.
func measureFireLag(b *testing.B, url string, n, minutes int, flags []string, backfill int) lagResult {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	db := openDB(b, url)
	ctx := context.Background()
	if _, err := migrations.Apply(ctx, db); err != nil {
		b.Fatal(err)
	}
	// The first occurrence is the next minute boundary at least 20 s away
	// (one more second per 2,500 schedules, so that a first preparation,
	// which starts from a cautious guess of the write rate, has the time
	// later ones take), so the replica is up and idle when it comes. It is
	// chosen once the schedules are seeded, which takes a while at 100,000.
	seedMinutely(b, db, "lag", n, time.Now().Add(24*time.Hour))
	lead := max(20*time.Second, time.Duration(n/2500)*time.Second)
	first := time.Now().UTC().Add(lead).Truncate(time.Minute).Add(time.Minute)
	makeAllDue(b, db, first)
	vacuum := "ANALYZE workflow_schedules"
	if database.Of(db).Name() == database.PostgreSQL {
		vacuum = "VACUUM ANALYZE workflow_schedules" // the re-seeding's old row versions
	}
	if _, err := db.ExecContext(ctx, vacuum); err != nil {
		b.Fatal(err)
	}
	var job *yearJob
	if backfill > 0 {
		job = startYearJob(b, db, first, backfill)
	}
	sizeBefore := schemaSize(b, db)
	r := newReplica(b, "lag", url, append([]string{"--log-level", "debug"}, flags...)...)
	r.start()

	observed := make(chan [][]loadgen.Sighting, 1)
	go func() { observed <- observeRuns(b, db, first, minutes, n) }()
	b.StartTimer()
	waitFor(b, time.Until(first)+time.Duration(minutes+2)*time.Minute, time.Second, fmt.Sprintf("%d fires of every schedule", minutes), func() (bool, error) {
		done, err := db.NewSelect().Model((*models.Schedule)(nil)).Where("fires_count >= ? AND schedule_id LIKE 'lag-%'", minutes).Count(ctx)
		return done == int64(n), err
	})
	b.StopTimer()
	var progress jobProgress
	if job != nil {
		progress = job.finish(b)
	}
	r.stop()
	grown := schemaSize(b, db) - sizeBefore
	// How far ahead the replica prepared, as it logged it.
	if logged, err := os.ReadFile(r.log.Name()); err == nil {
		for line := range strings.Lines(string(logged)) {
			if strings.Contains(line, "prepared fires committed") || strings.Contains(line, "preparer done") {
				b.Logf("replica: %s", strings.TrimSpace(line))
			}
		}
	}

	var lags []float64
	for m, sightings := range <-observed {
		occurrence := first.Add(time.Duration(m) * time.Minute)
		minuteLags := loadgen.Lags(sightings, occurrence, n)
		if len(minuteLags) < n {
			b.Fatalf("the observer saw %d of %d runs of %s within 30 s", len(minuteLags), n, occurrence.Format("15:04"))
		}
		b.Logf("%s, occurrence %s: first visible after %.0f ms, 50%% after %.0f ms, 99%% after %.0f ms, all after %.0f ms",
			b.Name(), occurrence.Format("15:04"), minuteLags[0], percentile(minuteLags, 0.5), percentile(minuteLags, 0.99), minuteLags[len(minuteLags)-1])
		lags = append(lags, minuteLags...)
	}
	slices.Sort(lags)
	res := lagResult{p50: percentile(lags, 0.5), p99: percentile(lags, 0.99), max: lags[len(lags)-1], job: progress}
	var stamps []struct {
		CreatedAt  time.Time `bun:"created_at"`
		Occurrence time.Time `bun:"occurrence_time"`
	}
	err := db.NewSelect().Model((*models.Run)(nil)).Column("created_at", "occurrence_time").
		Where("occurrence_time >= ? AND occurrence_time < ?", first, first.Add(time.Duration(minutes)*time.Minute)).
		Where("schedule_id LIKE 'lag-%'").Scan(ctx, &stamps)
	if err != nil {
		b.Fatal(err)
	}
	stamped := make([]float64, 0, len(stamps))
	for _, r := range stamps {
		stamped = append(stamped, float64(r.CreatedAt.Sub(r.Occurrence).Microseconds())/1000)
	}
	slices.Sort(stamped)
	res.stampedP99 = percentile(stamped, 0.99)
	if database.Of(db).Name() == database.PostgreSQL && job == nil {
		res.bytesPerFire = float64(grown) / float64(n*minutes)
	}
	b.Logf("%s: visible lag p50 %.0f ms, p99 %.0f ms, max %.0f ms; stamped (created_at) p99 %.0f ms; tables grew %d bytes (%.0f per fire)",
		b.Name(), res.p50, res.p99, res.max, res.stampedP99, grown, res.bytesPerFire)
	return res
}

// schemaSize is the size of every table of the test's schema with its
// indexes and TOAST, on PostgreSQL (0 elsewhere).
func schemaSize(b *testing.B, db *bun.DB) int64 {
	b.Helper()
	if database.Of(db).Name() != database.PostgreSQL {
		return 0
	}
	var size int64
	err := db.NewRaw(`SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace`).Scan(context.Background(), &size)
	if err != nil {
		b.Fatal(err)
	}
	return size
}

// observeRuns watches each of the minutes from first, from outside the
// replica (loadgen.Observe): from 2 s before the occurrence until all n runs
// are visible or 30 s have passed, every 20 ms.
func observeRuns(b *testing.B, db *bun.DB, first time.Time, minutes, n int) [][]loadgen.Sighting {
	ctx := context.Background()
	out := make([][]loadgen.Sighting, minutes)
	for m := range minutes {
		occurrence := first.Add(time.Duration(m) * time.Minute)
		sightings, err := loadgen.Observe(ctx, db, loadgen.Watch{Occurrence: occurrence, Want: n, Until: occurrence.Add(30 * time.Second)})
		if err != nil {
			b.Error(err)
			return out
		}
		out[m] = sightings
	}
	return out
}

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, q float64) float64 { return loadgen.Percentile(sorted, q) }

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
