package scheduling_test

import (
	"errors"
	"net/http"
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

func (f *fixture) notifierHealth(name string) models.NotifierHealth {
	f.t.Helper()
	n, err := f.svc.GetNotifier(f.ctx, "default", name)
	require.NoError(f.t, err)
	h, err := f.svc.NotifierHealth(f.ctx, []models.Notifier{*n})
	require.NoError(f.t, err)
	return h[n.ID]
}

// A notifier's health follows its attempts (failing since the first
// failure after a success, the latest error, pending and dead counts);
// dead deliveries go back one or all, audited, and are delivered once the
// receiver answers again.
func TestNotifierHealthAndRedelivery(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		r := newReceiver(t)
		f.notifier("ops", r.URL, []string{"run_failed"}, nil)
		require.Equal(t, models.NotifierIdle, f.notifierHealth("ops").State())

		r.setStatus(http.StatusServiceUnavailable)
		runID := f.retrying("job", nil)
		f.failOnce(runID, "io")
		require.Equal(t, 1, f.dispatch())
		failedAt := f.clock.Now()
		h := f.notifierHealth("ops")
		require.Equal(t, models.NotifierFailing, h.State())
		require.True(t, h.FailingSince.Equal(failedAt), "failing since %v", h.FailingSince)
		require.Equal(t, "receiver answered 503", *h.LastError)
		require.Nil(t, h.LastSuccessAt)
		require.EqualValues(t, 1, h.Pending)
		require.Zero(t, h.Dead)

		// Three failed tests are dead at once; failing_since stays the first.
		var dead []string
		for range 3 {
			f.clock.Advance(time.Second)
			d, err := f.svc.TestNotifier(f.ctx, "default", "ops", "alice")
			require.NoError(t, err)
			require.Equal(t, models.DeliveryDead, d.Status)
			dead = append(dead, d.ID)
		}
		h = f.notifierHealth("ops")
		require.True(t, h.FailingSince.Equal(failedAt), "a later failure does not move failing_since")
		require.True(t, h.LastFailureAt.Equal(f.clock.Now()))
		require.EqualValues(t, 1, h.Pending)
		require.EqualValues(t, 3, h.Dead)

		// One, then all: the one that is pending already is refused.
		pendingID := ""
		for _, d := range f.deliveries("ops") {
			if d.Status == models.DeliveryPending {
				pendingID = d.ID
			}
		}
		_, err := f.svc.Redeliver(f.ctx, "default", "ops", pendingID, &scheduling.CommandContext{Actor: "alice"})
		var conflict *scheduling.ConflictError
		require.True(t, errors.As(err, &conflict), "%v", err)
		require.Equal(t, scheduling.CodeDeliveryNotDead, conflict.Code)
		_, err = f.svc.Redeliver(f.ctx, "default", "ops", "01ZZZZZZZZZZZZZZZZZZZZZZZZ", &scheduling.CommandContext{Actor: "alice"})
		require.ErrorIs(t, err, scheduling.ErrNotFound)

		one, err := f.svc.Redeliver(f.ctx, "default", "ops", dead[0], &scheduling.CommandContext{Actor: "alice", Reason: "receiver fixed"})
		require.NoError(t, err)
		require.Equal(t, models.DeliveryPending, one.Status)
		require.Zero(t, one.Attempts, "attempts count again from zero")
		require.True(t, one.NextAttemptAt.Equal(f.clock.Now()), "due now")
		n, more, err := f.svc.RedeliverDead(f.ctx, "default", "ops", &scheduling.CommandContext{Actor: "bob"})
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.False(t, more)
		n, _, err = f.svc.RedeliverDead(f.ctx, "default", "ops", &scheduling.CommandContext{Actor: "bob"})
		require.NoError(t, err)
		require.Zero(t, n, "nothing dead is not an error")
		h = f.notifierHealth("ops")
		require.EqualValues(t, 4, h.Pending)
		require.Zero(t, h.Dead)

		page, err := f.svc.NotifierHistory(f.ctx, "default", "ops", "", 50)
		require.NoError(t, err)
		var redelivered []models.ObjectAuditEvent
		for _, e := range page.Events {
			if e.EventType == scheduling.EventNotifierRedelivered {
				redelivered = append(redelivered, e)
			}
		}
		require.Len(t, redelivered, 2, "one event per redelivery that sent something back")
		require.Equal(t, "alice", redelivered[0].Actor)
		require.JSONEq(t, `{"deliveries":1,"delivery_id":"`+dead[0]+`","reason":"receiver fixed"}`, string(redelivered[0].Payload))
		require.Equal(t, "bob", redelivered[1].Actor)
		require.JSONEq(t, `{"deliveries":2}`, string(redelivered[1].Payload))

		// The receiver is back: everything is delivered and the notifier is ok.
		r.setStatus(http.StatusOK)
		f.clock.Advance(time.Hour)
		require.Equal(t, 4, f.dispatch())
		h = f.notifierHealth("ops")
		require.Equal(t, models.NotifierOK, h.State())
		require.Nil(t, h.FailingSince)
		require.True(t, h.LastSuccessAt.Equal(f.clock.Now()))
		require.Zero(t, h.Pending)
		require.Zero(t, h.Dead)
	})
}

