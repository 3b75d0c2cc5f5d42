package migrations_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// The tables as migration 0008 left them, for writing what a fire wrote
// then: an instance, its run (pointing at the instance) and the run's
// ScheduleTriggered history row.
type instance0008 struct {
	bun.BaseModel `bun:"table:workflow_instances"`

	ID                 string    `bun:"id,pk"`
	Namespace          string    `bun:"namespace"`
	InstanceID         string    `bun:"instance_id"`
	WorkflowType       string    `bun:"workflow_type"`
	WorkflowClass      string    `bun:"workflow_class"`
	WorkflowScheduleID string    `bun:"workflow_schedule_id"`
	ScheduleID         string    `bun:"schedule_id"`
	Status             string    `bun:"status"`
	LatestRunID        string    `bun:"latest_run_id"`
	CreatedAt          time.Time `bun:"created_at"`
	UpdatedAt          time.Time `bun:"updated_at"`
}

type run0008 struct {
	models.Run         `bun:",extend"`
	WorkflowInstanceID string `bun:"workflow_instance_id"`
}

// event0011 is an audit event row as migrations 0001–0011 left the table,
// before a ScheduleTriggered's facts had columns of their own.
type event0011 struct {
	bun.BaseModel `bun:"table:workflow_schedule_history_events"`

	ID                 string          `bun:"id,pk"`
	WorkflowScheduleID string          `bun:"workflow_schedule_id"`
	Sequence           int64           `bun:"sequence"`
	EventType          string          `bun:"event_type"`
	Payload            json.RawMessage `bun:"payload,type:jsonb"`
	WorkflowInstanceID *string         `bun:"workflow_instance_id"`
	WorkflowRunID      *string         `bun:"workflow_run_id"`
	RecordedAt         time.Time       `bun:"recorded_at"`
}

// migratedUpTo is a new database of dialect with migrations 1…version
// applied, as a deployment of that version left it.
func migratedUpTo(t *testing.T, dialect string, version int) *bun.DB {
	t.Helper()
	ctx := context.Background()
	url := "sqlite:" + filepath.Join(t.TempDir(), "upgrade.db")
	if dialect == "postgres" {
		url = dbtest.PostgresURL(t)
	}
	db, err := database.Open(ctx, url)
	require.NoError(t, err)
	dbtest.LimitPool(db)
	t.Cleanup(func() { _ = db.Close() })
	applied, err := migrations.ApplyUpTo(ctx, db, version)
	require.NoError(t, err)
	// Numbers are sparse (a migration may exist for one dialect only):
	// the last one applied is the one asked for.
	require.NotEmpty(t, applied)
	require.True(t, strings.HasPrefix(applied[len(applied)-1], fmt.Sprintf("%04d_", version)), "applied %v", applied)
	return db
}

// hourly is the schedule the upgrade tests start from.
var hourly = scheduling.CreateInput{
	Namespace: "default", ScheduleID: "hourly",
	Spec:          models.Spec{CronExpressions: []string{"0 * * * *"}, Timezone: "UTC"},
	Action:        models.Action{WorkflowType: "invoice-sync"},
	OverlapPolicy: scheduling.OverlapAllowAll,
}

// createInOlderSchema creates a schedule in db, whose schema is older than
// the code's, as the service creates it: the service cannot write there
// itself (it writes the audit table's current columns), so it creates the
// schedule in a database of the current schema and the rows it wrote, the
// schedule and its ScheduleCreated event, are copied over.
func createInOlderSchema(t *testing.T, db *bun.DB, dialect string, clock *schedtest.Clock, in scheduling.CreateInput) *models.Schedule {
	t.Helper()
	ctx := context.Background()
	current := dbtest.Open(t, dialect)
	sch, err := schedtest.Service(current, clock).Create(ctx, in, nil)
	require.NoError(t, err)
	events, _, err := models.ListScheduleEvents(ctx, current, sch.ID, models.EventQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, events, 1)
	insertOlder(t, db, sch)
	e := events[0]
	_, err = db.NewInsert().Model(&event0011{ID: e.ID, WorkflowScheduleID: e.WorkflowScheduleID, Sequence: e.Sequence, EventType: e.EventType,
		Payload: e.Payload, WorkflowInstanceID: e.WorkflowInstanceID, WorkflowRunID: e.WorkflowRunID, RecordedAt: e.RecordedAt}).Exec(ctx)
	require.NoError(t, err)
	return sch
}

