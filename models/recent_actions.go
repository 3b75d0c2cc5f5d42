package models

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/tidelinehq/tideline/database"
)

// RecentActionSlot is the ring row that action n of a schedule takes.
// Setting the row's ScheduleID as well lets it leave out an instance ID
// that the read can recompute.
func RecentActionSlot(scheduleULID string, n int64, a RecentAction) *RecentActionRow {
	return &RecentActionRow{ScheduleULID: scheduleULID, Slot: int(n % RecentActionsKept), N: n, Action: a}
}

// SaveRecentActions writes ring rows over the slots they take, in one
// statement, in the compact shape (encode). On PostgreSQL it is INSERT …
// ON CONFLICT DO UPDATE from one typed array per column (see InsertRuns):
// a slot already written is updated in place, which changes no key and so
// stays on its page. The update sets every column, so a slot the previous
// release wrote takes the compact shape whole.
func SaveRecentActions(ctx context.Context, db bun.IDB, rows []*RecentActionRow) error {
	rows = lastPerSlot(rows)
	if len(rows) == 0 {
		return nil
	}
	for _, r := range rows {
		r.encode()
	}
	if !database.Of(db).TypedArrays() {
		_, err := db.NewInsert().Model(&rows).On("CONFLICT (schedule_ulid, slot) DO UPDATE").
			Set("n = EXCLUDED.n, code = EXCLUDED.code, run_ulid = EXCLUDED.run_ulid, outcome = EXCLUDED.outcome, instance_id = EXCLUDED.instance_id, run_id = EXCLUDED.run_id").
			Set("fired_at = EXCLUDED.fired_at, occurrence_time = EXCLUDED.occurrence_time, fire_lag_ms = EXCLUDED.fire_lag_ms, reason = EXCLUDED.reason").
			Exec(ctx)
		if err != nil {
			return fmt.Errorf("save recent actions: %w", err)
		}
		return nil
	}
	n := len(rows)
	var (
		ulid                               = make([]string, n)
		outcome, instanceID, runID, reason = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		slot, number                       = make([]int64, n), make([]int64, n)
		code, lag                          = make([]*int64, n), make([]*int64, n)
		firedAt, occurrence                = make([]time.Time, n), make([]time.Time, n)
		runULID                            = make([][]byte, n)
	)
	for i, r := range rows {
		ulid[i], slot[i], number[i], outcome[i] = r.ScheduleULID, int64(r.Slot), r.N, r.Outcome
		instanceID[i], runID[i], reason[i] = r.InstanceID, r.RunID, r.Reason
		firedAt[i], occurrence[i], lag[i], runULID[i] = r.FiredAt, r.OccurrenceTime, r.FireLagMs, r.RunULID
		if r.Code != nil {
			c := int64(*r.Code)
			code[i] = &c
		}
	}
	_, err := db.NewRaw(`INSERT INTO workflow_schedule_recent_actions (schedule_ulid, slot, n, code, run_ulid, outcome,
			instance_id, run_id, fired_at, occurrence_time, fire_lag_ms, reason)
		SELECT * FROM unnest(?::text[], ?::smallint[], ?::bigint[], ?::smallint[], ?::bytea[], ?::text[], ?::text[],
			?::text[], ?::timestamptz[], ?::timestamptz[], ?::bigint[], ?::text[])
		ON CONFLICT (schedule_ulid, slot) DO UPDATE SET n = EXCLUDED.n, code = EXCLUDED.code, run_ulid = EXCLUDED.run_ulid,
			outcome = EXCLUDED.outcome,
			instance_id = EXCLUDED.instance_id, run_id = EXCLUDED.run_id, fired_at = EXCLUDED.fired_at,
			occurrence_time = EXCLUDED.occurrence_time, fire_lag_ms = EXCLUDED.fire_lag_ms, reason = EXCLUDED.reason`,
		pgdialect.Array(ulid), pgdialect.Array(slot), pgdialect.Array(number), pgdialect.Array(code),
		pgdialect.Array(runULID), pgdialect.Array(outcome), pgdialect.Array(instanceID), pgdialect.Array(runID), pgdialect.Array(firedAt),
		pgdialect.Array(occurrence), pgdialect.Array(lag), pgdialect.Array(reason)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("save recent actions: %w", err)
	}
	return nil
}

