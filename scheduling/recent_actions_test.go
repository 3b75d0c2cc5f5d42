package scheduling_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// ringRows counts a schedule's rows in the recent-action ring.
func ringRows(t *testing.T, f *fixture, scheduleULID string) int {
	t.Helper()
	n, err := f.db.NewSelect().Model((*models.RecentActionRow)(nil)).Where("schedule_ulid = ?", scheduleULID).Count(f.ctx)
	require.NoError(t, err)
	return int(n)
}

// A schedule keeps its last ten actions, newest first, in a ring of ten
// rows that later actions overwrite — one fire at a time, and a catch-up
// that fires more than ten occurrences in one batch.
func TestRecentActionsKeepTheLastTen(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("minutely", "* * * * *")
		in.CatchupWindowSeconds = ptr(3600)
		in.OverlapPolicy = scheduling.OverlapAllowAll
		sch := f.create(in)

		// Twelve manual fires a second apart, one skipped by its override.
		var runs []string
		for i := range 12 {
			f.clock.Set(t0.Add(time.Duration(i) * time.Second))
			policy := ""
			if i == 5 {
				// A run is pending: skip declines this one.
				policy = scheduling.OverlapSkip
			}
			res, err := f.svc.Trigger(f.ctx, "default", "minutely", policy, nil)
			require.NoError(t, err)
			runs = append(runs, res.RunID)
		}
		got := f.get("minutely")
		require.EqualValues(t, 12, got.ActionsCount)
		require.Len(t, got.RecentActions, models.RecentActionsKept)
		require.Equal(t, 10, ringRows(t, f, sch.ID))
		for i, a := range got.RecentActions {
			fire := 11 - i // newest first: fires 11 down to 2
			require.Equal(t, t0.Add(time.Duration(fire)*time.Second), a.FiredAt.UTC(), "action %d", i)
			require.Equal(t, runs[fire], a.RunID, "action %d", i)
			if fire == 5 {
				require.Equal(t, scheduling.OutcomeSkipped, a.Outcome)
				require.Equal(t, scheduling.SkipOverlap, a.Reason)
			} else {
				require.Equal(t, "manual", a.Outcome)
			}
		}

		// Down for 25 minutes: one batch fires the 25 missed occurrences in
		// order; the ring holds the last ten of them.
		f.clock.Set(t0.Add(25*time.Minute + 30*time.Second))
		require.Len(t, f.tick(), 1)
		got = f.get("minutely")
		require.EqualValues(t, 12+25, got.ActionsCount)
		require.Len(t, got.RecentActions, models.RecentActionsKept)
		require.Equal(t, 10, ringRows(t, f, sch.ID))
		for i, a := range got.RecentActions {
			occurrence := t0.Add(time.Duration(25-i) * time.Minute)
			require.Equal(t, "scheduled", a.Outcome, "action %d", i)
			require.Equal(t, occurrence, a.OccurrenceTime.UTC(), "action %d", i)
			require.Equal(t, instanceAt("minutely", occurrence), a.InstanceID, "action %d", i)
		}

		// The list reads them the same way.
		page, err := f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default"})
		require.NoError(t, err)
		require.Len(t, page.Schedules, 1)
		require.Equal(t, got.RecentActions, page.Schedules[0].RecentActions)
	})
}

// A new schedule has no recent actions: an empty list, not null.
func TestRecentActionsOfANewScheduleAreEmpty(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("fresh", "0 * * * *"))
		got := f.get("fresh")
		require.NotNil(t, got.RecentActions)
		require.Empty(t, got.RecentActions)
	})
}

// One statement may not write a row twice: of two actions for the same
// slot in one batch, the later one is kept, whichever order they come in.
func TestSaveRecentActionsKeepsTheLatestOfASlot(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		sch := f.create(cronInput("s", "0 * * * *"))
		action := func(n int64) *models.RecentActionRow {
			return models.RecentActionSlot(sch.ID, n, models.RecentAction{Outcome: "scheduled", RunID: "run-" + string(rune('a'+n)),
				FiredAt: t0.Add(time.Duration(n) * time.Minute), OccurrenceTime: t0.Add(time.Duration(n) * time.Minute)})
		}
		require.NoError(t, models.SaveRecentActions(f.ctx, db, []*models.RecentActionRow{action(13), action(3), action(4)}))
		got, err := models.RecentActionsOf(f.ctx, db, []string{sch.ID})
		require.NoError(t, err)
		require.Len(t, got[sch.ID], 2)
		require.Equal(t, "run-"+string(rune('a'+13)), got[sch.ID][0].RunID, "action 13 took slot 3")
		require.Equal(t, "run-"+string(rune('a'+4)), got[sch.ID][1].RunID)
	})
}
