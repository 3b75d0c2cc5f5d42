package migrations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
)

// Migration 0029 (PostgreSQL) makes the audit stream's (schedule,
// sequence) key its primary key and drops the index on the event's id:
// the events stored before it stay readable in order, a sequence still
// cannot be written twice, compaction and the purge of a deleted schedule
// find their events by the key, and the previous release's compaction
// statement (by id within one schedule) still deletes what it names.
func TestUpgradeTo0029KeysTheStreamBySequence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := migratedUpTo(t, "postgres", 28)

	const sched = "01J2Z0SCHED000000000000029"
	at := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
	insertOlder(t, db, &models.Schedule{ID: sched, Namespace: "default", ScheduleID: "minutely", Status: models.StatusActive,
		Spec:   models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"},
		Action: models.Action{WorkflowType: "w"}, OverlapPolicy: "skip", Labels: map[string]string{}, Memo: map[string]string{},
		SearchAttributes: map[string]string{}, BufferedActions: []models.BufferedAction{}, CreatedAt: at, UpdatedAt: at})
	event := func(seq int64) *models.ScheduleEvent {
		return &models.ScheduleEvent{ID: fmt.Sprintf("01J2Z0EVENT%015d", seq), WorkflowScheduleID: sched, Sequence: seq,
			EventType: models.FireEventType, Payload: []byte(`{}`), RecordedAt: at.Add(time.Duration(seq) * time.Minute)}
	}
	var before []*models.ScheduleEvent
	for seq := int64(1); seq <= 6; seq++ {
		before = append(before, event(seq))
	}
	require.NoError(t, models.InsertScheduleEvents(ctx, db, before))

	applied, err := migrations.ApplyUpTo(ctx, db, 29)
	require.NoError(t, err)
	require.Equal(t, []string{"0029_events_keyed_by_sequence.sql"}, applied)

	var key []string
	require.NoError(t, db.NewRaw(`SELECT a.attname FROM pg_index AS i
		JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = 'workflow_schedule_history_events'::regclass AND i.indisprimary
		ORDER BY array_position(i.indkey, a.attnum)`).Scan(ctx, &key))
	require.Equal(t, []string{"workflow_schedule_id", "sequence"}, key)
	var onID int
	require.NoError(t, db.NewRaw(`SELECT count(*) FROM pg_index AS i JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
		WHERE i.indrelid = 'workflow_schedule_history_events'::regclass AND a.attname = 'id'`).Scan(ctx, &onID))
	require.Zero(t, onID, "no index leads with the event's id")

	events, _, err := models.ListScheduleEvents(ctx, db, sched, models.EventQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, events, 6)
	require.Equal(t, "01J2Z0EVENT000000000000001", events[0].ID)

	dup := event(3)
	dup.ID = "01J2Z0EVENTDUPLICATE000003"
	require.Error(t, models.InsertScheduleEvents(ctx, db, []*models.ScheduleEvent{dup}), "a sequence is written once")

	n, err := models.CompactEvents(ctx, db, sched, []int64{1, 2}, models.Compaction{FromSequence: 1, ThroughSequence: 2, Fires: 2, ThroughAt: at})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	res, err := db.ExecContext(ctx, "DELETE FROM workflow_schedule_history_events WHERE workflow_schedule_id = ? AND id IN (?)",
		sched, "01J2Z0EVENT000000000000003")
	require.NoError(t, err)
	gone, err := res.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, 1, gone, "the previous release's compaction still deletes by id")

	d, _, err := models.PurgeSchedulePart(ctx, db, sched, 2)
	require.NoError(t, err)
	require.Equal(t, 2, d.ScheduleEvents)
	events, _, err = models.ListScheduleEvents(ctx, db, sched, models.EventQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.EqualValues(t, 6, events[0].Sequence, "the purge takes the oldest first")
}
