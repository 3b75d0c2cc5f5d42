package scheduling_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

var t0 = time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

type fixture struct {
	t     *testing.T
	db    *bun.DB
	clock *schedtest.Clock
	svc   *scheduling.Service
	ctx   context.Context
}

func newFixture(t *testing.T, db *bun.DB) *fixture {
	clock := schedtest.NewClock(t0)
	return &fixture{t: t, db: db, clock: clock, svc: schedtest.Service(db, clock), ctx: context.Background()}
}

// cronInput is a valid create input firing on cron in UTC.
func cronInput(id, cron string) scheduling.CreateInput {
	return scheduling.CreateInput{
		Namespace: "default", ScheduleID: id,
		Spec:   models.Spec{CronExpressions: []string{cron}, Timezone: "UTC"},
		Action: models.Action{WorkflowType: "invoice-sync", Input: json.RawMessage(`{"region": "eu"}`)},
	}
}

func (f *fixture) create(in scheduling.CreateInput) *models.Schedule {
	f.t.Helper()
	s, err := f.svc.Create(f.ctx, in, nil)
	require.NoError(f.t, err)
	return s
}

func (f *fixture) get(id string) *models.Schedule {
	f.t.Helper()
	s, err := f.svc.Get(f.ctx, "default", id)
	require.NoError(f.t, err)
	return s
}

// events returns the audit stream of a schedule.
func (f *fixture) events(id string) []models.ScheduleEvent {
	f.t.Helper()
	page, err := f.svc.History(f.ctx, "default", id, scheduling.HistoryQuery{AfterSequence: 0, Limit: 500})
	require.NoError(f.t, err)
	return page.Events
}

func eventTypes(events []models.ScheduleEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.EventType
	}
	return out
}

func payload(t *testing.T, e models.ScheduleEvent) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(e.Payload, &m))
	return m
}

// setRunStatus plays the worker's part until the worker protocol drives it.
func (f *fixture) setRunStatus(runID, status string) {
	f.t.Helper()
	_, err := f.db.NewUpdate().Model((*models.Run)(nil)).Set("status = ?", status).Where("id = ?", runID).Exec(f.ctx)
	require.NoError(f.t, err)
}

func (f *fixture) run(runID string) *models.Run {
	f.t.Helper()
	r, err := f.svc.GetRun(f.ctx, "default", runID)
	require.NoError(f.t, err)
	return r
}

func TestCreateComputesNextFireAndRecordsCreated(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("daily-sync", "30 2 * * *")
		in.Spec.Timezone = "America/New_York"
		s := f.create(in)

		// 02:30 EDT on 2026-07-17 is 06:30 UTC.
		require.Equal(t, time.Date(2026, 7, 17, 6, 30, 0, 0, time.UTC), s.NextFireAt.UTC())
		require.True(t, s.NextFireAt.Equal(*s.NextNominalAt), "no jitter configured")
		require.Equal(t, models.StatusActive, s.Status)
		require.Equal(t, scheduling.OverlapSkip, s.OverlapPolicy)
		require.Len(t, s.ID, 26, "internal id is a ULID")

		events := f.events("daily-sync")
		require.Equal(t, []string{"ScheduleCreated"}, eventTypes(events))
		require.EqualValues(t, 1, events[0].Sequence)
		p := payload(t, events[0])
		require.Equal(t, "2026-07-17T06:30:00.000000Z", p["next_fire_at"])
		require.Equal(t, "skip", p["overlap_policy"])
		require.Equal(t, map[string]any{"cron_expressions": []any{"30 2 * * *"}, "intervals": []any{}, "timezone": "America/New_York"}, p["spec"])
		require.NotContains(t, p, "command_context", "omitted when absent")

		d, err := f.svc.Describe(f.ctx, "default", "daily-sync")
		require.NoError(t, err)
		require.Len(t, d.FutureFireTimes, 5)
		require.Equal(t, time.Date(2026, 7, 21, 6, 30, 0, 0, time.UTC), d.FutureFireTimes[4].UTC())
		require.Contains(t, d.SpecDescription, "02:30")
	})
}

