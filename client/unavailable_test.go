package client_test

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
)

// The client rides out a database outage on idempotent calls: the server
// answers 503 database_unavailable with Retry-After while its database is
// away (a relay in front of the real PostgreSQL, taken down), the client
// waits at least Retry-After between attempts, and the call succeeds once
// the database is back. A trigger is tried once and reports the 503.
func TestClientRetriesDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	raw := dbtest.PostgresURL(t)
	proxy := dbtest.NewProxy(t, raw)
	db, err := database.Open(ctx, proxy.URL(raw))
	require.NoError(t, err)
	dbtest.LimitPool(db)
	t.Cleanup(func() { _ = db.Close() })
	_, err = migrations.Apply(ctx, db)
	require.NoError(t, err)
	f := newServer(t, db)
	var waits atomic.Int64
	c := f.client(t, "admin", client.WithRetries(5, func(int) time.Duration { waits.Add(1); return 0 }))
	_, err = c.CreateSchedule(ctx, dailySync())
	require.NoError(t, err)

	proxy.Down()
	_, err = c.TriggerSchedule(ctx, "daily-sync", "")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr, "a trigger is not retried")
	require.Equal(t, "database_unavailable", apiErr.Code)
	require.Equal(t, time.Second, apiErr.RetryAfter)
	require.True(t, errors.Is(err, client.ErrUnavailable))
	require.Zero(t, waits.Load())

	// The database comes back while the GET is retrying.
	hits := f.hits.Load()
	done := make(chan error, 1)
	started := time.Now()
	go func() {
		_, err := c.GetSchedule(ctx, "daily-sync")
		done <- err
	}()
	require.Eventually(t, func() bool { return f.hits.Load() >= hits+2 }, 10*time.Second, 5*time.Millisecond,
		"the GET was not retried")
	proxy.Up()
	select {
	case err := <-done:
		require.NoError(t, err, "the GET succeeds once the database is back")
	case <-time.After(15 * time.Second):
		t.Fatal("the GET did not return")
	}
	require.GreaterOrEqual(t, time.Since(started), time.Second, "the retry waited Retry-After, not the test's 0 backoff")
	require.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
}
