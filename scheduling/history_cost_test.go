package scheduling_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

const eventsTable = "workflow_schedule_history_events"

// seedFires appends n fire events (ScheduleTriggered in the form a regular
// fire stores it) to a schedule's stream in one statement, and moves the
// schedule's last_sequence and fires_count as n fires would. It is how the
// cost tests get a long stream without firing it event by event.
func seedFires(t testing.TB, db *bun.DB, scheduleULID string, n int64) {
	t.Helper()
	ctx := context.Background()
	var last int64
	require.NoError(t, db.NewSelect().Table("workflow_schedules").Column("last_sequence").Where("id = ?", scheduleULID).Scan(ctx, &last))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	columns := `INSERT INTO ` + eventsTable + ` (id, workflow_schedule_id, event_type, payload, sequence, recorded_at,
		trigger_number, occurrence_time, trigger_outcome, effective_overlap_policy, workflow_instance_id, workflow_run_id)`
	var err error
	if database.Of(db).TypedArrays() {
		_, err = db.ExecContext(ctx, columns+`
			SELECT 'seed' || ? || lpad(i::text, 12, '0'), ?, 'ScheduleTriggered', '{}', ? + i, ?, i, ?, 'triggered', 'skip', 'i' || i, 'r' || i
			FROM generate_series(1, ?::bigint) AS i`, last, scheduleULID, last, at, at, n)
	} else {
		_, err = db.ExecContext(ctx, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?) `+columns+`
			SELECT 'seed' || ? || printf('%012d', i), ?, 'ScheduleTriggered', '{}', ? + i, ?, i, ?, 'triggered', 'skip', 'i' || i, 'r' || i
			FROM c`, n, last, scheduleULID, last, at, at)
	}
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `UPDATE workflow_schedules SET last_sequence = last_sequence + ?, fires_count = fires_count + ? WHERE id = ?`, n, n, scheduleULID)
	require.NoError(t, err)
	if database.Of(db).TypedArrays() {
		_, err = db.ExecContext(ctx, `ANALYZE `+eventsTable)
		require.NoError(t, err)
	}
}

// statementLog records the statements a service issues against the audit
// stream, to explain them afterwards.
type statementLog struct {
	mu    sync.Mutex
	stmts []string
}

func (l *statementLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (l *statementLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.Contains(e.Query, eventsTable) && !strings.HasPrefix(strings.TrimSpace(e.Query), "EXPLAIN") {
		l.mu.Lock()
		l.stmts = append(l.stmts, e.Query)
		l.mu.Unlock()
	}
}

func (l *statementLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.stmts
	l.stmts = nil
	return out
}

// explain returns the plan of one statement as text.
func explain(t *testing.T, db *bun.DB, stmt string) string {
	t.Helper()
	prefix := "EXPLAIN QUERY PLAN "
	if database.Of(db).TypedArrays() {
		prefix = "EXPLAIN "
	}
	rows, err := db.QueryContext(context.Background(), prefix+stmt)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var plan []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		for _, v := range vals {
			switch v := v.(type) {
			case string:
				plan = append(plan, v)
			case []byte:
				plan = append(plan, string(v))
			}
		}
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}

// Issue 36, finding 1: a type filter must read the type index (SQLite
// walked the whole stream: it cannot prove event_type = X implies the
// index's event_type <> 'ScheduleTriggered'), and no total may count the
// fires (PostgreSQL counted every one for event_type=ScheduleTriggered).
// The plans are explained over a stream of 20,000 fires, enough for
// PostgreSQL's planner to prefer what it would prefer at 2,000,000.
func TestHistoryFilterReadsTheTypeIndexAndCountsNoFires(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		log := &statementLog{}
		hooked := db.WithQueryHook(log)
		clock := schedtest.NewClock(t0)
		svc := schedtest.Service(hooked, clock)
		ctx := context.Background()
		sch, err := svc.Create(ctx, cronInput("long", "* * * * *"), nil)
		require.NoError(t, err)
		_, err = svc.Pause(ctx, "default", "long", scheduling.PauseInput{}, nil)
		require.NoError(t, err)
		seedFires(t, db, sch.ID, 20_000)
		_, err = svc.Resume(ctx, "default", "long", nil)
		require.NoError(t, err)
		_, err = svc.Update(ctx, "default", "long", scheduling.UpdateInput{Note: ptr("after the fires")}, nil)
		require.NoError(t, err)
		// Two real fires (one started, one skipped by the overlap policy)
		// keep the counts honest beside the seeded ones.
		_, err = svc.Trigger(ctx, "default", "long", "", nil)
		require.NoError(t, err)
		_, err = svc.Trigger(ctx, "default", "long", "", nil)
		require.NoError(t, err)
		log.take()

		var want = map[string]int64{}
		rows, err := db.QueryContext(ctx, `SELECT event_type, count(*) FROM `+eventsTable+` WHERE workflow_schedule_id = ? GROUP BY event_type`, sch.ID)
		require.NoError(t, err)
		for rows.Next() {
			var typ string
			var n int64
			require.NoError(t, rows.Scan(&typ, &n))
			want[typ] = n
		}
		require.NoError(t, rows.Close())
		require.Equal(t, int64(20_001), want[scheduling.EventScheduleTriggered])
		require.Equal(t, int64(1), want[scheduling.EventScheduleTriggerSkipped])

		for _, typ := range scheduling.EventTypes {
			for _, order := range []string{scheduling.HistoryOldestFirst, scheduling.HistoryNewestFirst} {
				page, err := svc.History(ctx, "default", "long", scheduling.HistoryQuery{EventType: typ, Order: order, Limit: 1})
				require.NoError(t, err)
				require.Equal(t, want[typ], page.Total, "total of %s", typ)
				require.Equal(t, want[typ] > 0, len(page.Events) == 1, "%s %s", typ, order)
				for _, stmt := range log.take() {
					if typ == scheduling.EventScheduleTriggered {
						// Fires are most of the stream: the page walks the
						// (schedule, sequence) key in order and stops at
						// its limit; nothing counts them.
						require.Contains(t, strings.ToUpper(stmt), "LIMIT", "a statement over the fires without a limit: %s", stmt)
						continue
					}
					plan := explain(t, db, stmt)
					require.Contains(t, plan, "workflow_schedule_history_events_type_idx", "%s %s: %s\nplan:\n%s", typ, order, stmt, plan)
				}
			}
		}
	})
}

// fires_count is the number of ScheduleTriggered events by construction
// (the fire that records one increments it); the totals rest on it, so a
// stream of real fires, skips, manual and backfill triggers is checked
// against a count of the rows.
func TestHistoryTotalsMatchTheStream(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("mix", "* * * * *"))
		for range 3 {
			f.clock.Advance(time.Minute)
			_, err := f.svc.Tick(f.ctx, 100)
			require.NoError(t, err)
		}
		_, err := f.svc.Trigger(f.ctx, "default", "mix", "", nil)
		require.NoError(t, err)
		_, err = f.svc.Pause(f.ctx, "default", "mix", scheduling.PauseInput{}, nil)
		require.NoError(t, err)
		f.clock.Advance(10 * time.Minute)
		_, err = f.svc.Resume(f.ctx, "default", "mix", nil)
		require.NoError(t, err)
		_, err = f.svc.Tick(f.ctx, 100)
		require.NoError(t, err)
		counts := map[string]int64{}
		for _, e := range f.events("mix") {
			counts[e.EventType]++
		}
		require.NotZero(t, counts[scheduling.EventScheduleTriggerSkipped], "the stream has skips")
		require.NotZero(t, counts[scheduling.EventScheduleTriggered], "the stream has fires")
		for _, typ := range scheduling.EventTypes {
			page, err := f.svc.History(f.ctx, "default", "mix", scheduling.HistoryQuery{EventType: typ, Limit: 1})
			require.NoError(t, err)
			require.Equal(t, counts[typ], page.Total, typ)
		}
	})
}
