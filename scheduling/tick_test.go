package scheduling_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

func (f *fixture) tick() []scheduling.TickRow {
	f.t.Helper()
	rows, err := f.svc.Tick(f.ctx, 100)
	require.NoError(f.t, err)
	return rows
}

func TestTickFiresOverdueScheduleOnceThenContinuesFromNow(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("hourly", "0 * * * *"))
		paused := cronInput("paused", "0 * * * *")
		paused.Paused = true
		f.create(paused)
		f.create(cronInput("later", "0 0 1 1 *")) // next fire next January

		require.Empty(t, f.tick(), "nothing is due at 12:00")

		// Downtime: the 13:00, 14:00 and 15:00 occurrences pass unseen.
		f.clock.Set(time.Date(2026, 7, 16, 15, 20, 0, 0, time.UTC))
		rows := f.tick()
		require.Len(t, rows, 1, "paused and future schedules are ignored")
		row := rows[0]
		require.Equal(t, "hourly", row.ScheduleID)
		require.Equal(t, "triggered", row.Outcome)
		require.Equal(t, time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC), row.OccurrenceTime.UTC(), "occurrence is the stored next_fire_at")
		require.Equal(t, "schedule:hourly:1784206800", row.InstanceID)
		require.Equal(t, time.Date(2026, 7, 16, 16, 0, 0, 0, time.UTC), row.NextFireAt.UTC(), "continues from now; missed ones are dropped")
		require.Equal(t, f.clock.Now(), row.LastFiredAt.UTC())

		require.Empty(t, f.tick(), "a processed schedule is not processed again")

		s := f.get("hourly")
		require.EqualValues(t, 1, s.FiresCount)
		require.Equal(t, row.RunID, *s.LatestRunID)
		require.Len(t, s.RecentActions, 1)
		require.Equal(t, models.RecentAction{InstanceID: row.InstanceID, RunID: row.RunID, Outcome: "scheduled",
			FiredAt: f.clock.Now(), OccurrenceTime: *row.OccurrenceTime, FireLagMs: (2*time.Hour + 20*time.Minute).Milliseconds()},
			normalizeRecent(s.RecentActions[0]))

		run := f.run(row.RunID)
		require.Equal(t, models.RunPending, run.Status)
		require.Equal(t, "scheduled", run.Trigger)
		require.Equal(t, "default", run.Connection)
		require.JSONEq(t, `{"region":"eu"}`, string(run.Input))
		// Served from the run row since migration 0009: read it as the API does.
		d, err := f.svc.DescribeRun(f.ctx, "default", run.ID)
		require.NoError(t, err)
		events := d.Events
		require.Len(t, events, 1)
		require.Equal(t, "ScheduleTriggered", events[0].EventType)
		require.JSONEq(t, `{"schedule_id":"hourly","schedule_ulid":"`+s.ID+`","cron_expression":"0 * * * *","timezone":"UTC",
			"overlap_policy":"skip","trigger_number":1,"occurrence_time":"2026-07-16T13:00:00.000000Z"}`, string(events[0].Payload))

		audit := f.events("hourly")
		last := payload(t, audit[len(audit)-1])
		require.Equal(t, "scheduled", last["outcome"])
		require.Equal(t, map[string]any{"source": "scheduler"}, last["command_context"])
	})
}

func normalizeRecent(a models.RecentAction) models.RecentAction {
	a.FiredAt = a.FiredAt.UTC()
	a.OccurrenceTime = a.OccurrenceTime.UTC()
	return a
}

func TestJitterStaysWithinBoundsAndNominalNamesTheRun(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		for _, draw := range []int64{0, 17, 1 << 40} {
			f := newFixture(t, db)
			f.svc = scheduling.New(scheduling.Config{DB: db, Clock: f.clock, Rand: fixedRand(draw)})
			id := "jit-" + time.Duration(draw).String()
			in := cronInput(id, "0 * * * *")
			in.JitterSeconds = 60
			s := f.create(in)
			want := min(draw, 60)
			require.Equal(t, time.Duration(want)*time.Second, s.NextFireAt.Sub(*s.NextNominalAt), "jitter in [0, 60] inclusive")

			f.clock.Set(*s.NextFireAt)
			rows := f.tick()
			require.Len(t, rows, 1)
			require.Equal(t, "schedule:"+id+":1784206800", rows[0].InstanceID, "the canonical time names the run")
			require.Equal(t, s.NextFireAt.UTC(), rows[0].OccurrenceTime.UTC())
			require.Equal(t, time.Date(2026, 7, 16, 14, 0, 0, 0, time.UTC).Add(time.Duration(want)*time.Second), rows[0].NextFireAt.UTC(), "jitter drawn afresh")
		}
	})
}

type fixedRand int64

func (r fixedRand) Int64N(n int64) int64 { return min(int64(r), n-1) }

