package scheduling_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/retention"
	"github.com/tidelinehq/tideline/scheduling"
)

// Under steady hourly firing with a one-day retention, audit compaction
// keeps the stream at a day of fires plus its lifecycle events (SPEC §19):
// sequences keep their numbers, history pages name the compacted range and
// count only what is left, and the ledger reads the occurrences whose run
// and events are gone as compacted, never missed.
func TestCompactionKeepsLifecycleAndMarksTheGap(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("hourly", "0 * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		loop := &scheduling.Loop{Service: f.svc, Retention: retention.Policy{KeepRuns: 24 * time.Hour, Batch: 5}}
		start := t0.Truncate(time.Hour)
		for hour := 1; hour <= 24*3; hour++ {
			f.clock.Set(start.Add(time.Duration(hour) * time.Hour))
			_, err := loop.RunOnce(f.ctx)
			require.NoError(t, err)
			for _, run := range f.poll(10, 30) {
				_, err := f.svc.CompleteRun(f.ctx, "default", run.ID, w1, nil)
				require.NoError(t, err)
			}
		}
		events := f.eventsAll("hourly")
		require.Equal(t, scheduling.EventScheduleCreated, events[0].EventType, "lifecycle events are kept")
		require.EqualValues(t, 1, events[0].Sequence)
		fires := len(events) - 1
		require.GreaterOrEqual(t, fires, 24, "a day of fires is kept")
		require.LessOrEqual(t, fires, 26, "older fires are compacted")
		last := events[len(events)-1].Sequence
		require.EqualValues(t, 24*3+1, last, "sequences never change")

		page, err := f.svc.History(f.ctx, "default", "hourly", scheduling.HistoryQuery{Limit: 10})
		require.NoError(t, err)
		require.NotNil(t, page.Compacted, "the first page crosses the compacted range")
		require.EqualValues(t, 2, page.Compacted.FromSequence)
		require.Equal(t, events[1].Sequence-1, page.Compacted.ToSequence)
		require.EqualValues(t, 24*3-fires, page.Compacted.Fires)
		require.EqualValues(t, 0, page.Compacted.Skips)
		require.EqualValues(t, len(events), page.Total, "the total counts what is left")
		newest, err := f.svc.History(f.ctx, "default", "hourly", scheduling.HistoryQuery{Order: scheduling.HistoryNewestFirst, Limit: 5})
		require.NoError(t, err)
		require.Nil(t, newest.Compacted, "a page of recent events crosses nothing compacted")

		now := start.Add(72 * time.Hour)
		from := start
		ledger, err := f.svc.Ledger(f.ctx, "default", "hourly", scheduling.LedgerQuery{From: &from, To: &now})
		require.NoError(t, err)
		fates := map[string]int{}
		for _, o := range ledger.Occurrences {
			fates[o.Fate]++
		}
		require.Zero(t, fates[scheduling.FateMissed], "no compacted occurrence reads as missed: %v", fates)
		require.Positive(t, fates[scheduling.FateCompacted], "%v", fates)
		require.GreaterOrEqual(t, fates[scheduling.FateStarted], 24, "%v", fates)
	})
}