// RecentActionsOf reads the rings of the given schedules, each newest
// first: one statement, at most ten rows a schedule, by primary key, with
// the schedule's ID that the rows' derived instance IDs need.
func RecentActionsOf(ctx context.Context, db bun.IDB, scheduleULIDs []string) (map[string][]RecentAction, error) {
	out := make(map[string][]RecentAction, len(scheduleULIDs))
	if len(scheduleULIDs) == 0 {
		return out, nil
	}
	var rows []RecentActionRow
	err := db.NewSelect().Model(&rows).ColumnExpr("ra.*").ColumnExpr("s.schedule_id").
		Join("JOIN workflow_schedules AS s ON s.id = ra.schedule_ulid").
		Where("ra.schedule_ulid IN (?)", bun.In(scheduleULIDs)).
		OrderExpr("ra.schedule_ulid ASC, ra.n DESC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read recent actions: %w", err)
	}
	for i := range rows {
		r := &rows[i]
		out[r.ScheduleULID] = append(out[r.ScheduleULID], r.decode())
	}
	return out, nil
}

// VacuumRecentActions reclaims the ring's dead row versions. A fire
// overwrites one slot of each schedule it fires, and a batch overwrites
// the same slot of 500 schedules whose rows, written by the same earlier
// fires, share pages: most of a page's rows change in one transaction,
// more than its free space holds, so most new versions go to other pages
// (not HOT). Without a vacuum the table only grows — 2.9 → 6.4 KB a
// schedule over 30 fires where autovacuum is off (BenchmarkRingFootprint)
// — and vacuumed each minute it stays within 6 % of its live size, for
// ~24 ms a minute at 10,000 schedules. Not inside a transaction.
func VacuumRecentActions(ctx context.Context, db bun.IDB) error {
	return database.Of(db).Vacuum(ctx, db, "workflow_schedule_recent_actions")
}

// ringCodes are the stored codes of the outcome and skip-reason pairs the
// fire path records (scheduling's fire kinds, OutcomeBuffered, and
// OutcomeSkipped with each skip reason of CONTRACT §4). They are stored:
// a code is never renumbered or reused. A pair without a code is written
// in the old shape, as text, so a new outcome or reason needs no
// migration; it gets a code here once every release that may share the
// database reads that code.
var ringCodes = [...]struct{ outcome, reason string }{
	1:  {"scheduled", ""},
	2:  {"manual", ""},
	3:  {"drained", ""},
	4:  {"backfilled", ""},
	5:  {"buffered", ""},
	6:  {"skipped", ""},
	7:  {"skipped", "overlap_policy_skip"},
	8:  {"skipped", "buffer_full"},
	9:  {"skipped", "status_not_triggerable"},
	10: {"skipped", "remaining_actions_exhausted"},
	11: {"skipped", "already_started"},
}

// RecentActionCode is the stored code of an outcome and reason, false for
// a pair without one.
func RecentActionCode(outcome, reason string) (int16, bool) {
	for c, p := range ringCodes {
		if c > 0 && p.outcome == outcome && p.reason == reason {
			return int16(c), true
		}
	}
	return 0, false
}

// FireLagMs is how late an action fired after its occurrence, in whole
// milliseconds (negative when it fired ahead). The fire path records it
// and a compact ring row recomputes it with this one rule.
func FireLagMs(firedAt, occurrence time.Time) int64 {
	return firedAt.Sub(occurrence).Milliseconds()
}

// ScheduledInstanceID names the instance of a schedule's occurrence at
// nominal: deterministic, so that one occurrence can start once only.
func ScheduledInstanceID(scheduleID string, nominal time.Time) string {
	return "schedule:" + scheduleID + ":" + strconv.FormatInt(nominal.Unix(), 10)
}