func TestOverlapPolicies(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		start := func(policy string) (string, scheduling.FireResult) {
			in := cronInput("ov-"+policy, "0 0 1 1 *")
			in.OverlapPolicy = policy
			f.create(in)
			res, err := f.svc.Trigger(f.ctx, "default", in.ScheduleID, "", nil)
			require.NoError(t, err)
			require.Equal(t, "triggered", res.Outcome)
			f.clock.Advance(time.Millisecond)
			return in.ScheduleID, res
		}
		trigger := func(id string) scheduling.FireResult {
			res, err := f.svc.Trigger(f.ctx, "default", id, "", nil)
			require.NoError(t, err)
			f.clock.Advance(time.Millisecond)
			return res
		}

		id, first := start("skip")
		require.Equal(t, "overlap_policy_skip", trigger(id).Reason)
		f.setRunStatus(first.RunID, models.RunCompleted)
		require.Equal(t, "triggered", trigger(id).Outcome, "skip unblocks once the run finished")

		id, first = start("allow_all")
		second := trigger(id)
		require.Equal(t, "triggered", second.Outcome)
		require.Equal(t, models.RunPending, f.run(first.RunID).Status, "allow_all leaves the other run alone")

		id, first = start("terminate_other")
		f.setRunStatus(first.RunID, models.RunRunning)
		second = trigger(id)
		require.Equal(t, "triggered", second.Outcome)
		require.Equal(t, models.RunTerminated, f.run(first.RunID).Status)

		id, first = start("cancel_other")
		f.setRunStatus(first.RunID, models.RunRunning)
		second = trigger(id)
		require.Equal(t, "triggered", second.Outcome)
		r := f.run(first.RunID)
		require.Equal(t, models.RunRunning, r.Status, "cancellation is a request to a running run")
		require.NotNil(t, r.CancelRequestedAt)
		third := trigger(id) // the second run is still pending: nobody to ask, cancelled at once
		require.Equal(t, "triggered", third.Outcome)
		require.Equal(t, models.RunCancelled, f.run(second.RunID).Status)

		id, first = start("buffer_one")
		b := trigger(id)
		require.Equal(t, scheduling.FireResult{Outcome: "buffered", InstanceID: b.InstanceID, BufferDepth: 1}, b)
		require.Equal(t, "buffer_full", trigger(id).Reason)
		require.Empty(t, f.tick(), "nothing drains while the run is active")
		f.setRunStatus(first.RunID, models.RunCompleted)
		rows := f.tick()
		require.Len(t, rows, 1)
		require.Equal(t, "drained", rows[0].Outcome)
		require.Equal(t, b.InstanceID, rows[0].InstanceID, "a drained fire keeps its instance ID")
		s := f.get(id)
		require.Zero(t, s.BufferDepth)
		require.Equal(t, rows[0].RunID, *s.LatestRunID)
		audit := f.events(id)
		require.Equal(t, "drained", payload(t, audit[len(audit)-1])["outcome"])
	})
}

func TestBufferAllDrainsOnePerTickInOrder(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("ba", "0 0 1 1 *")
		in.OverlapPolicy = scheduling.OverlapBufferAll
		f.create(in)
		first, err := f.svc.Trigger(f.ctx, "default", "ba", "", nil)
		require.NoError(t, err)
		var buffered []string
		for range 3 {
			f.clock.Advance(time.Millisecond)
			res, err := f.svc.Trigger(f.ctx, "default", "ba", "", nil)
			require.NoError(t, err)
			require.Equal(t, "buffered", res.Outcome)
			buffered = append(buffered, res.InstanceID)
		}
		require.Equal(t, 3, f.get("ba").BufferDepth)

		latest := first.RunID
		for i := range 3 {
			f.setRunStatus(latest, models.RunCompleted)
			rows := f.tick()
			require.Len(t, rows, 1, "one buffered fire per schedule per tick")
			require.Equal(t, buffered[i], rows[0].InstanceID, "drained in order")
			require.Empty(t, f.tick(), "the drained run is active now")
			latest = rows[0].RunID
		}
		require.Zero(t, f.get("ba").BufferDepth)
	})
}

func TestBufferAllCapsAtAThousand(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLite(t))
	in := cronInput("cap", "0 0 1 1 *")
	in.OverlapPolicy = scheduling.OverlapBufferAll
	f.create(in)
	// Fill the buffer directly: 1,000 triggers would only slow the test.
	s := f.get("cap")
	for i := range scheduling.MaxBufferAll {
		s.BufferedActions = append(s.BufferedActions, models.BufferedAction{InstanceID: "x" + time.Duration(i).String(), OccurrenceTime: t0, Kind: "manual", BufferedAt: t0})
	}
	s.BufferDepth = len(s.BufferedActions)
	require.NoError(t, models.UpdateSchedule(f.ctx, f.db, s))
	res, err := f.svc.Trigger(f.ctx, "default", "cap", "", nil)
	require.NoError(t, err)
	require.Equal(t, "skipped", res.Outcome)
	require.Equal(t, "buffer_full", res.Reason)
}

