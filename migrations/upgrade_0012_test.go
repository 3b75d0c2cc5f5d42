package migrations_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// Since migration 0012 a ScheduleTriggered keeps its facts in typed columns
// and its payload only what is not a column. Readers must not see the
// difference: ScheduleTriggered events stored before it — the full payload
// of before 0009, the payload without instance and run of 0009–0011 — and
// those fired after it read through the service with CONTRACT §6's keys,
// the values they were recorded with, times as RFC 3339 UTC microseconds.
func TestUpgradeTo0012ServesTriggeredEventsAsBefore(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := migratedUpTo(t, dialect, 11)
			var err error

			t0 := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
			clock := schedtest.NewClock(t0)
			svc := schedtest.Service(db, clock)
			sch := createInOlderSchema(t, db, dialect, clock, hourly)

			// Three fires as the code before 0012 stored them, in raw SQL:
			// the 13:00 fire as before 0009 (every key in the payload), then
			// two manual ones as 0009–0011 did (instance and run in the
			// columns only), one with a command context, one without.
			type stored struct{ payload, instanceID, runID string }
			old := []stored{
				{`{"workflow_instance_id":"schedule:hourly:1784206800","workflow_run_id":"01J2Z0RUN00000000000000001","outcome":"scheduled",` +
					`"effective_overlap_policy":"allow_all","trigger_number":1,"occurrence_time":"2026-07-16T13:00:00.000000Z",` +
					`"command_context":{"source":"scheduler"}}`, "schedule:hourly:1784206800", "01J2Z0RUN00000000000000001"},
				{`{"outcome":"manual","effective_overlap_policy":"cancel_other","trigger_number":2,"occurrence_time":"2026-07-16T13:20:05.123456Z",` +
					`"command_context":{"source":"api","actor":"alice","request_id":"req-7","reason":"month end"}}`,
					"schedule:hourly:manual:01J2Z0MAN00000000000000002", "01J2Z0RUN00000000000000002"},
				{`{"outcome":"manual","effective_overlap_policy":"allow_all","trigger_number":3,"occurrence_time":"2026-07-16T13:40:00.000001Z"}`,
					"schedule:hourly:manual:01J2Z0MAN00000000000000003", "01J2Z0RUN00000000000000003"},
			}
			for i, o := range old {
				_, err := db.ExecContext(ctx, `INSERT INTO workflow_schedule_history_events
					(id, workflow_schedule_id, sequence, event_type, payload, workflow_instance_id, workflow_run_id, recorded_at)
					VALUES (?, ?, ?, 'ScheduleTriggered', ?, ?, ?, ?)`,
					fmt.Sprintf("01J2Z0AU00000000000000000%d", i+2), sch.ID, i+2, o.payload, o.instanceID, o.runID,
					t0.Add(time.Hour+time.Duration(i)*20*time.Minute))
				require.NoError(t, err)
			}
			next := t0.Add(2 * time.Hour)
			_, err = db.NewUpdate().Model((*models.Schedule)(nil)).Set("fires_count = 3, last_sequence = 4").
				Set("next_fire_at = ?, next_nominal_at = ?", next, next).Where("id = ?", sch.ID).Exec(ctx)
			require.NoError(t, err)

			applied, err := migrations.Apply(ctx, db)
			require.NoError(t, err)
			require.Equal(t, "0012_due_queue.sql", applied[0], "the upgrade starts at 0012 (later migrations follow)")

			// Three fires after it: the scheduler's own at 14:00, and two
			// manual ones, with a command context and without.
			clock.Set(next.Add(250 * time.Millisecond))
			rows, err := svc.Tick(ctx, 100)
			require.NoError(t, err)
			require.Len(t, rows, 1)
			require.Equal(t, scheduling.OutcomeTriggered, rows[0].Outcome)
			manualAt := time.Date(2026, 7, 16, 14, 10, 7, 123456789, time.UTC)
			clock.Set(manualAt)
			withContext, err := svc.Trigger(ctx, "default", "hourly", scheduling.OverlapCancelOther,
				&scheduling.CommandContext{Source: "api", Actor: "bob", RequestID: "req-9", Reason: "rerun"})
			require.NoError(t, err)
			require.Equal(t, scheduling.OutcomeTriggered, withContext.Outcome)
			withoutContext, err := svc.Trigger(ctx, "default", "hourly", "", nil)
			require.NoError(t, err)
			require.Equal(t, scheduling.OutcomeTriggered, withoutContext.Outcome)

			want := []string{
				// Stored before 0012: as stored, with the instance and run of the columns.
				old[0].payload,
				`{"workflow_instance_id":"schedule:hourly:manual:01J2Z0MAN00000000000000002","workflow_run_id":"01J2Z0RUN00000000000000002",` +
					`"outcome":"manual","effective_overlap_policy":"cancel_other","trigger_number":2,"occurrence_time":"2026-07-16T13:20:05.123456Z",` +
					`"command_context":{"source":"api","actor":"alice","request_id":"req-7","reason":"month end"}}`,
				`{"workflow_instance_id":"schedule:hourly:manual:01J2Z0MAN00000000000000003","workflow_run_id":"01J2Z0RUN00000000000000003",` +
					`"outcome":"manual","effective_overlap_policy":"allow_all","trigger_number":3,"occurrence_time":"2026-07-16T13:40:00.000001Z"}`,
				// Fired after it: what the code before 0012 served for them.
				fmt.Sprintf(`{"workflow_instance_id":"schedule:hourly:%d","workflow_run_id":%q,"outcome":"scheduled",`+
					`"effective_overlap_policy":"allow_all","trigger_number":4,"occurrence_time":"2026-07-16T14:00:00.000000Z",`+
					`"command_context":{"source":"scheduler"}}`, next.Unix(), rows[0].RunID),
				fmt.Sprintf(`{"workflow_instance_id":%q,"workflow_run_id":%q,"outcome":"manual",`+
					`"effective_overlap_policy":"cancel_other","trigger_number":5,"occurrence_time":"2026-07-16T14:10:07.123456Z",`+
					`"command_context":{"source":"api","actor":"bob","request_id":"req-9","reason":"rerun"}}`, withContext.InstanceID, withContext.RunID),
				fmt.Sprintf(`{"workflow_instance_id":%q,"workflow_run_id":%q,"outcome":"manual",`+
					`"effective_overlap_policy":"allow_all","trigger_number":6,"occurrence_time":"2026-07-16T14:10:07.123456Z"}`,
					withoutContext.InstanceID, withoutContext.RunID),
			}

			// Every listing serves them so: oldest first, and newest first
			// filtered to the type.
			page, err := svc.History(ctx, "default", "hourly", scheduling.HistoryQuery{Limit: 100})
			require.NoError(t, err)
			require.Len(t, page.Events, 1+len(want))
			require.Equal(t, scheduling.EventScheduleCreated, page.Events[0].EventType)
			for i, w := range want {
				e := page.Events[i+1]
				require.Equal(t, scheduling.EventScheduleTriggered, e.EventType)
				requireSamePayload(t, w, e.Payload, "event "+strconv.FormatInt(e.Sequence, 10))
			}
			page, err = svc.History(ctx, "default", "hourly", scheduling.HistoryQuery{
				Order: scheduling.HistoryNewestFirst, EventType: scheduling.EventScheduleTriggered, Limit: 100})
			require.NoError(t, err)
			require.Len(t, page.Events, len(want))
			for i, w := range slices.Backward(want) {
				requireSamePayload(t, w, page.Events[len(want)-1-i].Payload, "newest first, event "+strconv.Itoa(i+2))
			}

			// What is stored: the old rows untouched, the new ones in the
			// columns with only what is not a column in the payload (the
			// scheduler's own context not even that).
			var got []struct {
				Sequence       int64      `bun:"sequence"`
				Payload        string     `bun:"payload"`
				TriggerNumber  *int64     `bun:"trigger_number"`
				OccurrenceTime *time.Time `bun:"occurrence_time"`
				Outcome        *string    `bun:"trigger_outcome"`
				Policy         *string    `bun:"effective_overlap_policy"`
			}
			require.NoError(t, db.NewRaw(`SELECT sequence, payload, trigger_number, occurrence_time, trigger_outcome, effective_overlap_policy
				FROM workflow_schedule_history_events WHERE workflow_schedule_id = ? AND event_type = 'ScheduleTriggered' ORDER BY sequence`,
				sch.ID).Scan(ctx, &got))
			require.Len(t, got, 6)
			for i, o := range old {
				require.JSONEq(t, o.payload, got[i].Payload, "event %d is stored as it was", got[i].Sequence)
				require.Nil(t, got[i].TriggerNumber)
				require.Nil(t, got[i].OccurrenceTime)
				require.Nil(t, got[i].Outcome)
				require.Nil(t, got[i].Policy)
			}
			for i, w := range []struct {
				payload         string
				number          int64
				occurrence      time.Time
				outcome, policy string
			}{
				{`{}`, 4, next, "scheduled", "allow_all"},
				{`{"command_context":{"source":"api","actor":"bob","request_id":"req-9","reason":"rerun"}}`, 5, manualAt.Truncate(time.Microsecond), "manual", "cancel_other"},
				{`{"command_context":null}`, 6, manualAt.Truncate(time.Microsecond), "manual", "allow_all"},
			} {
				g := got[len(old)+i]
				require.JSONEq(t, w.payload, g.Payload, "event %d's stored payload", g.Sequence)
				require.Equal(t, &w.number, g.TriggerNumber, "event %d", g.Sequence)
				require.NotNil(t, g.OccurrenceTime, "event %d", g.Sequence)
				require.True(t, w.occurrence.Equal(*g.OccurrenceTime), "event %d occurrence %s, want %s", g.Sequence, g.OccurrenceTime, w.occurrence)
				require.Equal(t, &w.outcome, g.Outcome, "event %d", g.Sequence)
				require.Equal(t, &w.policy, g.Policy, "event %d", g.Sequence)
			}
		})
	}
}

// requireSamePayload compares a served payload with the one wanted key by
// key: the same keys, each with the same JSON value.
func requireSamePayload(t *testing.T, want string, got json.RawMessage, msg string) {
	t.Helper()
	var w, g map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(want), &w), msg)
	require.NoError(t, json.Unmarshal(got, &g), "%s: %s", msg, got)
	keys := func(m map[string]json.RawMessage) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, keys(w), keys(g), "%s: keys of %s", msg, got)
	for k, v := range w {
		require.JSONEq(t, string(v), string(g[k]), "%s: %s", msg, k)
	}
}
