package reliability

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// BenchmarkBackfillInterference runs a 10,000-occurrence backfill while the
// loop fires 20 every-second schedules and a client lists schedules every
// 10 ms, all in one process on the real clock: what an operator's backfill
// costs everyone else. It reports the list latency (p50, max), the fire lag
// of the every-second schedules while the backfill ran (created_at −
// occurrence, max), how many of their occurrences were dropped as missed,
// and how long the backfill took.
//
//	go test ./reliability -run '^$' -bench BackfillInterference -benchtime 1x -count 3
func BenchmarkBackfillInterference(b *testing.B) {
	sqlite := func(b testing.TB) string { return "sqlite:" + filepath.Join(b.TempDir(), "backfill.db") }
	// batch=10000 is the whole backfill in one transaction, as before
	// backfills were batched; it is here for the same-run comparison.
	variants := []struct {
		name  string
		url   func(b testing.TB) string
		batch int
	}{
		{"sqlite/batch=100", sqlite, 100},
		{"sqlite/batch=10000", sqlite, 10000},
		{"postgres/batch=100", dbtest.PostgresURL, 100},
		{"postgres/batch=10000", dbtest.PostgresURL, 10000},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var listP50, listMax, lagMax, dropped, took []float64
			for b.Loop() {
				r := measureBackfillInterference(b, v.url(b), v.batch)
				listP50, listMax, lagMax = append(listP50, r.listP50), append(listMax, r.listMax), append(lagMax, r.lagMax)
				dropped, took = append(dropped, r.dropped), append(took, r.backfill.Seconds())
			}
			b.ReportMetric(mean(listP50), "list-p50-ms")
			b.ReportMetric(mean(listMax), "list-max-ms")
			b.ReportMetric(mean(lagMax), "fire-lag-max-ms")
			b.ReportMetric(mean(dropped), "dropped-fires")
			b.ReportMetric(mean(took), "backfill-s")
		})
	}
}

type interference struct {
	listP50, listMax, lagMax, dropped float64
	backfill                          time.Duration
}

func measureBackfillInterference(b *testing.B, url string, batch int) interference {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	db := openDB(b, url)
	if _, err := migrations.Apply(ctx, db); err != nil {
		b.Fatal(err)
	}
	svc := scheduling.New(scheduling.Config{DB: db, Logger: slog.New(slog.DiscardHandler), BackfillBatch: batch})
	const tickers = 20
	for i := range tickers {
		_, err := svc.Create(ctx, scheduling.CreateInput{
			ScheduleID: fmt.Sprintf("tick-%02d", i), OverlapPolicy: scheduling.OverlapAllowAll,
			Spec:   models.Spec{Intervals: []models.Interval{{Every: "PT1S"}}},
			Action: models.Action{WorkflowType: "tick"},
		}, nil)
		if err != nil {
			b.Fatal(err)
		}
	}
	_, err := svc.Create(ctx, scheduling.CreateInput{
		ScheduleID: "bulk", OverlapPolicy: scheduling.OverlapAllowAll,
		Spec:   models.Spec{CronExpressions: []string{"0 * * * *"}},
		Action: models.Action{WorkflowType: "bulk"},
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	loopCtx, stopLoop := context.WithCancel(ctx)
	loop := &scheduling.Loop{Service: svc, Period: 100 * time.Millisecond, Limit: 500}
	loop.Start(loopCtx)
	defer func() { stopLoop(); loop.Stop() }()
	waitFor(b, 10*time.Second, 50*time.Millisecond, "the every-second schedules firing", func() (bool, error) {
		n, err := db.NewSelect().Model((*models.Run)(nil)).Where("workflow_type = ?", "tick").Count(ctx)
		return n >= 2*tickers, err
	})

	var mu sync.Mutex
	var latencies []float64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			started := time.Now()
			if _, err := svc.List(ctx, scheduling.ListFilter{Namespace: "default", Limit: 50}); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			latencies = append(latencies, float64(time.Since(started).Microseconds())/1000)
			mu.Unlock()
		}
	}()

	b.StartTimer()
	from := time.Now().UTC().Truncate(time.Hour).Add(-10000 * time.Hour)
	started := time.Now()
	rep, err := svc.Backfill(ctx, "default", "bulk", scheduling.BackfillInput{From: from, To: from.Add(10000 * time.Hour)})
	took := time.Since(started)
	b.StopTimer()
	close(done)
	wg.Wait()
	if err != nil {
		b.Fatal(err)
	}
	if rep.Outcome != "completed" || len(rep.Results) != 10000 {
		b.Fatalf("backfill: %s with %d results", rep.Outcome, len(rep.Results))
	}

	// The every-second fires whose occurrence fell inside the backfill.
	var stamps []struct {
		CreatedAt  time.Time `bun:"created_at"`
		Occurrence time.Time `bun:"occurrence_time"`
	}
	err = db.NewSelect().Model((*models.Run)(nil)).Column("created_at", "occurrence_time").
		Where("workflow_type = ? AND occurrence_time >= ? AND occurrence_time < ?", "tick", started, started.Add(took)).
		Scan(ctx, &stamps)
	if err != nil {
		b.Fatal(err)
	}
	var lagMax float64
	for _, s := range stamps {
		lagMax = max(lagMax, float64(s.CreatedAt.Sub(s.Occurrence).Microseconds())/1000)
	}
	expected := tickers * int(took/time.Second)
	slices.Sort(latencies)
	r := interference{lagMax: lagMax, dropped: float64(max(0, expected-len(stamps))), backfill: took}
	if len(latencies) > 0 {
		r.listP50, r.listMax = percentile(latencies, 0.5), latencies[len(latencies)-1]
	}
	b.Logf("%s: backfill %.1f s; %d lists, p50 %.1f ms, max %.1f ms; %d of ~%d every-second fires, max lag %.0f ms",
		b.Name(), took.Seconds(), len(latencies), r.listP50, r.listMax, len(stamps), expected, lagMax)
	return r
}
