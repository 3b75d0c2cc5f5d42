package scheduling_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// BenchmarkLedgerPage reads pages of 1,000 occurrences of a minutely
// schedule with a year of history on PostgreSQL: 525,600 occurrences, every
// one started (a run and a ScheduleTriggered event each),
// with a skip every 10 minutes and a pause and resume every day. Pages
// from the start, the middle and the end of the year cost the same: the
// work is bounded by the page, not the history.
func BenchmarkLedgerPage(b *testing.B) {
	db := dbtest.Postgres(b)
	ctx := context.Background()
	year := 365 * 24 * time.Hour
	created := t0.Add(-year)
	clock := schedtest.NewClock(created)
	svc := schedtest.Service(db, clock)
	if _, err := svc.Create(ctx, cronInput("minutely", "* * * * *"), nil); err != nil {
		b.Fatal(err)
	}
	clock.Set(t0)
	// A year of history straight in SQL: going through the tick would take
	// minutes. Minute k of the year is created + k minutes.
	seed := []string{
		`INSERT INTO workflow_runs (id, namespace, instance_id, workflow_schedule_id, schedule_id, workflow_type, status, trigger, connection, queue, occurrence_time, created_at, updated_at)
		 SELECT 'r' || lpad(k::text, 10, '0'), 'default', 'schedule:minutely:' || (extract(epoch FROM ?::timestamptz)::bigint + 60 * k),
		        s.id, 'minutely', 'bench', 'completed', 'scheduled', 'default', 'default', ?::timestamptz + k * interval '1 minute',
		        ?::timestamptz + k * interval '1 minute' + interval '150 milliseconds', ?::timestamptz + k * interval '1 minute'
		 FROM generate_series(1, 525599) AS k, workflow_schedules s WHERE k % 10 <> 0`,
		`INSERT INTO workflow_schedule_history_events (id, workflow_schedule_id, sequence, event_type, payload, workflow_instance_id, workflow_run_id, recorded_at)
		 SELECT 'e' || lpad(k::text, 10, '0'), s.id, 100 + k,
		        CASE WHEN k % 10 = 0 THEN 'ScheduleTriggerSkipped' ELSE 'ScheduleTriggered' END,
		        CASE WHEN k % 10 = 0 THEN '{"reason":"overlap_policy_skip","skipped_trigger_count":1,"last_skipped_at":"x"}'::jsonb ELSE '{"outcome":"scheduled"}'::jsonb END,
		        'schedule:minutely:' || (extract(epoch FROM ?::timestamptz)::bigint + 60 * k), NULL, ?::timestamptz + k * interval '1 minute'
		 FROM generate_series(1, 525599) AS k, workflow_schedules s`,
		// A pause at 03:00:30 and a resume at 03:10:30 every day.
		`INSERT INTO workflow_schedule_history_events (id, workflow_schedule_id, sequence, event_type, payload, recorded_at)
		 SELECT 'p' || lpad(d::text, 10, '0') || x, s.id, 1000000 + 2 * d + (x = 'r')::int,
		        CASE x WHEN 'p' THEN 'SchedulePaused' ELSE 'ScheduleResumed' END, '{}'::jsonb,
		        ?::timestamptz + d * interval '1 day' + interval '3 hours 30 seconds' + (x = 'r')::int * interval '10 minutes'
		 FROM generate_series(0, 364) AS d, unnest(ARRAY['p', 'r']) AS x, workflow_schedules s`,
		`ANALYZE`,
	}
	for i, q := range seed {
		var args []any
		switch i {
		case 0:
			args = []any{created, created, created, created}
		case 1:
			args = []any{created, created}
		case 2:
			args = []any{created}
		}
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			b.Fatalf("seed %d: %v", i, err)
		}
	}
	for _, at := range []struct {
		name string
		from time.Time
	}{{"start", created}, {"middle", created.Add(year / 2)}, {"end", t0.Add(-1000 * time.Minute)}} {
		b.Run(at.name, func(b *testing.B) {
			from, to := at.from, at.from.Add(year)
			for b.Loop() {
				page, err := svc.Ledger(ctx, "default", "minutely", scheduling.LedgerQuery{From: &from, To: &to})
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Occurrences) != 1000 {
					b.Fatalf("page of %d", len(page.Occurrences))
				}
			}
		})
	}
}
