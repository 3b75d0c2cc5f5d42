package scheduling_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// One schedule whose stored spec no longer compiles must not stop the
// others: the batch falls back to one savepoint per schedule.
func TestTickSurvivesABadSchedule(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		for _, id := range []string{"a", "bad", "c"} {
			f.create(cronInput(id, "0 * * * *"))
		}
		_, err := db.NewUpdate().Model((*models.Schedule)(nil)).
			Set("spec = ?", `{"cron_expressions":["not a cron"],"intervals":[],"timezone":"UTC"}`).
			Where("schedule_id = 'bad'").Exec(f.ctx)
		require.NoError(t, err)

		f.clock.Set(time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC))
		rows := f.tick()
		outcomes := map[string]string{}
		for _, r := range rows {
			outcomes[r.ScheduleID] = r.Outcome
		}
		require.Equal(t, map[string]string{"a": "triggered", "bad": "failed", "c": "triggered"}, outcomes)
		bad := f.get("bad")
		require.EqualValues(t, 1, bad.StartFailuresCount)
		require.Nil(t, bad.NextFireAt, "a spec that no longer compiles is not retried every tick")
		require.Len(t, f.events("bad"), 1, "the failed fire left no half-written audit event")
		require.Empty(t, f.tick())
	})
}

func TestLoopStartsAndStops(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLite(t))
	f.create(cronInput("loop", "0 * * * *"))
	f.clock.Set(time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC))

	// The passes are reported on a channel and checked here: a failed
	// require in the loop's goroutine would not stop the test.
	type pass struct {
		res scheduling.LoopResult
		err error
	}
	passes := make(chan pass, 16)
	loop := &scheduling.Loop{Service: f.svc, Period: 10 * time.Millisecond, OnPass: func(r scheduling.LoopResult, _ time.Duration, err error) {
		select {
		case passes <- pass{r, err}:
		default:
		}
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	loop.Start(ctx)
	loop.Start(ctx) // a second Start is a no-op
	var fired []scheduling.TickRow
	for len(fired) == 0 {
		select {
		case p := <-passes:
			require.NoError(t, p.err)
			fired = append(fired, p.res.Rows...)
			f.clock.Advance(10 * time.Millisecond) // the next pass, by the loop's clock
		case <-ctx.Done():
			t.Fatal("the loop never fired the due schedule")
		}
	}
	require.Equal(t, "loop", fired[0].ScheduleID)
	loop.Stop()
	loop.Stop() // idempotent
	require.EqualValues(t, 1, f.get("loop").FiresCount, "fired once, however many passes ran")
}
