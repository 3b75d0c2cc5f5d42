package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// recentAction0026 is a ring row as the release before migration 0027
// reads and writes it (its models.RecentActionRow, verbatim).
type recentAction0026 struct {
	bun.BaseModel `bun:"table:workflow_schedule_recent_actions,alias:ra"`

	ScheduleULID   string    `bun:"schedule_ulid,pk"`
	Slot           int       `bun:"slot,pk"`
	N              int64     `bun:"n,notnull"`
	InstanceID     string    `bun:"instance_id,nullzero"`
	RunID          string    `bun:"run_id,nullzero"`
	Outcome        string    `bun:"outcome,notnull"`
	FiredAt        time.Time `bun:"fired_at,notnull"`
	OccurrenceTime time.Time `bun:"occurrence_time,notnull"`
	FireLagMs      int64     `bun:"fire_lag_ms,notnull"`
	Reason         string    `bun:"reason,nullzero"`
}

// saveRecent0026 is the previous release's models.SaveRecentActions,
// statement for statement: what an old replica writes during a rolling
// upgrade, before and after 0027.
func saveRecent0026(t *testing.T, db bun.IDB, rows []recentAction0026) {
	t.Helper()
	ctx := context.Background()
	if database.Of(db).Name() != database.PostgreSQL {
		_, err := db.NewInsert().Model(&rows).On("CONFLICT (schedule_ulid, slot) DO UPDATE").
			Set("n = EXCLUDED.n, outcome = EXCLUDED.outcome, instance_id = EXCLUDED.instance_id, run_id = EXCLUDED.run_id").
			Set("fired_at = EXCLUDED.fired_at, occurrence_time = EXCLUDED.occurrence_time, fire_lag_ms = EXCLUDED.fire_lag_ms, reason = EXCLUDED.reason").
			Exec(ctx)
		require.NoError(t, err)
		return
	}
	n := len(rows)
	var (
		ulid, outcome             = make([]string, n), make([]string, n)
		instanceID, runID, reason = make([]*string, n), make([]*string, n), make([]*string, n)
		slot                      = make([]int64, n)
		number, lag               = make([]int64, n), make([]int64, n)
		firedAt, occurrence       = make([]time.Time, n), make([]time.Time, n)
	)
	nonEmpty := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	for i, r := range rows {
		ulid[i], slot[i], number[i], outcome[i] = r.ScheduleULID, int64(r.Slot), r.N, r.Outcome
		instanceID[i], runID[i], reason[i] = nonEmpty(r.InstanceID), nonEmpty(r.RunID), nonEmpty(r.Reason)
		firedAt[i], occurrence[i], lag[i] = r.FiredAt, r.OccurrenceTime, r.FireLagMs
	}
	_, err := db.NewRaw(`INSERT INTO workflow_schedule_recent_actions (schedule_ulid, slot, n, outcome, instance_id, run_id,
			fired_at, occurrence_time, fire_lag_ms, reason)
		SELECT * FROM unnest(?::text[], ?::smallint[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::timestamptz[],
			?::timestamptz[], ?::bigint[], ?::text[])
		ON CONFLICT (schedule_ulid, slot) DO UPDATE SET n = EXCLUDED.n, outcome = EXCLUDED.outcome,
			instance_id = EXCLUDED.instance_id, run_id = EXCLUDED.run_id, fired_at = EXCLUDED.fired_at,
			occurrence_time = EXCLUDED.occurrence_time, fire_lag_ms = EXCLUDED.fire_lag_ms, reason = EXCLUDED.reason`,
		pgdialect.Array(ulid), pgdialect.Array(slot), pgdialect.Array(number), pgdialect.Array(outcome),
		pgdialect.Array(instanceID), pgdialect.Array(runID), pgdialect.Array(firedAt), pgdialect.Array(occurrence),
		pgdialect.Array(lag), pgdialect.Array(reason)).Exec(ctx)
	require.NoError(t, err)
}

