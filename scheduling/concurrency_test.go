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
	count, err = db.NewSelect().Model((*models.Instance)(nil)).Count(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, schedules*minutes, count)
	count, err = db.NewSelect().Model((*models.Schedule)(nil)).Where("fires_count = ?", minutes).Count(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, schedules, count)
}
