package scheduling_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// BenchmarkHTTPTargets10k fires 10,000 schedules at one instant and, in
// the same run, a probe schedule of another namespace every second. With
// "http" the 10,000 runs are HTTP targets the executor calls on a local
// receiver (default --http-concurrency 64): it reports the seconds until
// all completed and the probe's fire lag meanwhile. With "worker" the same
// runs wait for a worker that never comes: the probe's lag without any
// target work, for comparison. The loop is serve's (period 1 s, batches of
// 500, fire-ahead on PostgreSQL). docs/PERFORMANCE.md has the figures.
func BenchmarkHTTPTargets10k(b *testing.B) {
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("TIDELINE_BENCH_TARGET_RUNS")); err == nil && v > 0 {
		n = v // a smaller burst for a quick look
	}
	for _, dialect := range dbtest.Dialects {
		for _, mode := range []string{"worker", "http"} {
			b.Run(dialect+"/"+mode, func(b *testing.B) {
				for range b.N {
					db := dbtest.Open(b, dialect)
					drain, lags := targetBurst(b, db, n, mode == "http")
					if mode == "http" {
						b.ReportMetric(drain.Seconds(), "s-to-complete")
						b.ReportMetric(float64(n)/drain.Seconds(), "runs/s")
					}
					slices.Sort(lags)
					b.ReportMetric(loadgen.Percentile(lags, 0.5), "probe-lag-p50-ms")
					b.ReportMetric(loadgen.Percentile(lags, 0.99), "probe-lag-p99-ms")
					b.ReportMetric(lags[len(lags)-1], "probe-lag-max-ms")
					b.ReportMetric(float64(len(lags)), "probe-fires")
				}
			})
		}
	}
}

func targetBurst(b *testing.B, db *bun.DB, n int, http bool) (time.Duration, []float64) {
	ctx := context.Background()
	var answered atomic.Int64
	rx := httptest.NewServer(httpHandlerFunc(func() { answered.Add(1) }))
	defer rx.Close()
	svc := scheduling.New(scheduling.Config{DB: db, Logger: slog.New(slog.DiscardHandler),
		Targets: scheduling.TargetConfig{AllowPrivate: true}})
	// Seeded for later, then armed for an instant a few seconds ahead:
	// seeding 10,000 takes longer than any fixed lead.
	if err := loadgen.Seed(ctx, db, "burst", n, loadgen.EverySpec(time.Now().Add(time.Hour), time.Hour), time.Now().Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	if http {
		action := models.Action{WorkflowType: "bench", Target: &models.Target{Kind: models.TargetHTTP, URL: rx.URL + "/run", Method: "POST", TimeoutSeconds: 30}}
		if _, err := db.NewUpdate().Model((*models.Schedule)(nil)).Set("action = ?", action).Where("schedule_id LIKE 'burst-%'").Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if err := loadgen.Analyze(ctx, db, "workflow_schedules", "workflow_schedule_due", "workflow_schedule_rings"); err != nil {
		b.Fatal(err)
	}
	first := time.Now().Add(4 * time.Second).Truncate(time.Second)
	if err := loadgen.Arm(ctx, db, "burst", loadgen.EverySpec(first, time.Hour), first); err != nil {
		b.Fatal(err)
	}
	probe := scheduling.CreateInput{Namespace: "probe", ScheduleID: "every-second", OverlapPolicy: scheduling.OverlapAllowAll,
		Spec: loadgen.EverySpec(first, time.Second), Action: models.Action{WorkflowType: "probe"}}
	if _, err := svc.Create(ctx, probe, nil); err != nil {
		b.Fatal(err)
	}
	loop := &scheduling.Loop{Service: svc, Period: time.Second, Limit: 500, Ahead: time.Minute,
		OnPass: func(res scheduling.LoopResult, took time.Duration, err error) {
			if os.Getenv("TIDELINE_BENCH_DEBUG") != "" {
				b.Logf("pass: %d rows in %v err %v", len(res.Rows), took, err)
			}
		}}
	loopCtx, stop := context.WithCancel(ctx)
	b.ResetTimer()
	loop.Start(loopCtx)
	defer func() { stop(); loop.Stop() }()

	// Until all have fired (and, with http, completed): the window the
	// probe's lag is measured over, at least 10 s.
	count := func(where string, args ...any) int {
		c, err := db.NewSelect().Model((*models.Run)(nil)).Where(where, args...).Count(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return int(c)
	}
	var fired, drain time.Duration
	for fired == 0 || (http && drain == 0) {
		time.Sleep(100 * time.Millisecond)
		if fired == 0 && count("namespace = 'default'") == n {
			fired = time.Since(first)
		}
		if http && drain == 0 && count("namespace = 'default' AND status = ?", models.RunCompleted) == n {
			drain = time.Since(first)
		}
		if time.Since(first) > 10*time.Minute {
			b.Fatalf("not done after 10 minutes (fired after %v)", fired)
		}
	}
	window := max(fired, drain, 10*time.Second)
	// The probe has fired past the window, so its occurrences inside it
	// have all fired, however late.
	for count("namespace = 'probe' AND occurrence_time > ?", first.Add(window)) == 0 {
		time.Sleep(100 * time.Millisecond)
		if time.Since(first) > window+2*time.Minute {
			b.Fatal("the probe's occurrences of the window did not all fire")
		}
	}
	b.StopTimer()
	b.ReportMetric(fired.Seconds(), "s-to-fire-all")
	var runs []models.Run
	if err := db.NewSelect().Model(&runs).Where("namespace = 'probe'").Where("occurrence_time >= ? AND occurrence_time <= ?", first, first.Add(window)).Scan(ctx); err != nil {
		b.Fatal(err)
	}
	lags := make([]float64, 0, len(runs))
	for _, r := range runs {
		lags = append(lags, float64(r.CreatedAt.Sub(*r.OccurrenceTime).Microseconds())/1000)
	}
	if http && answered.Load() < int64(n) {
		b.Fatalf("the receiver answered %d requests, want %d", answered.Load(), n)
	}
	return drain, lags
}

func httpHandlerFunc(count func()) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		count()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"ok":true}`)
	}
}