func TestCreateRejectsBadInputFieldByField(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLite(t))
	in := cronInput("bad id!", "0 0 * * * *")
	in.Action.WorkflowType = ""
	in.OverlapPolicy = "sometimes"
	in.JitterSeconds = 3601
	in.MaxRuns = ptr[int64](0)
	in.Labels = map[string]string{"bad key": "x"}
	_, err := f.svc.Create(f.ctx, in, nil)
	var v *scheduling.ValidationError
	require.ErrorAs(t, err, &v)
	require.Equal(t, "validation_failed", v.Code)
	for _, field := range []string{"schedule_id", "spec.cron_expressions[0]", "action.workflow_type", "overlap_policy", "jitter_seconds", "max_runs", "labels"} {
		require.Contains(t, v.Fields, field)
	}
	require.Contains(t, v.Fields["spec.cron_expressions[0]"], "6 fields")

	for _, id := range []string{".", "..", strings.Repeat("x", 201), "a/b", "émoji"} {
		_, err = f.svc.Create(f.ctx, cronInput(id, "0 * * * *"), nil)
		require.ErrorAs(t, err, &v, id)
		require.Contains(t, v.Fields, "schedule_id", id)
	}

	_, err = f.svc.Create(f.ctx, cronInput("never", "0 0 30 2 *"), nil)
	require.ErrorAs(t, err, &v)
	require.Equal(t, "spec_never_fires", v.Code)

	empty := cronInput("empty", "")
	empty.Spec.CronExpressions = nil
	_, err = f.svc.Create(f.ctx, empty, nil)
	require.ErrorAs(t, err, &v)
	require.Contains(t, v.Fields, "spec.cron_expressions")

	// Nothing was written by the rejected calls.
	n, err := f.db.NewSelect().Model((*models.Schedule)(nil)).Count(f.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestCreateDuplicateAndGeneratedIDs(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("dup", "0 * * * *"))
		_, err := f.svc.Create(f.ctx, cronInput("dup", "0 * * * *"), nil)
		var c *scheduling.ConflictError
		require.ErrorAs(t, err, &c)
		require.Equal(t, "schedule_already_exists", c.Code)

		// Deleted schedules keep their ID.
		_, err = f.svc.Delete(f.ctx, "default", "dup", nil)
		require.NoError(t, err)
		_, err = f.svc.Create(f.ctx, cronInput("dup", "0 * * * *"), nil)
		require.ErrorAs(t, err, &c)
		require.Equal(t, "schedule_already_exists", c.Code)

		s := f.create(cronInput("", "0 * * * *"))
		require.Regexp(t, `^sch-[0-9a-z]{26}$`, s.ScheduleID)
	})
}

func TestCreatePausedRecordsCreatedThenPaused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.SQLite(t))
	in := cronInput("p", "0 * * * *")
	in.Paused = true
	s, err := f.svc.Create(f.ctx, in, &scheduling.CommandContext{Source: "api", Actor: "alice"})
	require.NoError(t, err)
	require.Equal(t, models.StatusPaused, s.Status)
	events := f.events("p")
	require.Equal(t, []string{"ScheduleCreated", "SchedulePaused"}, eventTypes(events))
	require.Equal(t, map[string]any{"source": "api", "actor": "alice"}, payload(t, events[1])["command_context"])
}

