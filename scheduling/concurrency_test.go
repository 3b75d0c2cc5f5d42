package scheduling_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// Concurrent writers on one schedule get gap-free, duplicate-free sequences:
// every change locks the schedule row and takes the next number from it.
func TestAuditSequencesAreGapFreeUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	db := dbtest.Postgres(t)
	f := newFixture(t, db)
	in := cronInput("busy", "0 * * * *")
	in.OverlapPolicy = scheduling.OverlapAllowAll
	f.create(in)

	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var err error
				if i%2 == 0 {
					_, err = f.svc.Update(f.ctx, "default", "busy", scheduling.UpdateInput{Note: ptr(fmt.Sprintf("w%d-%d", w, i))}, nil)
				} else {
					_, err = f.svc.Backfill(f.ctx, "default", "busy", scheduling.BackfillInput{
						From: t0.Add(time.Duration(w*each+i) * time.Hour), To: t0.Add(time.Duration(w*each+i+1) * time.Hour)})
				}
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	events := f.events("busy")
	require.Len(t, events, 1+writers*each)
	for i, e := range events {
		require.EqualValues(t, i+1, e.Sequence)
	}
	require.EqualValues(t, len(events), f.get("busy").LastSequence)
}

// Several scheduler replicas on one PostgreSQL fire every due occurrence
// exactly once: claims use FOR UPDATE SKIP LOCKED, and the unique instance ID
// would turn a second start into an already_started skip.
func TestReplicasFireEachOccurrenceExactlyOnce(t *testing.T) {
	t.Parallel()
	url := dbtest.PostgresURL(t)
	clock := schedtest.NewClock(t0)
	const replicas, schedules, minutes = 4, 300, 3

	var services []*scheduling.Service
	for range replicas {
		db, err := database.Open(t.Context(), url)
		require.NoError(t, err)
		dbtest.LimitPool(db)
		t.Cleanup(func() { _ = db.Close() })
		services = append(services, schedtest.Service(db, clock))
	}
	_, err := migrationsApply(t, url)
	require.NoError(t, err)
	for i := range schedules {
		in := cronInput(fmt.Sprintf("s-%03d", i), "* * * * *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		_, err := services[i%replicas].Create(t.Context(), in, nil)
		require.NoError(t, err)
	}

	for minute := 1; minute <= minutes; minute++ {
		clock.Set(t0.Add(time.Duration(minute) * time.Minute))
		var wg sync.WaitGroup
		fired := make([][]scheduling.TickRow, replicas)
		errs := make([]error, replicas)
		for r := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				loop := &scheduling.Loop{Service: services[r], Limit: 25}
				res, err := loop.RunOnce(t.Context())
				fired[r], errs[r] = res.Rows, err
			}()
		}
		wg.Wait()
		seen := map[string]int{}
		for r := range replicas {
			require.NoError(t, errs[r])
			for _, row := range fired[r] {
				require.Equal(t, "triggered", row.Outcome, row.Reason)
				seen[row.InstanceID]++
			}
		}
		require.Len(t, seen, schedules, "minute %d: every schedule fired", minute)
		for id, n := range seen {
			require.Equal(t, 1, n, "minute %d: %s fired once", minute, id)
		}
	}

	db := services[0].DB()
	var count int64
	count, err = db.NewSelect().Model((*models.Run)(nil)).Count(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, schedules*minutes, count)
	count, err = db.NewSelect().Model((*models.Schedule)(nil)).Where("fires_count = ?", minutes).Count(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, schedules, count)
}

// replicas opens n services on one fresh PostgreSQL schema sharing clock.
func replicas(t *testing.T, n int, clock *schedtest.Clock) []*scheduling.Service {
	t.Helper()
	url := dbtest.PostgresURL(t)
	var services []*scheduling.Service
	for range n {
		db, err := database.Open(t.Context(), url)
		require.NoError(t, err)
		dbtest.LimitPool(db)
		t.Cleanup(func() { _ = db.Close() })
		services = append(services, schedtest.Service(db, clock))
	}
	_, err := migrationsApply(t, url)
	require.NoError(t, err)
	return services
}

