package scheduling

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
)

// A ScheduleTriggered is stored in columns and a sliver of payload
// (storedForm) and read back whole (servedPayload): every outcome with
// every kind of command context, written by the tick's batch insert and by
// the single one, is served as the payload it was recorded with, on both
// databases. The scheduler's own context is not stored at all. A fire
// event stored without the instance ID that the schedule's ID and the
// occurrence give back (the compact shape the next release is to write,
// see storedForm) is served with it.
func TestTriggeredEventsReadAsRecorded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := t.Context()
		svc := New(Config{DB: db})
		sch, err := svc.Create(ctx, CreateInput{ScheduleID: "audited", Spec: models.Spec{CronExpressions: []string{"* * * * *"}},
			Action: models.Action{WorkflowType: "w"}}, nil)
		require.NoError(t, err)

		contexts := []*CommandContext{
			nil,
			schedulerContext(),
			{Source: "scheduler", Reason: "timed pause ended"},
			{Source: "scheduler", Actor: "ops"},
			{Source: "api", Actor: "alice", RequestID: "req-1", Reason: "month end \"close\""},
			{},
		}
		at := time.Date(2026, 12, 1, 13, 19, 1, 123456789, time.UTC)
		var batch, single []*models.ScheduleEvent
		recorded := map[int64]*TriggeredPayload{}
		seq := sch.LastSequence
		for _, outcome := range []string{TriggerScheduled, TriggerManual, TriggerDrained, TriggerBackfilled} {
			for _, cc := range contexts {
				seq++
				occurrence := at.Add(time.Duration(seq) * time.Minute)
				// Every other event has the instance ID a regular fire or
				// backfill of this schedule has; the rest one of their own.
				instance, derived := fmt.Sprintf("schedule:audited:%d", seq), seq%2 == 1
				if derived {
					instance = models.DerivedInstanceID("audited", outcome, occurrence)
				}
				p := &TriggeredPayload{
					WorkflowInstanceID: instance, WorkflowRunID: fmt.Sprintf("RUN%023d", seq),
					Outcome: outcome, EffectiveOverlapPolicy: OverlapCancelOther, TriggerNumber: seq,
					OccurrenceTime: Instant(occurrence), Recorded: Recorded{CommandContext: cc},
				}
				ev := &models.ScheduleEvent{ID: fmt.Sprintf("EV%024d", seq), WorkflowScheduleID: sch.ID, Sequence: seq,
					EventType: p.EventType(), RecordedAt: at}
				require.NoError(t, storedForm(ev, p))
				require.Equal(t, instance, *ev.WorkflowInstanceID, "event %d stores its instance ID", seq)
				if derived {
					ev.WorkflowInstanceID = nil // the compact shape
				}
				if cc != nil && *cc == *schedulerContext() {
					require.JSONEq(t, `{}`, string(ev.Payload), "the scheduler's own context is not stored")
				}
				recorded[seq] = p
				if seq%4 < 2 {
					batch = append(batch, ev)
				} else {
					single = append(single, ev)
				}
			}
		}
		require.NoError(t, models.InsertScheduleEvents(ctx, db, batch))
		for _, ev := range single {
			require.NoError(t, models.InsertScheduleEvent(ctx, db, ev))
		}

		events, _, err := models.ListScheduleEvents(ctx, db, sch.ID, models.EventQuery{After: sch.LastSequence, Limit: 100})
		require.NoError(t, err)
		require.Len(t, events, len(recorded))
		for i := range events {
			e := &events[i]
			want, err := json.Marshal(recorded[e.Sequence])
			require.NoError(t, err)
			got, err := servedPayload(e, "audited")
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got), "event %d", e.Sequence)
			require.Equal(t, recorded[e.Sequence].WorkflowInstanceID, *e.WorkflowInstanceID, "event %d's instance column, as served", e.Sequence)
			back, err := DecodePayload(e.EventType, got)
			require.NoError(t, err)
			require.Equal(t, FormatTime(recorded[e.Sequence].OccurrenceTime.Time()), FormatTime(back.(*TriggeredPayload).OccurrenceTime.Time()))
		}
	})
}