// Attempts of one notifier finish out of order across senders: an older
// success does not clear a newer failure, and an older failure does not
// mark a notifier failing after a newer success.
func TestNotifierHealthMovesOnlyForward(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := t.Context()
		at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
		read := func() models.NotifierHealth {
			h, err := models.NotifierHealthOf(ctx, db, []string{"n1"})
			require.NoError(t, err)
			return h["n1"]
		}
		require.NoError(t, models.NoteDeliveryFailure(ctx, db, "n1", at(20), "late"))
		require.NoError(t, models.NoteDeliverySuccess(ctx, db, "n1", at(10)))
		h := read()
		require.Equal(t, models.NotifierFailing, h.State(), "the success is older than the failure")
		require.True(t, h.FailingSince.Equal(at(20)))
		require.True(t, h.LastSuccessAt.Equal(at(10)))

		require.NoError(t, models.NoteDeliveryFailure(ctx, db, "n1", at(15), "older"))
		h = read()
		require.True(t, h.FailingSince.Equal(at(15)), "a failure that finished late, still after the last success, is the first failure: %v", h.FailingSince)
		require.Equal(t, "late", *h.LastError, "the newest failure's error is kept")

		require.NoError(t, models.NoteDeliverySuccess(ctx, db, "n1", at(30)))
		require.NoError(t, models.NoteDeliveryFailure(ctx, db, "n1", at(25), "stale"))
		h = read()
		require.Equal(t, models.NotifierOK, h.State(), "a failure older than the latest success leaves it ok")
		require.True(t, h.LastSuccessAt.Equal(at(30)))

		require.NoError(t, models.NoteDeliveryFailure(ctx, db, "n1", at(40), "down"))
		require.NoError(t, models.NoteDeliveryFailure(ctx, db, "n1", at(50), "still down"))
		h = read()
		require.True(t, h.FailingSince.Equal(at(40)))
		require.Equal(t, "still down", *h.LastError)
	})
}

// Concurrent redeliver-all requests on two PostgreSQL replicas send every
// dead delivery back exactly once between them.
func TestRedeliverDeadConcurrentlyOnPostgres(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	services := replicas(t, 2, clock)
	for i, s := range services {
		services[i] = notifyService(s.DB(), clock, scheduling.NotifyConfig{})
	}
	ctx := t.Context()
	r := newReceiver(t)
	r.setStatus(http.StatusBadGateway)
	url := r.URL
	_, err := services[0].CreateNotifier(ctx, "default", scheduling.NotifierInput{Name: "n", URL: &url, Events: []string{"run_failed"}}, nil)
	require.NoError(t, err)
	const dead = 30
	for range dead {
		d, err := services[0].TestNotifier(ctx, "default", "n", "alice")
		require.NoError(t, err)
		require.Equal(t, models.DeliveryDead, d.Status)
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		s := services[i%2]
		wg.Go(func() {
			n, _, err := s.RedeliverDead(ctx, "default", "n", &scheduling.CommandContext{Actor: "ops"})
			if err != nil {
				t.Error(err)
			}
			total.Add(int64(n))
		})
	}
	wg.Wait()
	require.EqualValues(t, dead, total.Load(), "every dead delivery went back once")
	n, err := services[0].GetNotifier(ctx, "default", "n")
	require.NoError(t, err)
	h, err := services[0].NotifierHealth(ctx, []models.Notifier{*n})
	require.NoError(t, err)
	require.EqualValues(t, dead, h[n.ID].Pending)
	require.Zero(t, h[n.ID].Dead)
}
