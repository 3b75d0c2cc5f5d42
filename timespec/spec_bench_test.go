package timespec

import (
	"testing"

	"github.com/tidelinehq/tideline/models"
)

// Each benchmark walks forward from a fixed instant so that it measures a
// realistic mix of calls rather than one cached answer.

func benchmarkNext(b *testing.B, spec models.Spec) {
	c := mustCompile(b, spec)
	start := mustTime(b, "2026-01-01T00:00:00Z")
	at := start
	b.ReportAllocs()
	for b.Loop() {
		next, ok := c.Next(at)
		if !ok {
			b.Fatal("spec stopped firing")
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
