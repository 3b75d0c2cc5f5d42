package worker_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/worker"
)

// scriptedServer hands out one run, then answers heartbeats and reports as
// its fields say; it records the paths it was asked.
type scriptedServer struct {
	heartbeat func(n int) (status int, retryAfter string)
	report    func(n int) (status int, retryAfter string)

	mu         sync.Mutex
	polls      int
	heartbeats int
	reports    int
	reported   []time.Time
}

func (f *scriptedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	answer := func(status int, retryAfter, body string) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	unavailable := `{"error":{"code":"database_unavailable","message":"the database is unavailable"}}`
	switch r.URL.Path {
	case "/api/v2/worker/poll":
		f.polls++
		if f.polls == 1 {
			answer(200, "", `{"runs":[{"run_id":"run-1","instance_id":"i-1","schedule_id":"s","namespace":"default","workflow_type":"job","workflow_class":"","trigger":"manual","occurrence_time":null,"input":null,"attempt":1,"lease_expires_at":null,"run_deadline_at":null,"execution_deadline_at":null}]}`)
			return
		}
		// Nothing more: hold the poll like a server would.
		f.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second):
		}
		f.mu.Lock()
		answer(200, "", `{"runs":[]}`)
	case "/api/v2/worker/runs/run-1/heartbeat":
		f.heartbeats++
		status, ra := f.heartbeat(f.heartbeats)
		if status == 200 {
			answer(200, "", `{"cancel_requested":false,"lease_expires_at":null}`)
			return
		}
		answer(status, ra, unavailable)
	case "/api/v2/worker/runs/run-1/complete", "/api/v2/worker/runs/run-1/fail":
		f.reports++
		f.reported = append(f.reported, time.Now())
		status, ra := f.report(f.reports)
		if status == 200 {
			answer(200, "", `{}`)
			return
		}
		answer(status, ra, unavailable)
	default:
		answer(404, "", `{"error":{"code":"not_found","message":"not found"}}`)
	}
}

func (f *scriptedServer) counts() (heartbeats, reports int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.heartbeats, f.reports
}

func scriptedWorker(t *testing.T, url string, opts func(*worker.Options)) *worker.Worker {
	t.Helper()
	o := worker.Options{BaseURL: url, WorkerID: "w1", LeaseSeconds: 1, PollWait: time.Second,
		Logger: slog.New(slog.DiscardHandler), Backoff: func(int) time.Duration { return 10 * time.Millisecond }}
	if opts != nil {
		opts(&o)
	}
	w, err := worker.New(o)
	require.NoError(t, err)
	return w
}

// A worker cut off from the server must stop its handler once the lease it
// holds has surely expired: the server then hands the next attempt to
// someone else, and the two must not run at once.
func TestHandlerIsCancelledWhenNoHeartbeatGetsThroughBeforeTheLeaseExpires(t *testing.T) {
	t.Parallel()
	fake := &scriptedServer{
		heartbeat: func(int) (int, string) { return http.StatusServiceUnavailable, "" },
		report:    func(int) (int, string) { return 200, "" },
	}
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	w := scriptedWorker(t, ts.URL, nil)
	causes := make(chan error, 1)
	w.Register("job", func(ctx context.Context, _ worker.Run) (any, error) {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	runWorker(t, w)
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, worker.ErrRunGone)
	case <-time.After(waitLimit):
		t.Fatal("the handler was never cancelled although no heartbeat got through")
	}
	heartbeats, reports := fake.counts()
	require.GreaterOrEqual(t, heartbeats, 2, "it kept trying while the lease lasted")
	require.Zero(t, reports, "a lost run is not reported: the server has the final word")
}

// A result is retried through a database outage (503 with Retry-After),
// not dropped after a few quick attempts.
func TestReportsAreRetriedThroughAnOutage(t *testing.T) {
	t.Parallel()
	fake := &scriptedServer{
		heartbeat: func(int) (int, string) { return 200, "" },
		report: func(n int) (int, string) {
			if n <= 6 {
				return http.StatusServiceUnavailable, "1"
			}
			return 200, ""
		},
	}
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	w := scriptedWorker(t, ts.URL, nil)
	w.Register("job", func(context.Context, worker.Run) (any, error) { return map[string]int{"n": 1}, nil })
	runWorker(t, w)
	deadline := time.Now().Add(waitLimit)
	for {
		if _, reports := fake.counts(); reports == 7 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the seventh report never came")
		time.Sleep(20 * time.Millisecond)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	for i := 1; i < len(fake.reported); i++ {
		require.GreaterOrEqual(t, fake.reported[i].Sub(fake.reported[i-1]), 900*time.Millisecond,
			"report %d came before the Retry-After of 1 s", i+1)
	}
}

// With a stop grace, a worker asked to stop polls no more but lets the
// running handler finish and reports its result.
func TestStopGraceLetsRunningHandlersFinish(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.SQLite(t))
	opts := s.options()
	opts.StopGrace = waitLimit
	w, err := worker.New(opts)
	require.NoError(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	w.Register("nightly", func(ctx context.Context, _ worker.Run) (any, error) {
		close(started)
		select {
		case <-release:
			return map[string]string{"done": "yes"}, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	runID := s.start("nightly", nil)
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() { returned <- w.Run(ctx) }()
	waitClosed(t, started, "the handler to start")
	cancel()
	select {
	case err := <-returned:
		t.Fatalf("Run returned (%v) while its handler was still within the grace", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-returned)
	run, err := s.svc.GetRun(t.Context(), "default", runID)
	require.NoError(t, err)
	require.Equal(t, models.RunCompleted, run.Status)
	require.JSONEq(t, `{"done":"yes"}`, string(run.Output))
}

// Once the grace is over the handler's context ends with ErrWorkerStopped.
func TestStopGraceEndsWithErrWorkerStopped(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.SQLite(t))
	opts := s.options()
	opts.StopGrace = 50 * time.Millisecond
	w, err := worker.New(opts)
	require.NoError(t, err)
	started, causes := make(chan struct{}), make(chan error, 1)
	w.Register("nightly", func(ctx context.Context, _ worker.Run) (any, error) {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, errors.New("interrupted")
	})
	runID := s.start("nightly", nil)
	stop := runWorker(t, w)
	waitClosed(t, started, "the handler to start")
	stop()
	require.ErrorIs(t, <-causes, worker.ErrWorkerStopped)
	run, err := s.svc.GetRun(t.Context(), "default", runID)
	require.NoError(t, err)
	require.Equal(t, "worker_stopped", *run.FailureType)
}
