package scheduling_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
)

// Newest first pages down by before_sequence; a type filter pages over its
// own events only; the total counts the whole listing.
func TestHistoryNewestFirstAndByType(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("h", "0 * * * *"))
		update := func() {
			_, err := f.svc.Update(f.ctx, "default", "h", scheduling.UpdateInput{Note: ptr(f.clock.Now().String())}, nil)
			require.NoError(t, err)
			f.clock.Advance(time.Second)
		}
		pause := func() {
			_, err := f.svc.Pause(f.ctx, "default", "h", scheduling.PauseInput{}, nil)
			require.NoError(t, err)
		}
		update()
		pause()
		update()
		_, err := f.svc.Resume(f.ctx, "default", "h", nil)
		require.NoError(t, err)
		update()
		pause()
		// 1 Created, 2 Updated, 3 Paused, 4 Updated, 5 Resumed, 6 Updated, 7 Paused.
		type pageOf struct {
			seqs  []int64
			more  bool
			total int64
		}
		pages := func(q scheduling.HistoryQuery) []pageOf {
			var out []pageOf
			for range 10 {
				p, err := f.svc.History(f.ctx, "default", "h", q)
				require.NoError(t, err)
				var seqs []int64
				for _, e := range p.Events {
					seqs = append(seqs, e.Sequence)
				}
				out = append(out, pageOf{seqs, p.HasMore, p.Total})
				if p.NextCursor == nil {
					return out
				}
				if q.Order == scheduling.HistoryNewestFirst {
					q.BeforeSequence = *p.NextCursor
				} else {
					q.AfterSequence = *p.NextCursor
				}
			}
			t.Fatal("paging never ended")
			return nil
		}
		require.Equal(t, []pageOf{{[]int64{7, 6, 5}, true, 7}, {[]int64{4, 3, 2}, true, 7}, {[]int64{1}, false, 7}},
			pages(scheduling.HistoryQuery{Order: scheduling.HistoryNewestFirst, Limit: 3}))
		require.Equal(t, []pageOf{{[]int64{6, 4}, true, 3}, {[]int64{2}, false, 3}},
			pages(scheduling.HistoryQuery{Order: scheduling.HistoryNewestFirst, EventType: scheduling.EventScheduleUpdated, Limit: 2}))
		require.Equal(t, []pageOf{{[]int64{2, 4}, true, 3}, {[]int64{6}, false, 3}},
			pages(scheduling.HistoryQuery{EventType: scheduling.EventScheduleUpdated, Limit: 2}))
		require.Equal(t, []pageOf{{nil, false, 0}},
			pages(scheduling.HistoryQuery{EventType: scheduling.EventScheduleDeleted, Limit: 100}))
		require.Equal(t, []pageOf{{[]int64{1, 2, 3, 4, 5, 6, 7}, false, 7}}, pages(scheduling.HistoryQuery{Limit: 100}), "oldest first stays the default")

		for _, q := range []scheduling.HistoryQuery{
			{Order: "sideways"},
			{Order: scheduling.HistoryNewestFirst, AfterSequence: 3},
			{BeforeSequence: 3},
			{EventType: "ScheduleRenamed"},
		} {
			_, err := f.svc.History(f.ctx, "default", "h", q)
			var v *scheduling.ValidationError
			require.ErrorAs(t, err, &v, "%+v", q)
			require.Equal(t, scheduling.CodeValidationFailed, v.Code, "%+v", q)
		}
	})
}
