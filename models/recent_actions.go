package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/tidelinehq/tideline/database"
)

// RecentActionSlot is the ring row that action n of a schedule takes.
func RecentActionSlot(scheduleULID string, n int64, a RecentAction) *RecentActionRow {
	return &RecentActionRow{ScheduleULID: scheduleULID, Slot: int(n % RecentActionsKept), N: n, RecentAction: a}
}

// SaveRecentActions writes ring rows over the slots they take, in one
// statement. On PostgreSQL it is INSERT … ON CONFLICT DO UPDATE from one
// typed array per column (see InsertRuns): a slot already written is
// updated in place, which changes no key and so stays on its page.
func SaveRecentActions(ctx context.Context, db bun.IDB, rows []*RecentActionRow) error {
	rows = lastPerSlot(rows)
	if len(rows) == 0 {
		return nil
	}
	if !database.Of(db).TypedArrays() {
		_, err := db.NewInsert().Model(&rows).On("CONFLICT (schedule_ulid, slot) DO UPDATE").
			Set("n = EXCLUDED.n, outcome = EXCLUDED.outcome, instance_id = EXCLUDED.instance_id, run_id = EXCLUDED.run_id").
			Set("fired_at = EXCLUDED.fired_at, occurrence_time = EXCLUDED.occurrence_time, fire_lag_ms = EXCLUDED.fire_lag_ms, reason = EXCLUDED.reason").
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("save recent actions: %w", err)
		}
		return nil
	}
	n := len(rows)
	var (
		ulid, outcome             = make([]string, n), make([]string, n)
		instanceID, runID, reason = make([]*string, n), make([]*string, n), make([]*string, n)
		slot                      = make([]int64, n)
		number, lag               = make([]int64, n), make([]int64, n)
		firedAt, occurrence       = make([]time.Time, n), make([]time.Time, n)
	)
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
	if err != nil {
		return fmt.Errorf("save recent actions: %w", err)
	}
	return nil
}

// RecentActionsOf reads the rings of the given schedules, each newest
// first: one statement, at most ten rows a schedule, by primary key.
func RecentActionsOf(ctx context.Context, db bun.IDB, scheduleULIDs []string) (map[string][]RecentAction, error) {
	out := make(map[string][]RecentAction, len(scheduleULIDs))
	if len(scheduleULIDs) == 0 {
		return out, nil
	}
	var rows []RecentActionRow
	err := db.NewSelect().Model(&rows).Where("ra.schedule_ulid IN (?)", bun.In(scheduleULIDs)).
		OrderExpr("ra.schedule_ulid ASC, ra.n DESC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read recent actions: %w", err)
	}
	for _, r := range rows {
		out[r.ScheduleULID] = append(out[r.ScheduleULID], r.RecentAction)
	}
	return out, nil
}

// lastPerSlot keeps, of rows for the same slot (a batch that fired one
// schedule more than ten times, as a catch-up can), the latest action:
// one statement may not write a row twice.
func lastPerSlot(rows []*RecentActionRow) []*RecentActionRow {
	type key struct {
		ulid string
		slot int
	}
	at := make(map[key]int, len(rows))
	out := rows[:0:0]
	for _, r := range rows {
		k := key{r.ScheduleULID, r.Slot}
		if i, ok := at[k]; ok {
			if r.N > out[i].N {
				out[i] = r
			}
			continue
		}
		at[k] = len(out)
		out = append(out, r)
	}
	return out
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