// BackfillInstanceID names a backfill's run of the occurrence at nominal:
// apart from the scheduled fire's, so a backfill never collides with it.
func BackfillInstanceID(scheduleID string, nominal time.Time) string {
	return "schedule:" + scheduleID + ":backfill:" + strconv.FormatInt(nominal.Unix(), 10)
}

// DerivedInstanceID is the instance ID a compact ring row or fire event
// with a NULL one has: a backfill's, or a scheduled fire's at its
// occurrence (which is the nominal time unless jitter moved the fire).
// Writers store NULL only where this gives back exactly the ID they had.
func DerivedInstanceID(scheduleID, outcome string, occurrence time.Time) string {
	if outcome == "backfilled" {
		return BackfillInstanceID(scheduleID, occurrence)
	}
	return ScheduledInstanceID(scheduleID, occurrence)
}

// encode sets the row's columns from its Action in the compact shape: the
// outcome and reason as their code, the run ID as its bytes, and fire_lag_ms and instance_id NULL
// when decode recomputes exactly the same values from what is stored. An
// action without a code is stored whole, in the old shape.
func (r *RecentActionRow) encode() {
	a := r.Action
	r.FiredAt, r.OccurrenceTime, r.RunID, r.RunULID = a.FiredAt, a.OccurrenceTime, nonEmpty(a.RunID), nil
	code, ok := RecentActionCode(a.Outcome, a.Reason)
	if !ok {
		lag := a.FireLagMs
		r.Code, r.Outcome, r.Reason, r.InstanceID, r.FireLagMs = nil, &a.Outcome, nonEmpty(a.Reason), nonEmpty(a.InstanceID), &lag
		return
	}
	r.Code, r.Outcome, r.Reason, r.InstanceID, r.FireLagMs = &code, nil, nil, nil, nil
	// A run ID in ULID's canonical spelling is its 16 bytes; any other
	// (one a test or an older release made) stays text.
	if id, err := ulid.ParseStrict(a.RunID); err == nil && id.String() == a.RunID {
		r.RunULID, r.RunID = id[:], nil
	}
	// Both databases keep microseconds: a finer time would be stored
	// rounded, and the lag recomputed from it could differ.
	if !micro(a.FiredAt) || !micro(a.OccurrenceTime) || FireLagMs(a.FiredAt, a.OccurrenceTime) != a.FireLagMs {
		lag := a.FireLagMs
		r.FireLagMs = &lag
	}
	// Stored as it is ("" too) unless it is the derived one: NULL means
	// derived in this shape.
	if r.ScheduleID == "" || DerivedInstanceID(r.ScheduleID, a.Outcome, a.OccurrenceTime) != a.InstanceID {
		id := a.InstanceID
		r.InstanceID = &id
	}
}

// decode is the action a row stores, in either shape. The previous
// release's upsert sets outcome and not code, so outcome tells the shapes
// apart even in a row it overwrote after this release wrote it.
func (r *RecentActionRow) decode() RecentAction {
	a := RecentAction{RunID: deref(r.RunID), FiredAt: r.FiredAt, OccurrenceTime: r.OccurrenceTime}
	if r.Outcome != nil || r.Code == nil {
		a.Outcome, a.InstanceID, a.Reason, a.FireLagMs = deref(r.Outcome), deref(r.InstanceID), deref(r.Reason), deref(r.FireLagMs)
		return a
	}
	if len(r.RunULID) == len(ulid.ULID{}) {
		a.RunID = ulid.ULID(r.RunULID).String()
	}
	if c := int(*r.Code); c > 0 && c < len(ringCodes) {
		a.Outcome, a.Reason = ringCodes[c].outcome, ringCodes[c].reason
	}
	if r.FireLagMs != nil {
		a.FireLagMs = *r.FireLagMs
	} else {
		a.FireLagMs = FireLagMs(a.FiredAt, a.OccurrenceTime)
	}
	if r.InstanceID != nil {
		a.InstanceID = *r.InstanceID
	} else {
		a.InstanceID = DerivedInstanceID(r.ScheduleID, a.Outcome, a.OccurrenceTime)
	}
	return a
}

func micro(t time.Time) bool { return t.Nanosecond()%1000 == 0 }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
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