// saveRecent0027 is models.SaveRecentActions of the releases from 0027 to
// before 0033 (the previous release of 0033's), statement for statement,
// for the action n of a scheduled fire of schedule scheduleID whose run
// ID is a ULID: the compact row it writes over slot n % 10.
func saveRecent0027(t *testing.T, db bun.IDB, scheduleULID string, n int64, a models.RecentAction) {
	t.Helper()
	code := int16(1) // "scheduled"
	runULID := ulid.MustParseStrict(a.RunID)
	row := struct {
		bun.BaseModel  `bun:"table:workflow_schedule_recent_actions"`
		ScheduleULID   string    `bun:"schedule_ulid"`
		Slot           int       `bun:"slot"`
		N              int64     `bun:"n"`
		Code           *int16    `bun:"code"`
		RunULID        []byte    `bun:"run_ulid"`
		FiredAt        time.Time `bun:"fired_at"`
		OccurrenceTime time.Time `bun:"occurrence_time"`
	}{ScheduleULID: scheduleULID, Slot: int(n % 10), N: n, Code: &code, RunULID: runULID[:], FiredAt: a.FiredAt, OccurrenceTime: a.OccurrenceTime}
	_, err := db.NewInsert().Model(&row).On("CONFLICT (schedule_ulid, slot) DO UPDATE").
		Set("n = EXCLUDED.n, code = EXCLUDED.code, run_ulid = EXCLUDED.run_ulid, outcome = NULL, instance_id = NULL, run_id = NULL").
		Set("fired_at = EXCLUDED.fired_at, occurrence_time = EXCLUDED.occurrence_time, fire_lag_ms = NULL, reason = NULL").
		Exec(context.Background())
	require.NoError(t, err)
}

// compactColumns are a ring slot's columns that 0027 lets a row leave
// NULL, as stored.
type compactColumns struct {
	Code       *int16  `bun:"code"`
	RunULID    []byte  `bun:"run_ulid"`
	RunID      *string `bun:"run_id"`
	Outcome    *string `bun:"outcome"`
	InstanceID *string `bun:"instance_id"`
	FireLagMs  *int64  `bun:"fire_lag_ms"`
	Reason     *string `bun:"reason"`
}