func TestLifecycleAuditStream(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		cc := &scheduling.CommandContext{Source: "ui", Actor: "ops@example.com", RequestID: "req-1"}
		_, err := f.svc.Create(f.ctx, cronInput("life", "0 * * * *"), cc)
		require.NoError(t, err)

		f.clock.Advance(time.Minute)
		_, err = f.svc.Pause(f.ctx, "default", "life", scheduling.PauseInput{Reason: "maintenance window"}, cc)
		require.NoError(t, err)
		require.Equal(t, "maintenance window", *f.get("life").PauseReason)

		f.clock.Advance(time.Minute)
		resumed, err := f.svc.Resume(f.ctx, "default", "life", cc)
		require.NoError(t, err)
		require.Equal(t, time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC), resumed.NextFireAt.UTC())

		_, err = f.svc.Update(f.ctx, "default", "life", scheduling.UpdateInput{
			Spec: &models.Spec{CronExpressions: []string{"*/15 * * * *"}, Timezone: "UTC"},
			Note: ptr("every quarter hour"),
		}, cc)
		require.NoError(t, err)

		first, err := f.svc.Trigger(f.ctx, "default", "life", "", cc)
		require.NoError(t, err)
		require.Equal(t, scheduling.OutcomeTriggered, first.Outcome)
		require.Regexp(t, `^schedule:life:manual:[0-9A-Z]{26}$`, first.InstanceID)
		manual, err := ulid.Parse(strings.TrimPrefix(first.InstanceID, "schedule:life:manual:"))
		require.NoError(t, err)
		require.Equal(t, f.clock.Now().UnixMilli(), int64(manual.Time()), "a manual ID starts with the trigger's millisecond")

		f.clock.Advance(time.Second)
		second, err := f.svc.Trigger(f.ctx, "default", "life", "", cc)
		require.NoError(t, err)
		require.Equal(t, scheduling.OutcomeSkipped, second.Outcome)
		require.Equal(t, "overlap_policy_skip", second.Reason)

		_, err = f.svc.Delete(f.ctx, "default", "life", cc)
		require.NoError(t, err)
		_, err = f.svc.Delete(f.ctx, "default", "life", cc)
		require.NoError(t, err, "delete is idempotent")

		events := f.events("life")
		require.Equal(t, []string{"ScheduleCreated", "SchedulePaused", "ScheduleResumed", "ScheduleUpdated",
			"ScheduleTriggered", "ScheduleTriggerSkipped", "ScheduleDeleted"}, eventTypes(events))
		for i, e := range events {
			require.EqualValues(t, i+1, e.Sequence)
			require.Equal(t, map[string]any{"source": "ui", "actor": "ops@example.com", "request_id": "req-1"}, payload(t, e)["command_context"])
		}
		require.Equal(t, map[string]any{"reason": "maintenance window", "paused_at": "2026-07-16T12:01:00.000000Z",
			"command_context": payload(t, events[1])["command_context"]}, payload(t, events[1]))
		require.Equal(t, "2026-07-16T13:00:00.000000Z", payload(t, events[2])["next_fire_at"])
		upd := payload(t, events[3])
		require.Equal(t, []any{"spec", "note"}, upd["changed_fields"])
		require.Equal(t, "2026-07-16T12:15:00.000000Z", upd["next_fire_at"])
		trig := payload(t, events[4])
		require.Equal(t, "manual", trig["outcome"])
		require.Equal(t, "skip", trig["effective_overlap_policy"])
		require.EqualValues(t, 1, trig["trigger_number"])
		require.Equal(t, first.RunID, trig["workflow_run_id"])
		require.Equal(t, first.InstanceID, *events[4].WorkflowInstanceID)
		require.Equal(t, first.RunID, *events[4].WorkflowRunID)
		skip := payload(t, events[5])
		require.Equal(t, "overlap_policy_skip", skip["reason"])
		require.EqualValues(t, 1, skip["skipped_trigger_count"])
		require.Equal(t, "2026-07-16T12:02:01.000000Z", skip["last_skipped_at"])
		require.Equal(t, "deleted", payload(t, events[6])["reason"])

		s := f.get("life")
		require.Equal(t, models.StatusDeleted, s.Status)
		require.Nil(t, s.NextFireAt)
		require.EqualValues(t, 1, s.SkippedTriggerCount)
		require.Equal(t, "overlap_policy_skip", *s.LastSkipReason)
	})
}

