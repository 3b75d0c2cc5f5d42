package scheduling_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// Tenant isolation of the HTTP executor (SPEC §15, #36): a target that
// hangs for 15 minutes, with 500 runs waiting for it, delays neither the
// fires nor the calls of another namespace. The bounds are generous (the
// benchmark records the real figures); what they catch is waiting behind
// the hung requests, which would take 900 s.
func TestBlackholedTargetDoesNotDelayAnotherNamespace(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := t.Context()
		svc := targetService(db, scheduling.SystemClock{}, true)
		hole := blackhole(t)
		var answered atomic.Int64
		rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			answered.Add(1)
		}))
		t.Cleanup(rx.Close)

		noisy := scheduling.CreateInput{Namespace: "noisy", ScheduleID: "hangs", OverlapPolicy: scheduling.OverlapAllowAll,
			Spec:   models.Spec{CronExpressions: []string{"0 0 1 1 *"}, Timezone: "UTC"},
			Action: httpAction(hole, func(tg *models.Target) { tg.TimeoutSeconds = scheduling.MaxTargetTimeout })}
		_, err := svc.Create(ctx, noisy, nil)
		require.NoError(t, err)
		for range 500 {
			res, err := svc.Trigger(ctx, "noisy", "hangs", "", nil)
			require.NoError(t, err)
			require.Equal(t, scheduling.OutcomeTriggered, res.Outcome)
		}
		quiet := scheduling.CreateInput{Namespace: "quiet", ScheduleID: "every-second", OverlapPolicy: scheduling.OverlapAllowAll,
			Spec: models.Spec{Intervals: []models.Interval{{Every: "PT1S"}}, Timezone: "UTC"}, Action: httpAction(rx.URL)}
		_, err = svc.Create(ctx, quiet, nil)
		require.NoError(t, err)

		loop := &scheduling.Loop{Service: svc, Period: 200 * time.Millisecond, Limit: 100}
		loop.Start(ctx)
		t.Cleanup(loop.Stop)

		// Five of the quiet schedule's runs complete, each soon after its
		// occurrence, while the noisy namespace's requests hang.
		var done []models.Run
		require.Eventually(t, func() bool {
			page, err := svc.ListRuns(ctx, scheduling.RunListFilter{Namespace: "quiet", Statuses: []string{models.RunCompleted}, Limit: 100})
			require.NoError(t, err)
			done = page.Runs
			return len(done) >= 5
		}, 60*time.Second, 50*time.Millisecond)
		for _, r := range done {
			lag := r.CreatedAt.Sub(*r.OccurrenceTime)
			took := r.FinishedAt.Sub(*r.OccurrenceTime)
			require.Less(t, lag, 5*time.Second, "run %s fired %v after its occurrence", r.ID, lag)
			require.Less(t, took, 10*time.Second, "run %s completed %v after its occurrence", r.ID, took)
		}
		pool := svc.TargetPool()
		limits := pool.Limits()
		require.Zero(t, pool.Room("noisy", hostOf(hole)), "the hung lane is at its cap")
		require.GreaterOrEqual(t, pool.Free(), limits.Total-limits.PerHost, "the hung target holds no more than its lane's slots")
		page, err := svc.ListRuns(ctx, scheduling.RunListFilter{Namespace: "noisy", Statuses: []string{models.RunRunning}, Limit: 100})
		require.NoError(t, err)
		require.Len(t, page.Runs, limits.PerHost, "a run is claimed only with a slot to run it")
	})
}

func hostOf(url string) string { return url[len("http://"):] }