func TestMaxRunsSoftDeletesWhenExhausted(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("three", "*/5 * * * *")
		in.MaxRuns = ptr[int64](3)
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		res, err := f.svc.Trigger(f.ctx, "default", "three", "", nil)
		require.NoError(t, err)
		require.Equal(t, "triggered", res.Outcome)
		require.EqualValues(t, 2, *f.get("three").RemainingActions)

		for range 2 {
			f.clock.Advance(5 * time.Minute)
			require.Len(t, f.tick(), 1)
		}
		s := f.get("three")
		require.Equal(t, models.StatusDeleted, s.Status)
		require.EqualValues(t, 0, *s.RemainingActions)
		require.Nil(t, s.NextFireAt)
		events := f.events("three")
		last := payload(t, events[len(events)-1])
		require.Equal(t, "ScheduleDeleted", events[len(events)-1].EventType)
		require.Equal(t, "max_runs_exhausted", last["reason"])
		require.Equal(t, "ScheduleTriggered", events[len(events)-2].EventType)
		f.clock.Advance(5 * time.Minute)
		require.Empty(t, f.tick(), "a deleted schedule never fires again")
	})
}

// An occurrence whose instance exists already (a clock stepped back, a
// schedule re-created under an old ID) is skipped already_started; the
// batch it was in still fires everything else.
func TestTickSkipsAnOccurrenceThatAlreadyStarted(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		for _, id := range []string{"a", "b", "c"} {
			f.create(cronInput(id, "0 * * * *"))
		}
		at := time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC)
		existing := fmt.Sprintf("schedule:b:%d", at.Unix())
		_, err := db.NewInsert().Model(&models.Run{
			ID: "01EXISTING0000000000000000", Namespace: "default", InstanceID: existing, WorkflowType: "invoice-sync",
			Status: models.RunCompleted, Trigger: "scheduled", Connection: "default", Queue: "default", CreatedAt: t0, UpdatedAt: t0,
		}).Exec(f.ctx)
		require.NoError(t, err)

		f.clock.Set(at)
		got := map[string]string{}
		for _, r := range f.tick() {
			got[r.ScheduleID] = r.Outcome + " " + r.Reason
		}
		require.Equal(t, map[string]string{"a": "triggered ", "b": "skipped already_started", "c": "triggered "}, got)
		b := f.get("b")
		require.EqualValues(t, 0, b.FiresCount)
		require.EqualValues(t, 1, b.SkippedTriggerCount)
		require.Equal(t, at.Add(time.Hour), b.NextFireAt.UTC(), "the schedule moves on")
		require.Empty(t, f.tick())
	})
}

// A fire reads a schedule without its memo, search attributes and note
// and writes back only what firing changes: none of the writer's own
// fields is lost, whether the batch is written at once (the fast path) or,
// after a conflict, one schedule at a time (the careful path).
func TestFiringKeepsTheWritersFields(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("kept", "0 * * * *")
		in.Labels, in.Memo = map[string]string{"team": "ops"}, map[string]string{"runbook": "https://wiki/kept"}
		in.SearchAttributes, in.Note = map[string]string{"tier": "gold"}, "owned by ops"
		in.OverlapPolicy = scheduling.OverlapAllowAll
		kept := f.create(in)
		f.create(cronInput("other", "0 * * * *"))
		requireKept := func(step string) {
			t.Helper()
			got := f.get("kept")
			require.Equal(t, map[string]string{"team": "ops"}, got.Labels, step)
			require.Equal(t, map[string]string{"runbook": "https://wiki/kept"}, got.Memo, step)
			require.Equal(t, map[string]string{"tier": "gold"}, got.SearchAttributes, step)
			require.Equal(t, "owned by ops", got.Note, step)
		}

		// The careful path: the occurrence's run exists already, so the
		// batch's insert conflicts and the batch is redone one at a time.
		occurrence := kept.NextNominalAt.UTC()
		taken := &models.StartedRun{Run: models.Run{ID: "01JTAKEN0000000000000000AA", Namespace: "default",
			InstanceID: models.ScheduledInstanceID("kept", occurrence), WorkflowType: "invoice-sync", Status: models.RunCompleted,
			CreatedAt: t0, UpdatedAt: t0}}
		inserted, err := models.InsertRun(f.ctx, db, taken)
		require.NoError(t, err)
		require.True(t, inserted)
		f.clock.Set(occurrence.Add(time.Second))
		outcomes := map[string]string{}
		for _, r := range f.tick() {
			outcomes[r.ScheduleID] = r.Outcome + " " + r.Reason
		}
		require.Equal(t, map[string]string{"kept": "skipped already_started", "other": "triggered "}, outcomes)
		requireKept("after the careful path")
		require.EqualValues(t, 1, f.get("kept").SkippedTriggerCount, "the fire's own fields were written")

		// The fast path.
		f.clock.Set(occurrence.Add(time.Hour + time.Second))
		require.Len(t, f.tick(), 2)
		requireKept("after the fast path")
		require.EqualValues(t, 1, f.get("kept").FiresCount)
	})
}