func TestStateMachineConflicts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("sm", "0 * * * *"))
		code := func(err error) string {
			t.Helper()
			var c *scheduling.ConflictError
			require.ErrorAs(t, err, &c)
			return c.Code
		}
		_, err := f.svc.Resume(f.ctx, "default", "sm", nil)
		require.Equal(t, "schedule_not_paused", code(err))
		_, err = f.svc.Pause(f.ctx, "default", "sm", scheduling.PauseInput{}, nil)
		require.NoError(t, err)
		_, err = f.svc.Pause(f.ctx, "default", "sm", scheduling.PauseInput{}, nil)
		require.Equal(t, "schedule_not_active", code(err))

		// A paused schedule does not fire on trigger: the skip is recorded.
		res, err := f.svc.Trigger(f.ctx, "default", "sm", "", nil)
		require.NoError(t, err)
		require.Equal(t, scheduling.FireResult{Outcome: "skipped", Reason: "status_not_triggerable"}, res)

		_, err = f.svc.Delete(f.ctx, "default", "sm", nil)
		require.NoError(t, err)
		_, err = f.svc.Pause(f.ctx, "default", "sm", scheduling.PauseInput{}, nil)
		require.Equal(t, "schedule_deleted", code(err))
		_, err = f.svc.Resume(f.ctx, "default", "sm", nil)
		require.Equal(t, "schedule_deleted", code(err))
		_, err = f.svc.Update(f.ctx, "default", "sm", scheduling.UpdateInput{Note: ptr("x")}, nil)
		require.Equal(t, "schedule_deleted", code(err))
		_, err = f.svc.Trigger(f.ctx, "default", "sm", "", nil)
		require.Equal(t, "schedule_deleted", code(err))
		_, err = f.svc.Backfill(f.ctx, "default", "sm", scheduling.BackfillInput{From: t0, To: t0.Add(time.Hour)})
		require.Equal(t, "schedule_deleted", code(err))
		_, err = f.svc.Describe(f.ctx, "default", "sm")
		require.ErrorIs(t, err, scheduling.ErrNotFound)

		// The history of a deleted schedule stays readable.
		require.Equal(t, []string{"ScheduleCreated", "SchedulePaused", "ScheduleTriggerSkipped", "ScheduleDeleted"}, eventTypes(f.events("sm")))

		_, err = f.svc.Pause(f.ctx, "default", "missing", scheduling.PauseInput{}, nil)
		var nf *scheduling.NotFoundError
		require.ErrorAs(t, err, &nf)
		require.Equal(t, "schedule_not_found", nf.Code)
	})
}

func TestUpdateRules(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("upd", "0 * * * *")
		in.MaxRuns = ptr[int64](10)
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		for range 3 {
			res, err := f.svc.Trigger(f.ctx, "default", "upd", "", nil)
			require.NoError(t, err)
			require.Equal(t, "triggered", res.Outcome)
			f.clock.Advance(time.Millisecond)
		}
		s, err := f.svc.Update(f.ctx, "default", "upd", scheduling.UpdateInput{MaxRuns: scheduling.Nullable[int64]{Set: true, Value: ptr[int64](20)}}, nil)
		require.NoError(t, err)
		require.EqualValues(t, 17, *s.RemainingActions)
		require.EqualValues(t, 3, s.FiresCount)

		_, err = f.svc.Update(f.ctx, "default", "upd", scheduling.UpdateInput{MaxRuns: scheduling.Nullable[int64]{Set: true, Value: ptr[int64](3)}}, nil)
		var v *scheduling.ValidationError
		require.ErrorAs(t, err, &v)
		require.Contains(t, v.Fields["max_runs"], "must exceed the 3 runs")

		// Clearing max_runs clears the remaining count.
		s, err = f.svc.Update(f.ctx, "default", "upd", scheduling.UpdateInput{MaxRuns: scheduling.Nullable[int64]{Set: true}}, nil)
		require.NoError(t, err)
		require.Nil(t, s.MaxRuns)
		require.Nil(t, s.RemainingActions)

		// Same values: no event. Timezone change: next fire recomputed.
		before := len(f.events("upd"))
		_, err = f.svc.Update(f.ctx, "default", "upd", scheduling.UpdateInput{OverlapPolicy: ptr(scheduling.OverlapAllowAll)}, nil)
		require.NoError(t, err)
		require.Len(t, f.events("upd"), before)

		s, err = f.svc.Update(f.ctx, "default", "upd", scheduling.UpdateInput{
			Spec:          &models.Spec{CronExpressions: []string{"0 9 * * *"}, Timezone: "Asia/Kolkata"},
			JitterSeconds: ptr(0), OverlapPolicy: ptr(scheduling.OverlapSkip),
		}, nil)
		require.NoError(t, err)
		// 09:00 IST on 2026-07-17 is 03:30 UTC.
		require.Equal(t, time.Date(2026, 7, 17, 3, 30, 0, 0, time.UTC), s.NextFireAt.UTC())
		events := f.events("upd")
		require.Equal(t, []any{"spec", "overlap_policy"}, payload(t, events[len(events)-1])["changed_fields"])
	})
}