// Tenant isolation of notifications (#36 item 3): 70 deliveries to a
// receiver that never answers in one namespace; another namespace's
// delivery arrives at once.
func TestDeadReceiverDoesNotDelayAnotherNamespacesNotifications(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		svc := notifyService(db, scheduling.SystemClock{}, scheduling.NotifyConfig{})
		dead := newReceiver(t)
		dead.hold = make(chan struct{})
		t.Cleanup(func() { close(dead.hold) })
		alive := newReceiver(t)
		deadID := createNotifier(t, svc, "noisy", "dead", dead.URL)
		aliveID := createNotifier(t, svc, "quiet", "alive", alive.URL)
		enqueue(t, db, "noisy", deadID, 70)

		stop := runDispatcher(t, svc)
		defer stop()
		require.Eventually(t, func() bool { return len(dead.all()) > 0 }, 10*time.Second, 10*time.Millisecond, "the dead receiver is being posted to")
		began := time.Now()
		enqueue(t, db, "quiet", aliveID, 1)
		require.Eventually(t, func() bool { return len(alive.all()) == 1 }, 5*time.Second, 10*time.Millisecond)
		t.Logf("the healthy namespace's delivery arrived after %v", time.Since(began))
		limits := svc.DispatchPool().Limits()
		require.LessOrEqual(t, len(dead.all()), limits.PerHost, "a dead receiver holds at most its lane's slots")
	})
}

// Two replicas dispatching at once on PostgreSQL never post one delivery
// twice, nor at the same time (#36 item 4): each claim has a slot to post
// at once, so its lease always outlives the post.
func TestTwoDispatchersNeverPostADeliveryTwice(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	services := replicas(t, 2, clock)
	for i, s := range services {
		services[i] = notifyService(s.DB(), scheduling.SystemClock{}, scheduling.NotifyConfig{Timeout: 2 * time.Second})
	}
	r := newReceiver(t)
	slow := make(chan struct{})
	close(slow)
	r.hold = slow // every handler passes at once; inFlight still detects overlaps
	id := createNotifier(t, services[0], "default", "n", r.URL)
	const n = 200
	enqueue(t, services[0].DB(), "default", id, n)
	for _, s := range services {
		stop := runDispatcher(t, s)
		defer stop()
	}
	require.Eventually(t, func() bool { return len(r.all()) >= n }, 60*time.Second, 20*time.Millisecond)
	for _, s := range services {
		require.Eventually(t, func() bool { return s.DispatchPool().Free() == s.DispatchPool().Limits().Total }, 10*time.Second, 10*time.Millisecond)
	}
	seen := map[string]int{}
	for _, p := range r.all() {
		seen[p.header.Get("Tideline-Delivery")]++
	}
	require.Len(t, seen, n)
	for id, c := range seen {
		require.Equal(t, 1, c, "delivery %s posted %d times", id, c)
	}
	require.Empty(t, r.overlap)
}

func createNotifier(t *testing.T, svc *scheduling.Service, namespace, name, url string) string {
	t.Helper()
	res, err := svc.CreateNotifier(t.Context(), namespace, scheduling.NotifierInput{Name: name, URL: &url, Events: []string{"run_failed"}}, nil)
	require.NoError(t, err)
	return res.Notifier.ID
}

// enqueue writes n due outbox rows for a notifier, as a fact's transaction
// does (scheduling/notify.go): the dispatcher is what is under test.
func enqueue(t *testing.T, db *bun.DB, namespace, notifierID string, n int) {
	t.Helper()
	now := time.Now().UTC()
	list := make([]*models.Delivery, n)
	for i := range list {
		id := fmt.Sprintf("%s-%s-%04d", notifierID, now.Format("150405.000000"), i)
		doc, _ := json.Marshal(map[string]any{"version": 1, "id": id, "event": "run_failed", "namespace": namespace, "summary": "test", "details": map[string]any{}})
		list[i] = &models.Delivery{ID: id, Namespace: namespace, NotifierID: notifierID, EventType: "run_failed", Document: doc,
			Status: models.DeliveryPending, NextAttemptAt: &now, CreatedAt: now, UpdatedAt: now}
	}
	require.NoError(t, models.InsertDeliveries(context.Background(), db, list))
}

func runDispatcher(t *testing.T, svc *scheduling.Service) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { svc.RunNotifications(ctx, 100*time.Millisecond, slog.New(slog.DiscardHandler)) })
	return func() { cancel(); wg.Wait() }
}
