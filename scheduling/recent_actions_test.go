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

// requireOneRingRow checks that a schedule's ring is one row (migration
// 0033) and that nothing was written to the ten-row ring of the releases
// before it.
func requireOneRingRow(t *testing.T, f *fixture, scheduleULID string) {
	t.Helper()
	rings, err := f.db.NewSelect().Model((*models.RingRow)(nil)).Where("schedule_ulid = ?", scheduleULID).Count(f.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, rings, "ring rows")
	old, err := f.db.NewSelect().Model((*models.RecentActionRow)(nil)).Where("schedule_ulid = ?", scheduleULID).Count(f.ctx)
	require.NoError(t, err)
	require.Zero(t, old, "rows of the ten-row ring")
}

// A schedule keeps its last ten actions, newest first, in its ring, where
// later actions push out earlier ones — one fire at a time, and a catch-up
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
		requireOneRingRow(t, f, sch.ID)
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
		requireOneRingRow(t, f, sch.ID)
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

// A batch may hold more than ten actions of one schedule, in any order
// (a catch-up fires many occurrences at once): the ring keeps the newest
// ten, newest first, and a later batch pushes out the oldest.
func TestSaveRecentActionsKeepsTheNewestTen(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		sch := f.create(cronInput("s", "0 * * * *"))
		action := func(n int64) *models.RecentActionRow {
			return models.RecentActionSlot(sch.ID, n, models.RecentAction{Outcome: "scheduled", RunID: "run-" + strconv.FormatInt(n, 10),
				FiredAt: t0.Add(time.Duration(n) * time.Minute), OccurrenceTime: t0.Add(time.Duration(n) * time.Minute)})
		}
		runIDs := func() []string {
			got, err := models.RecentActionsOf(f.ctx, db, []string{sch.ID})
			require.NoError(t, err)
			var ids []string
			for _, a := range got[sch.ID] {
				ids = append(ids, a.RunID)
			}
			return ids
		}
		var batch []*models.RecentActionRow
		for _, n := range []int64{13, 3, 4, 0, 12, 5, 11, 6, 10, 7, 9, 8, 1, 2} {
			batch = append(batch, action(n))
		}
		require.NoError(t, models.SaveRecentActions(f.ctx, db, batch))
		require.Equal(t, []string{"run-13", "run-12", "run-11", "run-10", "run-9", "run-8", "run-7", "run-6", "run-5", "run-4"}, runIDs())
		require.NoError(t, models.SaveRecentActions(f.ctx, db, []*models.RecentActionRow{action(15), action(14)}))
		require.Equal(t, []string{"run-15", "run-14", "run-13", "run-12", "run-11", "run-10", "run-9", "run-8", "run-7", "run-6"}, runIDs())
		requireOneRingRow(t, f, sch.ID)
	})
}

// During a rolling upgrade the previous release records actions in the
// ten-row ring (workflow_schedule_recent_actions, slot n % 10) while this
// one records them in the schedule's ring, and before it the old table
// holds every schedule's last ten: this release shows the newest ten of
// both, by action number, whichever table holds each.
func TestRecentActionsMergeTheTenRowRing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		sch := f.create(cronInput("s", "0 * * * *"))
		at := func(n int64) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
		// The previous release's rows, in the shape before migration 0027
		// (outcome as text, every column set), as its upsert writes them:
		// actions 0–9 before the upgrade, then 12, 13 and 16 beside this
		// release's 10, 11, 14, 15 and 17.
		oldRow := func(n int64) models.RecentActionRow {
			outcome, instance, run, lag := "scheduled", instanceAt("s", at(n)), "old-"+strconv.FormatInt(n, 10), int64(0)
			return models.RecentActionRow{ScheduleULID: sch.ID, Slot: int(n % 10), N: n, Outcome: &outcome, InstanceID: &instance,
				RunID: &run, FiredAt: at(n), OccurrenceTime: at(n), FireLagMs: &lag}
		}
		for _, n := range []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16} {
			row := oldRow(n)
			_, err := db.NewInsert().Model(&row).On("CONFLICT (schedule_ulid, slot) DO UPDATE").
				Set("n = EXCLUDED.n, outcome = EXCLUDED.outcome, instance_id = EXCLUDED.instance_id, run_id = EXCLUDED.run_id").
				Set("fired_at = EXCLUDED.fired_at, occurrence_time = EXCLUDED.occurrence_time, fire_lag_ms = EXCLUDED.fire_lag_ms").Exec(f.ctx)
			require.NoError(t, err)
		}
		for _, n := range []int64{10, 11, 14, 15, 17} {
			row := models.RecentActionSlot(sch.ID, n, models.RecentAction{Outcome: "scheduled", InstanceID: instanceAt("s", at(n)),
				RunID: "new-" + strconv.FormatInt(n, 10), FiredAt: at(n), OccurrenceTime: at(n)})
			row.ScheduleID = "s"
			require.NoError(t, models.SaveRecentActions(f.ctx, db, []*models.RecentActionRow{row}))
		}
		got, err := models.RecentActionsOf(f.ctx, db, []string{sch.ID})
		require.NoError(t, err)
		var ids []string
		for i, a := range got[sch.ID] {
			ids = append(ids, a.RunID)
			require.Equal(t, "scheduled", a.Outcome, "action %d", i)
			require.Equal(t, instanceAt("s", a.OccurrenceTime.UTC()), a.InstanceID, "action %d", i)
		}
		require.Equal(t, []string{"new-17", "old-16", "new-15", "new-14", "old-13", "old-12", "new-11", "new-10", "old-9", "old-8"}, ids)
	})
}

