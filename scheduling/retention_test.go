package scheduling_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/retention"
	"github.com/tidelinehq/tideline/scheduling"
)

func (f *fixture) count(model any, where string, args ...any) int {
	f.t.Helper()
	q := f.db.NewSelect().Model(model)
	if where != "" {
		q = q.Where(where, args...)
	}
	n, err := q.Count(f.ctx)
	require.NoError(f.t, err)
	return int(n)
}

// Under steady firing with a worker finishing every run, retention keeps
// the runs (each its own instance) and their history at the retention window's
// worth, pass after pass; the audit stream keeps its lifecycle events and
// the window's fires; the latest run of
// a schedule survives however old.
func TestRetentionKeepsTablesFlat(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("hourly", "0 * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		idle := f.create(cronInput("idle", "0 0 1 1 *"))
		res, err := f.svc.Trigger(f.ctx, "default", "idle", "", nil)
		require.NoError(t, err)
		require.Len(t, f.poll(1, 30), 1)
		_, err = f.svc.CompleteRun(f.ctx, "default", res.RunID, w1, nil)
		require.NoError(t, err)

		loop := &scheduling.Loop{Service: f.svc, Retention: retention.Policy{KeepRuns: 48 * time.Hour, Batch: 7}}
		var sizes []int
		for hour := 1; hour <= 24*6; hour++ {
			f.clock.Set(t0.Truncate(time.Hour).Add(time.Duration(hour) * time.Hour))
			_, err := loop.RunOnce(f.ctx)
			require.NoError(t, err)
			for _, run := range f.poll(10, 30) {
				_, err := f.svc.CompleteRun(f.ctx, "default", run.ID, w1, nil)
				require.NoError(t, err)
			}
			if hour%24 == 0 {
				sizes = append(sizes, f.count((*models.Run)(nil), "workflow_schedule_id = ?", f.get("hourly").ID))
			}
		}
		// Day one and two fill the window; from then on it stays at 48-49.
		require.Equal(t, []int{24, 48, 49, 49, 49, 49}, sizes)
		// ScheduleTriggered is served from the run row (migration 0009).
		require.Equal(t, 2*f.count((*models.Run)(nil), ""), f.count((*models.RunEvent)(nil), ""), "no history outlives its run (RunStarted, RunCompleted each)")
		require.Equal(t, 1, f.count((*models.Run)(nil), "workflow_schedule_id = ?", idle.ID), "the latest run stays, six days old")
		// Audit compaction (SPEC §19) keeps the creation and the window's fires.
		require.EqualValues(t, 1+49, len(f.eventsAll("hourly")), "the audit stream keeps its lifecycle and the window's fires")
	})
}

// eventsAll returns a schedule's whole audit stream.
func (f *fixture) eventsAll(id string) []models.ScheduleEvent {
	f.t.Helper()
	var out []models.ScheduleEvent
	after := int64(0)
	for {
		page, err := f.svc.History(f.ctx, "default", id, scheduling.HistoryQuery{AfterSequence: after, Limit: 500})
		require.NoError(f.t, err)
		out = append(out, page.Events...)
		if page.NextCursor == nil {
			return out
		}
		after = *page.NextCursor
	}
}

// Deleted schedules are purged with their audit stream, runs and health
// once PurgeDeletedAfter has passed, in bounded parts; newer ones stay.
func TestRetentionPurgesDeletedSchedules(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("gone", "0 0 1 1 *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		old := f.create(in)
		for range 5 {
			res, err := f.svc.Trigger(f.ctx, "default", "gone", "", nil)
			require.NoError(t, err)
			require.Len(t, f.poll(1, 30), 1)
			_, err = f.svc.FailRun(f.ctx, "default", res.RunID, w1, scheduling.Failure{Message: "no", Type: "io"})
			require.NoError(t, err)
		}
		_, err := f.svc.Delete(f.ctx, "default", "gone", nil)
		require.NoError(t, err)
		f.clock.Advance(72 * time.Hour)
		f.create(cronInput("recent", "0 0 1 1 *"))
		_, err = f.svc.Delete(f.ctx, "default", "recent", nil)
		require.NoError(t, err)

		deleted, err := retention.New(f.db, f.clock.Now).Retain(f.ctx, retention.Policy{PurgeDeletedAfter: 48 * time.Hour, Batch: 2})
		require.NoError(t, err)
		// Each failed run: RunStarted, RunAttemptFailed, RunFailed stored
		// (ScheduleTriggered is served from the run row, which is also its
		// instance); the stream: created, five fires, deleted.
		require.Equal(t, models.DeletedRows{Runs: 5, RunEvents: 15, Schedules: 1, ScheduleEvents: 7}, deleted)
		_, err = f.svc.Get(f.ctx, "default", "gone")
		require.ErrorIs(t, err, scheduling.ErrNotFound)
		require.Zero(t, f.count((*models.ScheduleHealth)(nil), "schedule_ulid = ?", old.ID))
		require.Equal(t, models.StatusDeleted, f.get("recent").Status, "deleted a day ago: kept")
	})
}

// What retention deletes is vacuumed (at most once a minute), so that its
// space is reused even where autovacuum is off or far from its threshold:
// VACUUM records the table's live rows in pg_class, which a table never
// vacuumed or analyzed has as -1.
func TestRetentionVacuumsWhatItDeleted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.Postgres(t))
	in := cronInput("nightly", "0 0 * * *")
	in.OverlapPolicy = scheduling.OverlapAllowAll
	f.create(in)
	for range 2 {
		res, err := f.svc.Trigger(f.ctx, "default", "nightly", "", nil)
		require.NoError(t, err)
		require.Len(t, f.poll(1, 30), 1)
		_, err = f.svc.CompleteRun(f.ctx, "default", res.RunID, w1, nil)
		require.NoError(t, err)
		f.clock.Advance(time.Second)
	}
	reltuples := func() float64 {
		var n float64
		require.NoError(t, f.db.NewRaw("SELECT reltuples FROM pg_class WHERE oid = 'workflow_runs'::regclass").Scan(f.ctx, &n))
		return n
	}
	require.Equal(t, -1.0, reltuples(), "not vacuumed yet")
	f.clock.Advance(2 * time.Hour)
	d, err := retention.New(f.db, f.clock.Now).Retain(f.ctx, retention.Policy{KeepRuns: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, d.Runs, "the older run; the latest stays")
	require.Equal(t, 1.0, reltuples(), "vacuumed: one live run")
}
