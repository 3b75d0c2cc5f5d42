package retention_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/retention"
)

// The sweeper needs a database and a clock, nothing of the service: on a
// stream written straight to the tables — a creation, 30 hourly fires, a
// skip and an update — a pass with a day's retention deletes the fires and
// the skip older than a day but the newest fire, keeps every lifecycle
// event, and records the compacted range; then it rests before the next
// round.
func TestCompactDeletesOldFiresAndSkipsOnly(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := context.Background()
		now := t0.Add(40 * time.Hour)
		sch := seedStream(t, db)
		sweeper := retention.New(db, func() time.Time { return now })
		policy := retention.Policy{KeepRuns: 24 * time.Hour, Budget: time.Minute}
		deleted, err := sweeper.Compact(ctx, policy)
		require.NoError(t, err)
		// Older than a day (before hour 16): the fires of hours 1-15 and
		// the skip; the lifecycle events stay.
		require.Equal(t, 16, deleted.ScheduleEvents)
		var left []models.ScheduleEvent
		require.NoError(t, db.NewSelect().Model(&left).Where("workflow_schedule_id = ?", sch.ID).Order("sequence").Scan(ctx))
		var kinds []string
		for _, e := range left {
			if e.EventType != models.FireEventType {
				kinds = append(kinds, e.EventType)
			}
		}
		require.Equal(t, []string{"ScheduleCreated", "ScheduleUpdated"}, kinds)
		require.Len(t, left, 2+15, "the fires of hours 16-30 are a day old or younger")
		c, err := models.CompactionOf(ctx, db, sch.ID)
		require.NoError(t, err)
		// Sequences 2-18 but the update (6): hours 1-15 and the skip.
		require.True(t, c.ThroughAt.Equal(t0.Add(15*time.Hour)), "through %s", c.ThroughAt)
		c.ThroughAt = time.Time{}
		require.Equal(t, models.Compaction{WorkflowScheduleID: sch.ID, FromSequence: 2, ThroughSequence: 18, Fires: 15, Skips: 1}, *c)

		// The round is over and left no backlog: compaction rests ten
		// minutes (the fire of hour 16 comes of age five minutes in and
		// waits), then the next round takes it.
		now = now.Add(5 * time.Minute)
		again, err := sweeper.Compact(ctx, policy)
		require.NoError(t, err)
		require.Zero(t, again.ScheduleEvents, "resting")
		now = now.Add(6 * time.Minute)
		again, err = sweeper.Compact(ctx, policy)
		require.NoError(t, err)
		require.Equal(t, 1, again.ScheduleEvents, "the next round")
	})
}

var t0 = time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)

// seedStream writes a schedule's stream straight to the tables: its
// creation at t0, a fire every hour from t0+1h to t0+30h, a skip after the
// second and an update after the third.
func seedStream(t *testing.T, db *bun.DB) models.Schedule {
	t.Helper()
	ctx := context.Background()
	sch := models.Schedule{ID: "01J2Z0SCHED000000000000001", Namespace: "default", ScheduleID: "hourly", Status: models.StatusActive,
		Spec:   models.Spec{CronExpressions: []string{"0 * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"},
		Action: models.Action{WorkflowType: "w"}, OverlapPolicy: "allow_all", Labels: map[string]string{}, Memo: map[string]string{},
		SearchAttributes: map[string]string{}, BufferedActions: []models.BufferedAction{}, CreatedAt: t0, UpdatedAt: t0}
	var events []models.ScheduleEvent
	add := func(kind string, at time.Time) {
		n := int64(len(events) + 1)
		e := models.ScheduleEvent{ID: fmt.Sprintf("01J2Z0EVENT%015d", n), WorkflowScheduleID: sch.ID, Sequence: n,
			EventType: kind, Payload: []byte(`{}`), RecordedAt: at}
		if kind == models.FireEventType {
			occurrence := at
			e.OccurrenceTime = &occurrence
		}
		events = append(events, e)
	}
	add("ScheduleCreated", t0)
	for h := 1; h <= 30; h++ {
		add(models.FireEventType, t0.Add(time.Duration(h)*time.Hour))
		switch h {
		case 2:
			add("ScheduleTriggerSkipped", t0.Add(2*time.Hour+time.Minute))
		case 3:
			add("ScheduleUpdated", t0.Add(3*time.Hour+time.Minute))
		}
	}
	sch.LastSequence = int64(len(events))
	_, err := db.NewInsert().Model(&sch).Exec(ctx)
	require.NoError(t, err)
	_, err = db.NewInsert().Model(&events).Exec(ctx)
	require.NoError(t, err)
	return sch

}

// A visit takes Batch events at most; a round that met a schedule with
// more waiting goes on at once instead of resting.
func TestCompactCatchesUpABacklogWithoutResting(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := context.Background()
		seedStream(t, db)
		sweeper := retention.New(db, func() time.Time { return t0.Add(40 * time.Hour) })
		policy := retention.Policy{KeepRuns: 24 * time.Hour, Batch: 4, Budget: time.Minute}
		var passes []int
		for range 3 {
			d, err := sweeper.Compact(ctx, policy)
			require.NoError(t, err)
			passes = append(passes, d.ScheduleEvents)
		}
		// Each pass is one round and the next (a visit of 4 each), then
		// nothing is old enough: 16 of the 16.
		require.Equal(t, []int{8, 8, 0}, passes)
	})
}
