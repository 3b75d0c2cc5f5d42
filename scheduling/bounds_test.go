package scheduling_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// TestAtTimesFireThenTheScheduleEnds: one-off at times fire in order; after
// the last one the schedule stays active with no next fire, and reads ended.
func TestAtTimesFireThenTheScheduleEnds(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("once-twice", "0 0 * * *")
		in.Spec = models.Spec{Timezone: "UTC", At: []string{"2026-07-16T18:00:00Z", "2026-07-16T13:00:00-04:00"}}
		in.OverlapPolicy = scheduling.OverlapAllowAll // both fires start a run
		s := f.create(in)
		require.Equal(t, time.Date(2026, 7, 16, 17, 0, 0, 0, time.UTC), s.NextFireAt.UTC())
		require.False(t, s.Ended())

		f.clock.Set(*s.NextFireAt)
		require.Len(t, f.tick(), 1)
		s = f.get("once-twice")
		require.Equal(t, time.Date(2026, 7, 16, 18, 0, 0, 0, time.UTC), s.NextFireAt.UTC())

		f.clock.Set(*s.NextFireAt)
		require.Len(t, f.tick(), 1)
		s = f.get("once-twice")
		require.Nil(t, s.NextFireAt, "no occurrence left")
		require.Equal(t, models.StatusActive, s.Status, "an ended schedule stays active")
		require.True(t, s.Ended())
		require.EqualValues(t, 2, s.FiresCount)

		d, err := f.svc.Describe(f.ctx, "default", "once-twice")
		require.NoError(t, err)
		require.Empty(t, d.FutureFireTimes)
		require.Equal(t, "Once at each of 2026-07-16T17:00:00Z, 2026-07-16T18:00:00Z", d.SpecDescription)

		// Paused then resumed, it is still ended, not an error.
		_, err = f.svc.Pause(f.ctx, "default", "once-twice", scheduling.PauseInput{}, nil)
		require.NoError(t, err)
		require.False(t, f.get("once-twice").Ended(), "paused, not ended")
		_, err = f.svc.Resume(f.ctx, "default", "once-twice", nil)
		require.NoError(t, err)
		require.True(t, f.get("once-twice").Ended())
	})
}

// TestEndAtEndsACronSchedule: end_at is inclusive; the fire at end_at
// happens, then the schedule has ended.
func TestEndAtEndsACronSchedule(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("bounded", "0 * * * *")
		in.Spec.StartAt, in.Spec.EndAt = "2026-07-16T14:00:00Z", "2026-07-16T15:00:00Z"
		s := f.create(in)
		require.Equal(t, time.Date(2026, 7, 16, 14, 0, 0, 0, time.UTC), s.NextFireAt.UTC(), "nothing before start_at")
		f.clock.Set(*s.NextFireAt)
		f.tick()
		s = f.get("bounded")
		require.Equal(t, time.Date(2026, 7, 16, 15, 0, 0, 0, time.UTC), s.NextFireAt.UTC(), "end_at is inclusive")
		f.clock.Set(*s.NextFireAt)
		f.tick()
		require.True(t, f.get("bounded").Ended())
	})
}

// TestBoundsAndAtRefusedFieldByField: bad instants are field-level 422s, and
// a spec with no future occurrence (only past at times, an end_at passed) is
// still spec_never_fires on create and update (CONTRACT §16).
func TestBoundsAndAtRefusedFieldByField(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("bad", "0 * * * *")
		in.Spec.At, in.Spec.EndAt = []string{"noon"}, "2026-07-16"
		_, err := f.svc.Create(f.ctx, in, nil)
		var ve *scheduling.ValidationError
		require.True(t, errors.As(err, &ve), "%v", err)
		require.Contains(t, ve.Fields["spec.at[0]"], "not an RFC 3339 time")
		require.Contains(t, ve.Fields["spec.end_at"], "not an RFC 3339 time")

		past := cronInput("past", "0 * * * *")
		past.Spec = models.Spec{Timezone: "UTC", At: []string{"2026-07-16T11:00:00Z"}}
		_, err = f.svc.Create(f.ctx, past, nil)
		require.True(t, errors.As(err, &ve), "%v", err)
		require.Equal(t, scheduling.CodeSpecNeverFires, ve.Code)

		f.create(cronInput("live", "0 * * * *"))
		ended := models.Spec{CronExpressions: []string{"0 * * * *"}, Timezone: "UTC", EndAt: "2026-07-16T11:00:00Z"}
		_, err = f.svc.Update(f.ctx, "default", "live", scheduling.UpdateInput{Spec: &ended}, nil)
		require.True(t, errors.As(err, &ve), "%v", err)
		require.Equal(t, scheduling.CodeSpecNeverFires, ve.Code)
	})
}