// A ring stores an action compactly (migration 0033, models/ring.go) and
// reads back exactly what was recorded: values a read can recompute are
// left out only when the recomputation gives them back — not a jittered
// fire's instance ID (it names the nominal time), nor a manual one's, nor
// an outcome without a code; a run ID is stored as 16 bytes only when it
// is a ULID spelt canonically (models' TestPackedActionsReadBackExactly
// checks what is left out).
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
			name   string
			action models.RecentAction
		}{
			{"scheduled, late", models.RecentAction{InstanceID: instanceAt("s", at(0, 0)), RunID: "01J2Z0RSN00000000000000001", Outcome: "scheduled",
				FiredAt: at(0, 150000), OccurrenceTime: at(0, 0), FireLagMs: 150}},
			{"fired ahead", models.RecentAction{InstanceID: instanceAt("s", at(1, 0)), RunID: "run-2", Outcome: "scheduled",
				FiredAt: at(1, -1500), OccurrenceTime: at(1, 0), FireLagMs: -1}},
			{"jittered", models.RecentAction{InstanceID: instanceAt("s", at(2, 0)), RunID: "run-3", Outcome: "scheduled",
				FiredAt: at(2, 7000100), OccurrenceTime: at(2, 7000000), FireLagMs: 0}},
			{"manual", models.RecentAction{InstanceID: "schedule:s:manual:01J2Z0MAN00000000000000002", RunID: "01j2z0rsn00000000000000004", Outcome: "manual",
				FiredAt: at(3, 5), OccurrenceTime: at(3, 5)}},
			{"backfilled", models.RecentAction{InstanceID: "schedule:s:backfill:" + strconv.FormatInt(t0.Add(-48*time.Hour).Unix(), 10), RunID: "run-5",
				Outcome: "backfilled", FiredAt: at(4, 0), OccurrenceTime: t0.Add(-48 * time.Hour), FireLagMs: (48*time.Hour + 4*time.Minute).Milliseconds()}},
			{"skipped", models.RecentAction{InstanceID: instanceAt("s", at(5, 0)), Outcome: scheduling.OutcomeSkipped, Reason: scheduling.SkipOverlap,
				FiredAt: at(5, 10), OccurrenceTime: at(5, 0)}},
			{"drained manual", models.RecentAction{InstanceID: "schedule:s:manual:01J2Z0MAN00000000000000003", RunID: "run-8", Outcome: "drained",
				FiredAt: at(7, 0), OccurrenceTime: at(6, 30000000), FireLagMs: 30000}},
			{"no instance", models.RecentAction{Outcome: scheduling.OutcomeSkipped, Reason: scheduling.SkipNotTriggeable,
				FiredAt: at(8, 0), OccurrenceTime: at(8, 0)}},
			{"a lag that is not fired_at - occurrence_time", models.RecentAction{InstanceID: instanceAt("s", at(10, 0)), RunID: "run-11", Outcome: "scheduled",
				FiredAt: at(10, 0), OccurrenceTime: at(10, 0), FireLagMs: 7}},
			{"an outcome without a code", models.RecentAction{InstanceID: instanceAt("s", at(9, 0)), RunID: "run-10", Outcome: "triggered",
				FiredAt: at(9, 2000), OccurrenceTime: at(9, 0), FireLagMs: 2}},
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
		}
		requireOneRingRow(t, f, sch.ID)
	})
}
