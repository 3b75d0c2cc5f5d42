package scheduling_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// claimCounter counts the run queue's claim statements (models.ClaimPending).
type claimCounter struct{ n atomic.Int64 }

func (c *claimCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *claimCounter) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.Contains(e.Query, "r.connection = ") && strings.Contains(e.Query, "r.queue = ") {
		c.n.Add(1)
	}
}

// eventually polls cond until it holds or ten seconds pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Issue 36, finding 6: every new run woke every long poll of the process,
// so 1,000 polls of one token cost each fire 1,000 claims. A commit that
// starts n runs of a queue wakes at most n of that queue's pollers, and
// none of another queue's.
func TestNewRunsWakeOnlyAsManyPollers(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		claims := &claimCounter{}
		clock := schedtest.NewClock(t0)
		svc := schedtest.Service(db.WithQueryHook(claims), clock)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		in := cronInput("many", "0 0 1 1 *")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		_, err := svc.Create(ctx, in, nil)
		require.NoError(t, err)

		const pollers, others = 20, 10
		var wg sync.WaitGroup
		got := make(chan []models.Run, pollers+others)
		poll := func(queue string, i int) {
			defer wg.Done()
			runs, err := svc.Poll(ctx, scheduling.PollRequest{Namespace: "default", Queue: queue, WorkerID: fmt.Sprintf("w%d", i), Wait: 30 * time.Second})
			if err == nil && len(runs) > 0 {
				got <- runs
			}
		}
		for i := range pollers {
			wg.Add(1)
			go poll("default", i)
		}
		for i := range others {
			wg.Add(1)
			go poll("elsewhere", i)
		}
		// Each waiting poller holds two timers (its wait, its recheck),
		// made after its first claim.
		clock.WaitTimers(2 * (pollers + others))
		require.Equal(t, pollers+others, svc.WaitingPolls())
		before := claims.n.Load()

		for range 3 {
			res, err := svc.Trigger(ctx, "default", "many", "", nil)
			require.NoError(t, err)
			require.Equal(t, scheduling.OutcomeTriggered, res.Outcome)
		}
		for range 3 {
			select {
			case runs := <-got:
				require.Len(t, runs, 1)
			case <-time.After(10 * time.Second):
				t.Fatal("a woken poller did not get its run")
			}
		}
		eventually(t, "the other pollers to wait again", func() bool { return svc.WaitingPolls() == pollers+others-3 })
		require.Equal(t, int64(3), claims.n.Load()-before, "three runs, three claims (every poller claimed before)")
		cancel()
		wg.Wait()
	})
}
