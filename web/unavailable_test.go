package web_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// TestDatabaseUnavailableIs503 puts a relay between the server and
// PostgreSQL and takes it down: every surface that needs the database —
// reads, writes, the worker protocol, a long poll already waiting, a
// console page — answers 503 database_unavailable with Retry-After (never
// a 500 internal_error), and the same requests succeed once it is back,
// with no restart.
func TestDatabaseUnavailableIs503(t *testing.T) {
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

	var logs syncBuffer
	svc := scheduling.New(scheduling.Config{DB: db, Clock: scheduling.SystemClock{}, Rand: schedtest.Rand{},
		Logger: slog.New(slog.DiscardHandler)})
	h := web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Version: "test"})
	f := &apiFixture{t: t, db: db, h: h}
	f.must(201, "POST", v2+"/schedules", `{"schedule_id":"a","cron":"0 * * * *","action":{"workflow_type":"w"}}`)

	// A long poll waits with no runs pending; the database goes away
	// under it.
	polled := make(chan response, 1)
	go func() {
		polled <- f.do("POST", "/api/v2/worker/poll", `{"wait_seconds":20,"worker_id":"w1"}`)
	}()
	proxy.Down() // the poll is waiting, or about to claim: either way it meets the outage

	unavailable := func(res response, what string) {
		t.Helper()
		require.Equal(t, http.StatusServiceUnavailable, res.Status, "%s: %s", what, res.Raw)
		require.Equal(t, "1", res.Header.Get("Retry-After"), what)
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", v2 + "/schedules", ""},
		{"GET", v2 + "/schedules/a", ""},
		{"POST", v2 + "/schedules", `{"schedule_id":"b","cron":"0 * * * *","action":{"workflow_type":"w"}}`},
		{"POST", v2 + "/schedules/a/pause", `{}`},
		{"POST", "/api/v2/worker/poll", `{"worker_id":"w1"}`},
		{"POST", "/api/v2/worker/runs/nope/heartbeat", `{"worker_id":"w1"}`},
	} {
		res := f.do(r.method, r.path, r.body)
		unavailable(res, r.method+" "+r.path)
		code, _ := errorOf(t, res.Body)
		require.Equal(t, "database_unavailable", code, r.path)
	}
	select {
	case res := <-polled:
		unavailable(res, "the long poll in flight")
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll was not answered within 10s of the database going away")
	}
	page := f.do("GET", "/waterline/schedules", "")
	require.Equal(t, http.StatusServiceUnavailable, page.Status, page.Raw)
	require.Equal(t, "1", page.Header.Get("Retry-After"))
	require.Contains(t, page.Header.Get("Content-Type"), "text/html")

	require.Contains(t, logs.String(), "database unavailable")
	require.NotContains(t, logs.String(), "level=ERROR", "an outage logs WARN, not ERROR")

	proxy.Up()
	f.must(200, "GET", v2+"/schedules/a", "")
	f.must(201, "POST", v2+"/schedules", `{"schedule_id":"b","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
}

// A request whose connection is cut mid-transaction is a 503 too, and the
// next request gets a fresh connection by itself.
func TestConnectionCutMidRequestIs503(t *testing.T) {
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
	f := newAPI(t, db, "")
	f.must(201, "POST", v2+"/schedules", `{"schedule_id":"a","cron":"0 * * * *","action":{"workflow_type":"w"}}`)

	// Cut the relay while requests run, until one of them met the cut
	// inside its transaction (most meet it between statements and are
	// served on a fresh connection: database/sql retries a connection it
	// finds dead before using it).
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int]int{}
	)
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res := f.do("POST", v2+"/schedules/a/trigger", "")
				mu.Lock()
				seen[res.Status]++
				mu.Unlock()
				if res.Status != 200 && res.Status != 503 {
					t.Errorf("trigger during cuts: %d %s", res.Status, res.Raw)
				}
				if res.Status == 503 && !strings.Contains(res.Raw, `"database_unavailable"`) {
					t.Errorf("trigger during cuts: 503 %s", res.Raw)
				}
			}
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		proxy.Cut()
		mu.Lock()
		n := seen[503]
		mu.Unlock()
		if n >= 3 {
			break
		}
		pause(ctx, 5*time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.GreaterOrEqual(t, seen[503], 3, "cuts met inside a request: %v", seen)
	f.must(200, "GET", v2+"/schedules/a", "")
}

// pause yields to the requests for d (the cadence of the cuts, not a
// wait for a condition).
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