func TestNamespaceIsolation(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		a := cronInput("same-id", "0 * * * *")
		a.Namespace = "team-a"
		b := cronInput("same-id", "30 * * * *")
		b.Namespace = "team-b"
		f.create(a)
		f.create(b)

		_, err := f.svc.Pause(f.ctx, "team-a", "same-id", scheduling.PauseInput{}, nil)
		require.NoError(t, err)
		sb, err := f.svc.Get(f.ctx, "team-b", "same-id")
		require.NoError(t, err)
		require.Equal(t, models.StatusActive, sb.Status, "pausing in team-a leaves team-b alone")

		_, err = f.svc.Get(f.ctx, "team-c", "same-id")
		require.ErrorIs(t, err, scheduling.ErrNotFound)
		_, err = f.svc.History(f.ctx, "default", "same-id", scheduling.HistoryQuery{AfterSequence: 0, Limit: 10})
		require.ErrorIs(t, err, scheduling.ErrNotFound)

		page, err := f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "team-b"})
		require.NoError(t, err)
		require.Len(t, page.Schedules, 1)
		require.Equal(t, "team-b", page.Schedules[0].Namespace)
	})
}

func TestHistoryPaging(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("h", "0 * * * *"))
		for range 9 { // 1 created + 9 updates = 10 events
			_, err := f.svc.Update(f.ctx, "default", "h", scheduling.UpdateInput{Note: ptr(f.clock.Now().String())}, nil)
			require.NoError(t, err)
			f.clock.Advance(time.Second)
		}
		var cursors []any
		var seqs []int64
		after := int64(0)
		for {
			page, err := f.svc.History(f.ctx, "default", "h", scheduling.HistoryQuery{AfterSequence: after, Limit: 4})
			require.NoError(t, err)
			for _, e := range page.Events {
				seqs = append(seqs, e.Sequence)
			}
			if page.NextCursor == nil {
				cursors = append(cursors, nil)
				require.False(t, page.HasMore)
				break
			}
			require.True(t, page.HasMore)
			cursors = append(cursors, *page.NextCursor)
			after = *page.NextCursor
		}
		require.Equal(t, []any{int64(4), int64(8), nil}, cursors)
		require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, seqs)

		page, err := f.svc.History(f.ctx, "default", "h", scheduling.HistoryQuery{AfterSequence: 0, Limit: 0})
		require.NoError(t, err)
		require.Len(t, page.Events, 1, "limit is clamped up to 1")
		require.Equal(t, 500, scheduling.ClampHistoryLimit(99999))
		_, err = f.svc.History(f.ctx, "default", "h", scheduling.HistoryQuery{AfterSequence: -3, Limit: 10})
		var v *scheduling.ValidationError
		require.ErrorAs(t, err, &v)
		require.Equal(t, "invalid_after_sequence", v.Code)
	})
}

func TestListFiltersAndKeysetPaging(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		for _, id := range []string{"a-1", "a-2", "b-1", "b-2", "c-1"} {
			in := cronInput(id, "0 * * * *")
			in.Labels = map[string]string{"team": id[:1]}
			if id == "c-1" {
				in.Action.WorkflowType = "report"
				in.Note = "100% of the 50_50 split"
			}
			f.create(in)
		}
		_, err := f.svc.Pause(f.ctx, "default", "b-1", scheduling.PauseInput{}, nil)
		require.NoError(t, err)
		_, err = f.svc.Delete(f.ctx, "default", "b-2", nil)
		require.NoError(t, err)

		ids := func(p *scheduling.SchedulePage) []string {
			var out []string
			for _, s := range p.Schedules {
				out = append(out, s.ScheduleID)
			}
			return out
		}
		p, err := f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []string{"a-1", "a-2"}, ids(p))
		require.True(t, p.HasMore)
		p, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Limit: 2, Cursor: p.NextCursor})
		require.NoError(t, err)
		require.Equal(t, []string{"b-1", "c-1"}, ids(p), "deleted schedules are hidden by default")
		require.False(t, p.HasMore)

		p, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Statuses: []string{"deleted"}})
		require.NoError(t, err)
		require.Equal(t, []string{"b-2"}, ids(p))
		p, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Label: "team:a"})
		require.NoError(t, err)
		require.Equal(t, []string{"a-1", "a-2"}, ids(p))
		p, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Label: "team=a"})
		require.NoError(t, err)
		require.Equal(t, []string{"a-1", "a-2"}, ids(p), "key=value, as labels are written everywhere")
		p, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", WorkflowType: "report"})
		require.NoError(t, err)
		require.Equal(t, []string{"c-1"}, ids(p))
		p, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Text: "REPORT"})
		require.NoError(t, err)
		require.Equal(t, []string{"c-1"}, ids(p), "text matches the workflow type, case-insensitively")
		// LIKE metacharacters and quotes are matched literally.
		for _, q := range []string{"100%", "50_50", "%", "_", "' OR 1=1 --"} {
			p, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Text: q})
			require.NoError(t, err, q)
			if q == "' OR 1=1 --" {
				require.Empty(t, ids(p), q)
			} else {
				require.Equal(t, []string{"c-1"}, ids(p), q)
			}
		}
		_, err = f.svc.List(f.ctx, scheduling.ListFilter{Namespace: "default", Cursor: "!!"})
		var v *scheduling.ValidationError
		require.ErrorAs(t, err, &v)
		require.Contains(t, v.Fields, "cursor")
	})
}