// Migrations 0027 and 0033 change how the ring of recent actions is
// stored across two rolling upgrades: 0027 compacts the ten rows a
// schedule, 0033 packs the ten actions into one row of another table.
// Rows of both shapes of the ten-row ring read exactly as they were
// written through this release, beside the actions it records in the
// schedule's ring, newest ten first by action number; a release before
// 0027 reads the compact rows without error, and its upsert over one
// wins (the row's stale code is not read).
func TestUpgradesReadEveryRingShape(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := migratedUpTo(t, dialect, 26)
			t0 := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
			clock := schedtest.NewClock(t0)
			svc := schedtest.Service(db, clock)
			sch, err := svc.Create(ctx, hourly, nil) // nothing of it is in the ring's table
			require.NoError(t, err)

			// Five actions as the previous release wrote them: a late
			// scheduled fire, a skip, a manual fire, a buffered one, a
			// jittered fire (its instance names the nominal 15:00).
			at := func(h, m, s, us int) time.Time { return time.Date(2026, 7, 16, h, m, s, us*1000, time.UTC) }
			old := []models.RecentAction{
				{InstanceID: "schedule:hourly:1784206800", RunID: "01J2Z0RUN00000000000000001", Outcome: "scheduled",
					FiredAt: at(13, 0, 0, 150000), OccurrenceTime: at(13, 0, 0, 0), FireLagMs: 150},
				{InstanceID: "schedule:hourly:1784210400", Outcome: "skipped", Reason: "overlap_policy_skip",
					FiredAt: at(14, 0, 0, 20000), OccurrenceTime: at(14, 0, 0, 0), FireLagMs: 20},
				{InstanceID: "schedule:hourly:manual:01J2Z0MAN00000000000000002", RunID: "01J2Z0RUN00000000000000002", Outcome: "manual",
					FiredAt: at(14, 20, 5, 123456), OccurrenceTime: at(14, 20, 5, 123456)},
				{InstanceID: "schedule:hourly:1784214000", Outcome: "buffered", FiredAt: at(15, 0, 0, 5000), OccurrenceTime: at(15, 0, 0, 0), FireLagMs: 5},
				{InstanceID: "schedule:hourly:1784214000", RunID: "01J2Z0RUN00000000000000004", Outcome: "drained",
					FiredAt: at(15, 0, 7, 1500), OccurrenceTime: at(15, 0, 7, 0), FireLagMs: 1},
			}
			rows := make([]recentAction0026, len(old))
			for i, a := range old {
				rows[i] = recentAction0026{ScheduleULID: sch.ID, Slot: i, N: int64(i), InstanceID: a.InstanceID, RunID: a.RunID,
					Outcome: a.Outcome, FiredAt: a.FiredAt, OccurrenceTime: a.OccurrenceTime, FireLagMs: a.FireLagMs, Reason: a.Reason}
			}
			saveRecent0026(t, db, rows)
			_, err = db.ExecContext(ctx, "UPDATE workflow_schedules SET actions_count = ? WHERE id = ?", len(old), sch.ID)
			require.NoError(t, err)

			applied, err := migrations.ApplyUpTo(ctx, db, 27)
			require.NoError(t, err)
			require.Equal(t, []string{"0027_compact_recent_actions.sql"}, applied)

			recent := func() []models.RecentAction {
				t.Helper()
				got, err := svc.Get(ctx, "default", "hourly")
				require.NoError(t, err)
				out := make([]models.RecentAction, len(got.RecentActions))
				for i, a := range got.RecentActions {
					out[i] = utcAction(a)
				}
				return out
			}
			newestFirst := func(actions ...models.RecentAction) []models.RecentAction {
				out := make([]models.RecentAction, len(actions))
				for i, a := range actions {
					out[len(actions)-1-i] = a
				}
				return out
			}
			// The release between 0027 and 0033 fires 16:00, 250 ms late:
			// action 5, a compact row.
			fired := models.RecentAction{InstanceID: "schedule:hourly:1784217600", RunID: "01J2Z0RSN00000000000000005", Outcome: "scheduled",
				FiredAt: at(16, 0, 0, 250000), OccurrenceTime: at(16, 0, 0, 0), FireLagMs: 250}
			saveRecent0027(t, db, sch.ID, 5, fired)
			_, err = db.ExecContext(ctx, "UPDATE workflow_schedules SET actions_count = 6 WHERE id = ?", sch.ID)
			require.NoError(t, err)
			slot := func(s int) compactColumns {
				t.Helper()
				var c compactColumns
				require.NoError(t, db.NewSelect().Table("workflow_schedule_recent_actions").
					Column("code", "run_ulid", "run_id", "outcome", "instance_id", "fire_lag_ms", "reason").
					Where("schedule_ulid = ? AND slot = ?", sch.ID, s).Scan(ctx, &c))
				return c
			}
			require.NotNil(t, slot(5).Code, "compact: outcome as a code")

			// A release before 0027 reads every row, compact ones too,
			// without an error, and the rows it wrote as it wrote them.
			var asOld []recentAction0026
			require.NoError(t, db.NewSelect().Model(&asOld).Where("ra.schedule_ulid = ?", sch.ID).OrderExpr("ra.n ASC").Scan(ctx))
			require.Len(t, asOld, 6)
			for i := range old {
				require.Equal(t, rows[i].InstanceID, asOld[i].InstanceID, "row %d", i)
				require.Equal(t, rows[i].Outcome, asOld[i].Outcome, "row %d", i)
				require.Equal(t, rows[i].FireLagMs, asOld[i].FireLagMs, "row %d", i)
				require.Equal(t, rows[i].Reason, asOld[i].Reason, "row %d", i)
			}
			require.Empty(t, asOld[5].RunID, "a compact row's run ID is in run_ulid, which the old release does not read")

			// Up to this release: it reads both shapes of the ten-row ring.
			_, err = migrations.Apply(ctx, db)
			require.NoError(t, err)
			require.Equal(t, newestFirst(append(old[:5:5], fired)...), recent(), "the ten-row ring read as it was written")

			// An old replica's next action lands on the compact slot 5
			// (action 15, say): its values are read, not the code left
			// behind in the row.
			overwrite := recentAction0026{ScheduleULID: sch.ID, Slot: 5, N: 15, InstanceID: "schedule:hourly:1784221200",
				Outcome: "skipped", Reason: "buffer_full", FiredAt: at(17, 0, 0, 3000), OccurrenceTime: at(17, 0, 0, 0), FireLagMs: 3}
			saveRecent0026(t, db, []recentAction0026{overwrite})
			require.NotNil(t, slot(5).Code, "the old upsert leaves the code")
			byOld := models.RecentAction{InstanceID: overwrite.InstanceID, Outcome: "skipped", Reason: "buffer_full",
				FiredAt: overwrite.FiredAt, OccurrenceTime: overwrite.OccurrenceTime, FireLagMs: 3}
			require.Equal(t, newestFirst(append(old[:5:5], byOld)...), recent())

			// This release records action 10 in the schedule's ring, not in
			// the ten-row ring, and shows it in its place among the others.
			over := models.RecentActionSlot(sch.ID, 10, models.RecentAction{InstanceID: "schedule:hourly:1784224800", RunID: "01J2Z0RUN00000000000000010",
				Outcome: "scheduled", FiredAt: at(18, 0, 0, 40000), OccurrenceTime: at(18, 0, 0, 0), FireLagMs: 40})
			over.ScheduleID = "hourly"
			require.NoError(t, models.SaveRecentActions(ctx, db, []*models.RecentActionRow{over}))
			require.Equal(t, "schedule:hourly:1784206800", *slot(0).InstanceID, "slot 0 of the ten-row ring keeps action 0")
			require.Equal(t, append([]models.RecentAction{byOld, over.Action}, newestFirst(old...)...), recent())
		})
	}
}
