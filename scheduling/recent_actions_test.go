package scheduling_test

import (
	"strconv"
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

// A ring row stores an action compactly (migration 0027) and reads back
// exactly what was recorded: values a read can recompute are left NULL
// only when the recomputation gives them back — not a jittered fire's
// instance ID (it names the nominal time), nor a manual one's, nor an
// outcome without a code, whose row keeps the text columns; a run ID is
// stored as 16 bytes only when it is a ULID spelt canonically.
func TestRecentActionsReadBackWhatWasRecorded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		sch := f.create(cronInput("s", "0 * * * *"))
		at := func(min int, us int) time.Time {
			return t0.Add(time.Duration(min)*time.Minute + time.Duration(us)*time.Microsecond)
		}
		cases := []struct {
			name          string
			action        models.RecentAction
			storedID, lag bool // instance_id and fire_lag_ms kept in their columns
		}{
			{"scheduled, late", models.RecentAction{InstanceID: instanceAt("s", at(0, 0)), RunID: "01J2Z0RSN00000000000000001", Outcome: "scheduled",
				FiredAt: at(0, 150000), OccurrenceTime: at(0, 0), FireLagMs: 150}, false, false},
			{"fired ahead", models.RecentAction{InstanceID: instanceAt("s", at(1, 0)), RunID: "run-2", Outcome: "scheduled",
				FiredAt: at(1, -1500), OccurrenceTime: at(1, 0), FireLagMs: -1}, false, false},
			{"jittered", models.RecentAction{InstanceID: instanceAt("s", at(2, 0)), RunID: "run-3", Outcome: "scheduled",
				FiredAt: at(2, 7000100), OccurrenceTime: at(2, 7000000), FireLagMs: 0}, true, false},
			{"manual", models.RecentAction{InstanceID: "schedule:s:manual:01J2Z0MAN00000000000000002", RunID: "01j2z0rsn00000000000000004", Outcome: "manual",
				FiredAt: at(3, 5), OccurrenceTime: at(3, 5)}, true, false},
			{"backfilled", models.RecentAction{InstanceID: "schedule:s:backfill:" + strconv.FormatInt(t0.Add(-48*time.Hour).Unix(), 10), RunID: "run-5",
				Outcome: "backfilled", FiredAt: at(4, 0), OccurrenceTime: t0.Add(-48 * time.Hour), FireLagMs: (48*time.Hour + 4*time.Minute).Milliseconds()}, false, false},
			{"skipped", models.RecentAction{InstanceID: instanceAt("s", at(5, 0)), Outcome: scheduling.OutcomeSkipped, Reason: scheduling.SkipOverlap,
				FiredAt: at(5, 10), OccurrenceTime: at(5, 0)}, false, false},
			{"drained manual", models.RecentAction{InstanceID: "schedule:s:manual:01J2Z0MAN00000000000000003", RunID: "run-8", Outcome: "drained",
				FiredAt: at(7, 0), OccurrenceTime: at(6, 30000000), FireLagMs: 30000}, true, false},
			{"no instance", models.RecentAction{Outcome: scheduling.OutcomeSkipped, Reason: scheduling.SkipNotTriggeable,
				FiredAt: at(8, 0), OccurrenceTime: at(8, 0)}, true, false},
			{"a lag that is not fired_at - occurrence_time", models.RecentAction{InstanceID: instanceAt("s", at(10, 0)), RunID: "run-11", Outcome: "scheduled",
				FiredAt: at(10, 0), OccurrenceTime: at(10, 0), FireLagMs: 7}, false, true},
			{"an outcome without a code", models.RecentAction{InstanceID: instanceAt("s", at(9, 0)), RunID: "run-10", Outcome: "triggered",
				FiredAt: at(9, 2000), OccurrenceTime: at(9, 0), FireLagMs: 2}, true, true},
		}
		rows := make([]*models.RecentActionRow, len(cases))
		for i, c := range cases {
			rows[i] = models.RecentActionSlot(sch.ID, int64(i), c.action)
			rows[i].ScheduleID = "s"
		}
		require.NoError(t, models.SaveRecentActions(f.ctx, db, rows))
		got, err := models.RecentActionsOf(f.ctx, db, []string{sch.ID})
		require.NoError(t, err)
		require.Len(t, got[sch.ID], len(cases))
		for i, c := range cases {
			require.Equal(t, c.action, normalizeRecent(got[sch.ID][len(cases)-1-i]), c.name)
			var stored struct {
				InstanceID *string `bun:"instance_id"`
				FireLagMs  *int64  `bun:"fire_lag_ms"`
				RunULID    []byte  `bun:"run_ulid"`
			}
			require.NoError(t, db.NewSelect().Table("workflow_schedule_recent_actions").Column("instance_id", "fire_lag_ms", "run_ulid").
				Where("schedule_ulid = ? AND slot = ?", sch.ID, i).Scan(f.ctx, &stored))
			require.Equal(t, c.storedID, stored.InstanceID != nil, "%s: instance_id stored", c.name)
			require.Equal(t, c.lag, stored.FireLagMs != nil, "%s: fire_lag_ms stored", c.name)
			require.Equal(t, i == 0, len(stored.RunULID) == 16, "%s: the run ID as a ULID's 16 bytes (only the first is one, in its canonical spelling)", c.name)
		}
	})
}
