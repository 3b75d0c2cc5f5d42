package timespec

import (
	"testing"
	"time"

	"github.com/tidelinehq/tideline/models"
)

// Each benchmark walks forward from a fixed instant so that it measures a
// realistic mix of calls rather than one cached answer.

func benchmarkNext(b *testing.B, spec models.Spec, cals ...*Calendar) {
	c := mustCompile2(b, spec, cals...)
	start := mustTime(b, "2026-01-01T00:00:00Z")
	at := start
	b.ReportAllocs()
	for b.Loop() {
		next, ok := c.Next(at)
		if !ok {
			if at.Equal(start) {
				b.Fatal("the spec never fires")
			}
			at = start // a bounded spec ended: start over
			continue
		}
		at = next
		if at.Year() > 2030 {
			at = start
		}
	}
}

func BenchmarkNextCron(b *testing.B) {
	benchmarkNext(b, models.Spec{CronExpressions: []string{"*/5 9-17 * * 1-5"}})
}

func BenchmarkNextInterval(b *testing.B) {
	benchmarkNext(b, models.Spec{Intervals: []models.Interval{{Every: "PT1H", Offset: "PT5M"}}})
}

func BenchmarkNextCombined(b *testing.B) {
	benchmarkNext(b, models.Spec{
		CronExpressions: []string{"0 9 * * 1-5", "30 17 L * *"},
		Intervals:       []models.Interval{{Every: "PT45M"}},
	})
}

func BenchmarkNextDSTZone(b *testing.B) {
	benchmarkNext(b, models.Spec{CronExpressions: []string{"*/15 * * * *"}, Timezone: "America/New_York"})
}

func BenchmarkNextDSTZoneAtTransition(b *testing.B) {
	c := mustCompile(b, models.Spec{CronExpressions: []string{"*/15 * * * *"}, Timezone: "America/New_York"})
	at := mustTime(b, "2026-11-01T05:50:00Z") // first pass of the repeated hour: the widest scan
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Next(at); !ok {
			b.Fatal("never")
		}
	}
}

func BenchmarkBetweenYearMinutely(b *testing.B) {
	for _, zone := range []string{"UTC", "America/New_York"} {
		b.Run(zone, func(b *testing.B) {
			c := mustCompile(b, models.Spec{CronExpressions: []string{"* * * * *"}, Timezone: zone})
			from, to := mustTime(b, "2026-01-01T00:00:00Z"), mustTime(b, "2027-01-01T00:00:00Z")
			b.ReportAllocs()
			for b.Loop() {
				got, err := c.Between(from, to, 600_000)
				if err != nil || len(got) != 525_600 {
					b.Fatalf("got %d occurrences, err %v", len(got), err)
				}
			}
		})
	}
}

// A fire compiles its schedule's spec; Compile serves it from the cache
// (compile is the work it saves).
func BenchmarkCompile(b *testing.B) {
	for name, spec := range map[string]models.Spec{
		"new_york": {CronExpressions: []string{"*/5 9-17 * * 1-5"}, Timezone: "America/New_York"},
		"utc":      {CronExpressions: []string{"* * * * *"}, Timezone: "UTC"},
	} {
		b.Run(name+"/cached", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(spec); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/uncached", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := compile(spec, nil)
				if err != nil {
					b.Fatal(err)
				}
				_ = c.Description() // what Compile built every time before
			}
		})
	}
}

// BenchmarkNextCronBounded is BenchmarkNextCron with start_at/end_at and
// 1,000 at times (the most a spec may hold): the at list is a binary
// search per call, the bounds two comparisons.
func BenchmarkNextCronBounded(b *testing.B) {
	ats := make([]string, MaxSpecAt)
	start := mustTime(b, "2026-01-01T00:00:00Z")
	for i := range ats {
		ats[i] = start.Add(time.Duration(i) * 37 * time.Hour).Format(time.RFC3339)
	}
	benchmarkNext(b, models.Spec{CronExpressions: []string{"*/5 9-17 * * 1-5"},
		StartAt: "2025-01-01T00:00:00Z", EndAt: "2031-01-01T00:00:00Z", At: ats})
}
