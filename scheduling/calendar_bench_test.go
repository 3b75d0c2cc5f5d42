package scheduling_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// bigCalendar is 20,000 consecutive dates from 2030 on: the largest
// calendar, none of whose dates falls near t0, so the fires measured are
// the same ones with and without it.
func bigCalendar() []string {
	out := make([]string, 0, 20000)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 20000 {
		out = append(out, start.AddDate(0, 0, i).Format(time.DateOnly))
	}
	return out
}

// BenchmarkCalendarTick: 1,000 schedules due at once, firing every minute,
// without a calendar and all sharing one 20,000-date calendar, in the same
// run (docs/PERFORMANCE.md). Reports µs per fire.
func BenchmarkCalendarTick(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		for _, withCalendar := range []bool{false, true} {
			name := dialect + "/no-calendar"
			if withCalendar {
				name = dialect + "/calendar-20000"
			}
			b.Run(name, func(b *testing.B) {
				const n = 1000
				db := dbtest.Open(b, dialect)
				clock := schedtest.NewClock(t0)
				svc := schedtest.Service(db, clock)
				spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
				if withCalendar {
					if _, err := svc.CreateCalendar(context.Background(), "default", scheduling.CalendarInput{Name: "big", Dates: bigCalendar()}, nil); err != nil {
						b.Fatal(err)
					}
					spec.ExcludeCalendars = []string{"big"}
				}
				if err := loadgen.Seed(context.Background(), db, "cal", n, spec, t0); err != nil {
					b.Fatal(err)
				}
				loop := &scheduling.Loop{Service: svc, Limit: 500}
				var fired int
				var elapsed time.Duration
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					at := t0.Add(time.Duration(i) * time.Minute)
					makeDue(b, db, "cal", at)
					clock.Set(at.Add(time.Second))
					b.StartTimer()
					started := time.Now()
					res, err := loop.RunOnce(context.Background())
					elapsed += time.Since(started)
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Rows) != n {
						b.Fatalf("fired %d, want %d", len(res.Rows), n)
					}
					fired += len(res.Rows)
				}
				b.ReportMetric(float64(elapsed.Microseconds())/float64(fired), "µs/fire")
			})
		}
	}
}

// BenchmarkCalendarEdit: one edit of a 20,000-date calendar that 1,000
// schedules use, each edit moving every one's next fire (today's date
// listed, then not), all in the edit's one transaction.
func BenchmarkCalendarEdit(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			const n = 1000
			db := dbtest.Open(b, dialect)
			clock := schedtest.NewClock(t0)
			svc := schedtest.Service(db, clock)
			ctx := context.Background()
			dates := bigCalendar()
			if _, err := svc.CreateCalendar(ctx, "default", scheduling.CalendarInput{Name: "big", Dates: dates}, nil); err != nil {
				b.Fatal(err)
			}
			spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC", ExcludeCalendars: []string{"big"}}
			if err := loadgen.Seed(ctx, db, "cal", n, spec, t0.Add(time.Minute)); err != nil {
				b.Fatal(err)
			}
			withToday := append([]string{t0.Format(time.DateOnly)}, dates[:len(dates)-1]...)
			for i := 0; b.Loop(); i++ {
				next := dates
				if i%2 == 0 {
					next = withToday
				}
				ch, err := svc.UpdateCalendar(ctx, "default", "big", scheduling.CalendarInput{Dates: next}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(ch.Replanned) != n {
					b.Fatalf("re-planned %d, want %d", len(ch.Replanned), n)
				}
			}
		})
	}
}
