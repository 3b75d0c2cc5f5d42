package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
)

// BenchmarkFireLag measures fire lag (run start − occurrence time) with
// 10,000 schedules on "* * * * *" and one `tideline serve` replica running
// its loop on PostgreSQL, over three minute boundaries (about 3½ minutes
// per run). Sub-benchmarks vary --loop-period: 1s is the default, and a
// fire can only start at a loop pass, so the period is a floor on the lag.
// Reported: p50, p99 and max lag in milliseconds, and how long the last
// of the 10,000 fires of a minute took (the "drain" time).
//
//	go test ./reliability -run '^$' -bench FireLag -benchtime 1x -count 3 -timeout 60m
func BenchmarkFireLag(b *testing.B) {
	const n, minutes = 10000, 3
	for _, period := range []string{"1s", "100ms"} {
		b.Run("period="+period, func(b *testing.B) {
			var p50, p99, worst, drain []float64
			for b.Loop() {
				r := measureFireLag(b, n, minutes, period)
				p50, p99, worst, drain = append(p50, r.p50), append(p99, r.p99), append(worst, r.max), append(drain, r.drain)
			}
			b.ReportMetric(mean(p50), "p50-ms")
			b.ReportMetric(mean(p99), "p99-ms")
			b.ReportMetric(mean(worst), "max-ms")
			b.ReportMetric(mean(drain), "drain-ms")
		})
	}
}

type lagResult struct{ p50, p99, max, drain float64 }

func measureFireLag(b *testing.B, n, minutes int, period string) lagResult {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	url := dbtest.PostgresURL(b)
	db := openDB(b, url)
	ctx := context.Background()
	if _, err := migrations.Apply(ctx, db); err != nil {
		b.Fatal(err)
	}
	// The first occurrence is the next minute boundary at least 20 s away,
	// so the replica is up and idle when it comes.
	first := time.Now().UTC().Add(20 * time.Second).Truncate(time.Minute).Add(time.Minute)
	seedMinutely(b, db, "lag", n, first)
	if _, err := db.ExecContext(ctx, "ANALYZE workflow_schedules"); err != nil {
		b.Fatal(err)
	}
	r := newReplica(b, "lag", url, "--loop-period", period, "--log-level", "warn")
	r.start()
	b.StartTimer()
	waitFor(b, time.Until(first)+time.Duration(minutes+2)*time.Minute, time.Second, fmt.Sprintf("%d fires of every schedule", minutes), func() (bool, error) {
		done, err := db.NewSelect().Model((*models.Schedule)(nil)).Where("fires_count >= ?", minutes).Count(ctx)
		return done == int64(n), err
	})
	b.StopTimer()
	r.stop()

	var res lagResult
	err := db.NewRaw(`SELECT
			1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM created_at - occurrence_time)),
			1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM created_at - occurrence_time)),
			1000 * max(extract(epoch FROM created_at - occurrence_time))
		FROM workflow_runs WHERE occurrence_time < ?`, first.Add(time.Duration(minutes)*time.Minute)).
		Scan(ctx, &res.p50, &res.p99, &res.max)
	if err != nil {
		b.Fatal(err)
	}
	var perMinute []struct {
		Occurrence time.Time `bun:"occurrence_time"`
		Fires      int       `bun:"fires"`
		FirstMs    float64   `bun:"first_ms"`
		LastMs     float64   `bun:"last_ms"`
	}
	err = db.NewRaw(`SELECT occurrence_time, count(*) AS fires,
			1000 * min(extract(epoch FROM created_at - occurrence_time)) AS first_ms,
			1000 * max(extract(epoch FROM created_at - occurrence_time)) AS last_ms
		FROM workflow_runs GROUP BY occurrence_time ORDER BY occurrence_time`).Scan(ctx, &perMinute)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range perMinute[:min(minutes, len(perMinute))] {
		b.Logf("period %s, occurrence %s: %d fires, first after %.0f ms, last after %.0f ms",
			period, m.Occurrence.UTC().Format("15:04"), m.Fires, m.FirstMs, m.LastMs)
		res.drain += (m.LastMs - m.FirstMs) / float64(minutes)
	}
	b.Logf("period %s: lag p50 %.0f ms, p99 %.0f ms, max %.0f ms", period, res.p50, res.p99, res.max)
	return res
}

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
