package reliability

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// yearOfMinutes is a year of a per-minute schedule: the job issue 33 asks
// to run beside regular fires.
const yearOfMinutes = 525_600

// BenchmarkBackfillJobBesideFires measures what a year's backfill job costs
// the regular fires (SPEC §18): BenchmarkFireLag's 10,000 schedules on
// "* * * * *" with one serve replica on PostgreSQL, three minute
// boundaries, once alone and once with an unpaced backfill job of 525,600
// occurrences (a year of a per-minute schedule) started just before the
// first boundary and worked by the same replica's backfill worker. It
// reports the regular fires' visible lag in both (same run, so the two can
// be compared), how many of the job's occurrences were started while the
// fires were measured and at what rate, and how long the whole job took
// (the replica keeps running until the job completes).
//
//	go test ./reliability -run '^$' -bench BackfillJobBesideFires -benchtime 1x -count 1 -timeout 60m
func BenchmarkBackfillJobBesideFires(b *testing.B) {
	const minutes, schedules = 3, 10000
	for _, backfill := range []int{0, yearOfMinutes} {
		name := "job=none"
		if backfill > 0 {
			name = "job=525600"
		}
		b.Run(name, func(b *testing.B) {
			var p50, p99, worst, started, rate, whole []float64
			for b.Loop() {
				r := measureFireLag(b, dbtest.PostgresURL(b), schedules, minutes, nil, backfill)
				p50, p99, worst = append(p50, r.p50), append(p99, r.p99), append(worst, r.max)
				started, rate, whole = append(started, float64(r.job.startedWhileFiring)), append(rate, r.job.perSecond), append(whole, r.job.took.Seconds())
			}
			b.ReportMetric(mean(p50), "p50-ms")
			b.ReportMetric(mean(p99), "p99-ms")
			b.ReportMetric(mean(worst), "max-ms")
			if backfill > 0 {
				b.ReportMetric(mean(started), "job-started-while-firing")
				b.ReportMetric(mean(rate), "job-occurrences/s")
				b.ReportMetric(mean(whole), "job-total-s")
			}
		})
	}
}

// yearJob is a backfill job running beside a lag measurement.
type yearJob struct {
	svc   *scheduling.Service
	db    *bun.DB
	id    string
	total int
	began time.Time
}

// jobProgress is what the job did: started while the fires were measured
// (and the rate of that), and the time to finish it all.
type jobProgress struct {
	startedWhileFiring int64
	perSecond          float64
	took               time.Duration
}

// startYearJob creates a schedule firing every minute at :30 (so its own
// runs never share an occurrence the observer counts) and starts a
// backfill job of the occurrences occurrences before first, from the test
// process; the replica's backfill worker does the rest.
func startYearJob(b *testing.B, db *bun.DB, first time.Time, occurrences int) *yearJob {
	b.Helper()
	ctx := context.Background()
	svc := scheduling.New(scheduling.Config{DB: db, Logger: slog.New(slog.DiscardHandler)})
	_, err := svc.Create(ctx, scheduling.CreateInput{
		ScheduleID: "year-backfill", OverlapPolicy: scheduling.OverlapAllowAll,
		Spec:   models.Spec{Intervals: []models.Interval{{Every: "PT1M", Offset: "PT30S"}}},
		Action: models.Action{WorkflowType: "reprocess"},
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	to := first.Add(-time.Minute).Truncate(time.Minute)
	from := to.Add(-time.Duration(occurrences) * time.Minute)
	began := time.Now()
	job, err := svc.StartBackfill(ctx, "default", "year-backfill", scheduling.BackfillJobInput{From: from, To: to})
	if err != nil {
		b.Fatal(err)
	}
	if job.Total != int64(occurrences) {
		b.Fatalf("the job holds %d occurrences, want %d", job.Total, occurrences)
	}
	return &yearJob{svc: svc, db: db, id: job.ID, total: occurrences, began: began}
}

// finish reads how far the job got while the fires were measured, then
// waits for it to complete and checks that every occurrence started once.
func (j *yearJob) finish(b *testing.B) jobProgress {
	b.Helper()
	ctx := context.Background()
	job, err := j.svc.GetBackfill(ctx, "default", j.id)
	if err != nil {
		b.Fatal(err)
	}
	p := jobProgress{startedWhileFiring: job.Started, perSecond: float64(job.Started) / time.Since(j.began).Seconds()}
	waitFor(b, 30*time.Minute, time.Second, "the backfill job to complete", func() (bool, error) {
		job, err = j.svc.GetBackfill(ctx, "default", j.id)
		return err == nil && job.Status != models.BackfillRunning, err
	})
	p.took = time.Since(j.began)
	if job.Status != models.BackfillCompleted || job.Started != int64(j.total) {
		b.Fatalf("backfill job %s: %s with %d of %d started (%d skipped, %d failed)", j.id, job.Status, job.Started, j.total, job.Skipped, job.Failed)
	}
	runs, err := j.db.NewSelect().Model((*models.Run)(nil)).Where("schedule_id = ? AND occurrence_time < ?", "year-backfill", job.To).Count(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if runs != int64(j.total) {
		b.Fatalf("%d runs of the job's occurrences, want %d, each once", runs, j.total)
	}
	b.Logf("backfill job: %d started while the fires were measured (%.0f/s), all %d in %s", p.startedWhileFiring, p.perSecond, j.total, p.took.Round(time.Second))
	return p
}