// An upgrade keeps every stored run and event readable: a database built by
// migrations 0001–0008, holding a schedule that fired and whose run
// completed the way fires were written then (instance row, run, the run's
// ScheduleTriggered row, the full audit payload), reads the same through
// the service after 0009 — run history, audit stream, ledger, run list —
// and goes on firing: the old occurrence's instance ID still cannot start
// twice, and a new fire reads like the old one.
func TestUpgradeFrom0008KeepsRunsAndEventsReadable(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := migratedUpTo(t, dialect, 8)
			var err error

			t0 := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
			clock := schedtest.NewClock(t0)
			svc := schedtest.Service(db, clock)
			// The schedule as 0008 stored it: no actions_count (0012), and
			// its recent actions a JSON list in the row.
			first := t0.Add(time.Hour)
			sch := &models.Schedule{ID: "01J2Z0SCHED000000000000001", Namespace: "default", ScheduleID: "hourly", Status: models.StatusActive,
				Spec:   models.Spec{CronExpressions: []string{"0 * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"},
				Action: models.Action{WorkflowType: "invoice-sync"}, OverlapPolicy: scheduling.OverlapAllowAll,
				Labels: map[string]string{}, Memo: map[string]string{}, SearchAttributes: map[string]string{},
				BufferedActions: []models.BufferedAction{}, NextFireAt: &first, NextNominalAt: &first, LastSequence: 1,
				CreatedAt: t0, UpdatedAt: t0}
			insertOlder(t, db, sch)
			_, err = db.NewInsert().Model(&event0011{ID: "01J2Z0AU000000000000000001", WorkflowScheduleID: sch.ID, Sequence: 1,
				EventType: "ScheduleCreated", RecordedAt: t0, Payload: json.RawMessage(`{"spec":{"cron_expressions":["0 * * * *"],"intervals":[],"timezone":"UTC"},` +
					`"action":{"workflow_type":"invoice-sync","execution_timeout_seconds":null,"run_timeout_seconds":null,"retry_policy":null},` +
					`"overlap_policy":"allow_all","next_fire_at":"2026-07-16T13:00:00.000000Z"}`)}).Exec(ctx)
			require.NoError(t, err)

			// The 13:00 fire, as 0008's code wrote it, and its run's end.
			at := t0.Add(time.Hour)
			fired, started, finished := at.Add(150*time.Millisecond), at.Add(time.Second), at.Add(3*time.Second)
			instanceID := "schedule:hourly:" + strconv.FormatInt(at.Unix(), 10)
			runID, instanceULID := "01J2Z0RUN00000000000000001", "01J2Z0INST0000000000000001"
			worker := "w1"
			_, err = db.NewInsert().Model(&instance0008{ID: instanceULID, Namespace: "default", InstanceID: instanceID,
				WorkflowType: "invoice-sync", WorkflowScheduleID: sch.ID, ScheduleID: "hourly", Status: models.RunCompleted,
				LatestRunID: runID, CreatedAt: fired, UpdatedAt: finished}).Exec(ctx)
			require.NoError(t, err)
			scheduleULID, scheduleID := sch.ID, "hourly"
			_, err = db.NewInsert().Model(&run0008{WorkflowInstanceID: instanceULID, Run: models.Run{
				ID: runID, Namespace: "default", InstanceID: instanceID, WorkflowScheduleID: &scheduleULID, ScheduleID: &scheduleID,
				WorkflowType: "invoice-sync", Output: json.RawMessage(`{"invoices":42}`), Status: models.RunCompleted, Trigger: "scheduled",
				Connection: "default", Queue: "default", Attempt: 1, OccurrenceTime: &at, WorkerID: &worker, LastSequence: 3,
				CreatedAt: fired, StartedAt: &started, FinishedAt: &finished, UpdatedAt: finished,
			}}).Exec(ctx)
			require.NoError(t, err)
			provenance := fmt.Sprintf(`{"schedule_id":"hourly","schedule_ulid":%q,"cron_expression":"0 * * * *","timezone":"UTC",`+
				`"overlap_policy":"allow_all","trigger_number":1,"occurrence_time":"2026-07-16T13:00:00.000000Z"}`, sch.ID)
			runEvents := []models.RunEvent{
				{ID: "01J2Z0EV000000000000000001", WorkflowRunID: runID, Sequence: 1, EventType: "ScheduleTriggered", Payload: json.RawMessage(provenance), RecordedAt: fired},
				{ID: "01J2Z0EV000000000000000002", WorkflowRunID: runID, Sequence: 2, EventType: "RunStarted", Payload: json.RawMessage(`{"attempt":1,"worker_id":"w1"}`), RecordedAt: started},
				{ID: "01J2Z0EV000000000000000003", WorkflowRunID: runID, Sequence: 3, EventType: "RunCompleted", Payload: json.RawMessage(`{}`), RecordedAt: finished},
			}
			_, err = db.NewInsert().Model(&runEvents).Exec(ctx)
			require.NoError(t, err)
			audit := fmt.Sprintf(`{"workflow_instance_id":%q,"workflow_run_id":%q,"outcome":"scheduled","effective_overlap_policy":"allow_all",`+
				`"trigger_number":1,"occurrence_time":"2026-07-16T13:00:00.000000Z","command_context":{"source":"scheduler"}}`, instanceID, runID)
			_, err = db.NewInsert().Model(&event0011{ID: "01J2Z0AU000000000000000002", WorkflowScheduleID: sch.ID, Sequence: 2,
				EventType: "ScheduleTriggered", Payload: json.RawMessage(audit), WorkflowInstanceID: &instanceID, WorkflowRunID: &runID, RecordedAt: fired}).Exec(ctx)
			require.NoError(t, err)
			next := at.Add(time.Hour)
			recent := fmt.Sprintf(`[{"instance_id":%q,"run_id":%q,"outcome":"scheduled","fired_at":"2026-07-16T13:00:00.15Z",`+
				`"occurrence_time":"2026-07-16T13:00:00Z","fire_lag_ms":150}]`, instanceID, runID)
			_, err = db.NewUpdate().Model((*models.Schedule)(nil)).Set("fires_count = 1, last_sequence = 2").
				Set("recent_actions = ?", recent).
				Set("latest_instance_id = ?, latest_run_id = ?, last_fired_at = ?", instanceID, runID, fired).
				Set("next_fire_at = ?, next_nominal_at = ?", next, next).Where("id = ?", sch.ID).Exec(ctx)
			require.NoError(t, err)

			applied, err := migrations.Apply(ctx, db)
			require.NoError(t, err)
			require.NotEmpty(t, applied)
			require.Equal(t, "0009_light_fire.sql", applied[0], "the upgrade starts at 0009 (later migrations follow)")

			// The old run reads as before: its stored history, first event and all.
			clock.Set(at.Add(30 * time.Minute))
			d, err := svc.DescribeRun(ctx, "default", runID)
			require.NoError(t, err)
			require.Equal(t, models.RunCompleted, d.Run.Status)
			require.Equal(t, instanceID, d.Run.InstanceID)
			require.JSONEq(t, `{"invoices":42}`, string(d.Run.Output))
			require.Equal(t, []string{"ScheduleTriggered", "RunStarted", "RunCompleted"}, runEventTypes(d.Events))
			require.Equal(t, []int64{1, 2, 3}, runEventSequences(d.Events))
			require.JSONEq(t, provenance, string(d.Events[0].Payload))
			require.Len(t, d.Attempts, 1)

			// The audit stream: the stored payload, with every CONTRACT §6 key.
			page, err := svc.History(ctx, "default", "hourly", scheduling.HistoryQuery{Limit: 100})
			require.NoError(t, err)
			require.Len(t, page.Events, 2)
			require.Equal(t, "ScheduleTriggered", page.Events[1].EventType)
			require.JSONEq(t, audit, string(page.Events[1].Payload))

			// The ledger finds the started occurrence by its instance ID.
			from, to := t0, at.Add(time.Minute)
			ledger, err := svc.Ledger(ctx, "default", "hourly", scheduling.LedgerQuery{From: &from, To: &to})
			require.NoError(t, err)
			var occurrence *scheduling.Occurrence
			for i := range ledger.Occurrences {
				if ledger.Occurrences[i].Time.Equal(at) {
					occurrence = &ledger.Occurrences[i]
				}
			}
			require.NotNil(t, occurrence, "the 13:00 occurrence is in the ledger")
			require.Equal(t, "started", occurrence.Fate)
			require.Equal(t, runID, occurrence.RunID)
			require.Equal(t, models.RunCompleted, occurrence.RunStatus)

			// The 14:00 fire is written the new way and reads the same way.
			clock.Set(next)
			rows, err := svc.Tick(ctx, 100)
			require.NoError(t, err)
			require.Len(t, rows, 1)
			require.Equal(t, scheduling.OutcomeTriggered, rows[0].Outcome)
			d, err = svc.DescribeRun(ctx, "default", rows[0].RunID)
			require.NoError(t, err)
			require.Equal(t, []string{"ScheduleTriggered"}, runEventTypes(d.Events))
			require.JSONEq(t, fmt.Sprintf(`{"schedule_id":"hourly","schedule_ulid":%q,"cron_expression":"0 * * * *","timezone":"UTC",`+
				`"overlap_policy":"allow_all","trigger_number":2,"occurrence_time":"2026-07-16T14:00:00.000000Z"}`, sch.ID), string(d.Events[0].Payload))
			page, err = svc.History(ctx, "default", "hourly", scheduling.HistoryQuery{AfterSequence: 2, Limit: 100})
			require.NoError(t, err)
			require.Len(t, page.Events, 1)
			require.JSONEq(t, fmt.Sprintf(`{"workflow_instance_id":"schedule:hourly:%d","workflow_run_id":%q,"outcome":"scheduled",`+
				`"effective_overlap_policy":"allow_all","trigger_number":2,"occurrence_time":"2026-07-16T14:00:00.000000Z",`+
				`"command_context":{"source":"scheduler"}}`, next.Unix(), rows[0].RunID), string(page.Events[0].Payload))
			// The stored recent action moved into the ring, and the new
			// fire went in after it.
			got, err := svc.Get(ctx, "default", "hourly")
			require.NoError(t, err)
			require.Len(t, got.RecentActions, 2)
			require.Equal(t, models.RecentAction{InstanceID: fmt.Sprintf("schedule:hourly:%d", next.Unix()), RunID: rows[0].RunID,
				Outcome: "scheduled", FiredAt: next, OccurrenceTime: next}, utcAction(got.RecentActions[0]))
			require.Equal(t, models.RecentAction{InstanceID: instanceID, RunID: runID, Outcome: "scheduled", FiredAt: fired,
				OccurrenceTime: at, FireLagMs: 150}, utcAction(got.RecentActions[1]))
			runs, err := svc.ListRuns(ctx, scheduling.RunListFilter{Namespace: "default", ScheduleID: "hourly"})
			require.NoError(t, err)
			require.Equal(t, []string{rows[0].RunID, runID}, runIDs(runs.Runs))

			// The old occurrence's instance ID still starts once only: a
			// clock stepped back to 13:00 gets already_started.
			_, err = db.NewUpdate().Model((*models.Schedule)(nil)).Set("next_fire_at = ?, next_nominal_at = ?", at, at).
				Where("id = ?", sch.ID).Exec(ctx)
			require.NoError(t, err)
			rows, err = svc.Tick(ctx, 100)
			require.NoError(t, err)
			require.Len(t, rows, 1)
			require.Equal(t, scheduling.OutcomeSkipped, rows[0].Outcome)
			require.Equal(t, scheduling.SkipAlreadyStart, rows[0].Reason)
		})
	}
}

// utcAction is the action with its times in UTC, which compares the same on both databases.
func utcAction(a models.RecentAction) models.RecentAction {
	a.FiredAt, a.OccurrenceTime = a.FiredAt.UTC(), a.OccurrenceTime.UTC()
	return a
}

func runEventTypes(events []models.RunEvent) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.EventType)
	}
	return out
}

func runEventSequences(events []models.RunEvent) []int64 {
	out := make([]int64, 0, len(events))
	for _, e := range events {
		out = append(out, e.Sequence)
	}
	return out
}

func runIDs(runs []models.Run) []string {
	out := make([]string, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}