// A pause keeps its reason, author and end in fields of its own: the note
// belongs to whoever wrote the schedule and survives pause and resume.
func TestPauseKeepsTheNote(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("noted", "0 * * * *")
		in.Note = "owned by billing; page #oncall"
		f.create(in)
		cc := &scheduling.CommandContext{Source: "api", Actor: "ops@example.com"}

		_, err := f.svc.Pause(f.ctx, "default", "noted", scheduling.PauseInput{Reason: strings.Repeat("r", scheduling.MaxReasonLength+1)}, cc)
		requireFields(t, err, "reason")
		past := t0.Add(-time.Second)
		_, err = f.svc.Pause(f.ctx, "default", "noted", scheduling.PauseInput{Until: &past}, cc)
		requireFields(t, err, "paused_until")
		require.Equal(t, models.StatusActive, f.get("noted").Status, "a refused pause changes nothing")

		until := t0.Add(2 * time.Hour)
		p, err := f.svc.Pause(f.ctx, "default", "noted", scheduling.PauseInput{Reason: strings.Repeat("r", scheduling.MaxReasonLength), Until: &until}, cc)
		require.NoError(t, err)
		got := f.get("noted")
		require.Equal(t, in.Note, got.Note)
		require.Equal(t, strings.Repeat("r", scheduling.MaxReasonLength), *got.PauseReason)
		require.Equal(t, "ops@example.com", *got.PausedBy)
		require.True(t, until.Equal(*got.PausedUntil), "paused_until %v", got.PausedUntil)
		require.Nil(t, got.NextFireAt, "no next fire while paused")
		require.Nil(t, p.NextFireAt)
		ev := f.events("noted")
		require.Equal(t, "2026-07-16T14:00:00.000000Z", payload(t, ev[len(ev)-1])["paused_until"])

		// An edit of the spec while paused still computes no next fire.
		_, err = f.svc.Update(f.ctx, "default", "noted", scheduling.UpdateInput{
			Spec: &models.Spec{CronExpressions: []string{"*/5 * * * *"}, Timezone: "UTC"}}, cc)
		require.NoError(t, err)
		require.Nil(t, f.get("noted").NextFireAt)

		r, err := f.svc.Resume(f.ctx, "default", "noted", cc)
		require.NoError(t, err)
		require.Equal(t, in.Note, r.Note, "resume leaves the note as it was")
		require.Nil(t, r.PauseReason)
		require.Nil(t, r.PausedBy)
		require.Nil(t, r.PausedUntil)
		require.NotNil(t, r.NextFireAt)
	})
}

// requireFields asserts err is a validation error naming exactly fields.
func requireFields(t *testing.T, err error, fields ...string) {
	t.Helper()
	var v *scheduling.ValidationError
	require.ErrorAs(t, err, &v)
	got := make([]string, 0, len(v.Fields))
	for k := range v.Fields {
		got = append(got, k)
	}
	require.ElementsMatch(t, fields, got, "fields of %v", err)
}