// Scheduler replicas ticking and operators triggering one due schedule at
// the same moment serialise on its row: a skip schedule starts exactly one
// run, whoever wins, and every other attempt is an overlap skip.
func TestTicksAndTriggersRaceOnOneSchedule(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	services := replicas(t, 4, clock)
	ctx := t.Context()
	_, err := services[0].Create(ctx, cronInput("race", "0 * * * *"), nil)
	require.NoError(t, err)
	clock.Set(t0.Add(time.Hour))

	var mu sync.Mutex
	outcomes := map[string]int{}
	note := func(outcome, reason string) {
		mu.Lock()
		defer mu.Unlock()
		outcomes[outcome+" "+reason]++
	}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := services[i%len(services)]
			if i%4 == 0 {
				rows, err := svc.Tick(ctx, 10)
				for _, r := range rows {
					note(r.Outcome, r.Reason)
				}
				errs <- err
				return
			}
			res, err := svc.Trigger(ctx, "default", "race", "", nil)
			note(res.Outcome, res.Reason)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	runs, err := services[0].DB().NewSelect().Model((*models.Run)(nil)).Where("schedule_id = ?", "race").Count(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, runs, "exactly one run started; outcomes %v", outcomes)
	require.Equal(t, 1, outcomes["triggered "], "outcomes %v", outcomes)

	f := &fixture{t: t, db: services[0].DB(), clock: clock, svc: services[0], ctx: ctx}
	count := map[string]int{}
	for _, e := range f.events("race") {
		count[e.EventType]++
	}
	require.Equal(t, 1, count[scheduling.EventScheduleTriggered], "audit: %v", count)
	require.Equal(t, outcomes["skipped overlap_policy_skip"], count[scheduling.EventScheduleTriggerSkipped], "audit: %v", count)
}

// Replicas draining a buffer while operators trigger the schedule start
// exactly one run from it: the drain's "no active run" check is made after
// the lock, not from the claim's snapshot.
func TestDrainsAndTriggersRaceOnOneBuffer(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	services := replicas(t, 4, clock)
	ctx := t.Context()
	in := cronInput("buffered", "0 0 1 1 *")
	in.OverlapPolicy = scheduling.OverlapBufferOne
	_, err := services[0].Create(ctx, in, nil)
	require.NoError(t, err)
	first, err := services[0].Trigger(ctx, "default", "buffered", "", nil)
	require.NoError(t, err)
	require.Equal(t, scheduling.OutcomeTriggered, first.Outcome)
	second, err := services[0].Trigger(ctx, "default", "buffered", "", nil)
	require.NoError(t, err)
	require.Equal(t, scheduling.OutcomeBuffered, second.Outcome)
	_, err = services[0].DB().NewUpdate().Model((*models.Run)(nil)).Set("status = ?", models.RunCompleted).Where("id = ?", first.RunID).Exec(ctx)
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := services[i%len(services)]
			if i%2 == 0 {
				_, err := svc.Tick(ctx, 10)
				errs <- err
				return
			}
			_, err := svc.Trigger(ctx, "default", "buffered", "", nil)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// A tick that met a locked row skipped it; one more drains what is left.
	_, err = services[0].Tick(ctx, 10)
	require.NoError(t, err)
	var statuses []string
	require.NoError(t, services[0].DB().NewSelect().Model((*models.Run)(nil)).Column("status").
		Where("schedule_id = ?", "buffered").Scan(ctx, &statuses))
	active := 0
	for _, s := range statuses {
		if s == models.RunPending || s == models.RunRunning {
			active++
		}
	}
	require.Equal(t, 1, active, "one active run after the race; runs %v", statuses)
	sch, err := services[0].Get(ctx, "default", "buffered")
	require.NoError(t, err)
	require.LessOrEqual(t, len(sch.BufferedActions), 1, "buffer_one holds one fire at most")
}
