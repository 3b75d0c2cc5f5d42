package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/worker"
)

// flakyServer plays the worker protocol badly: its first polls fail with
// 503, the next one hands out a run, and later ones answer "nothing" at
// once instead of long-polling.
type flakyServer struct {
	failures int

	mu        sync.Mutex
	polls     int
	completed map[string]string // run ID → output
	auth      []string
}

func (f *flakyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v2/worker/poll":
		f.polls++
		switch {
		case f.polls <= f.failures:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"code":"unavailable","message":"database is restarting"}}`)
		case f.polls == f.failures+1:
			_, _ = io.WriteString(w, `{"runs":[{"run_id":"run-1","instance_id":"i-1","workflow_type":"echo","input":{"n":7},"attempt":1,"lease_expires_at":"2026-07-16T13:00:30.000000Z","run_deadline_at":null,"execution_deadline_at":null}]}`)
		default:
			_, _ = io.WriteString(w, `{"runs":[]}`)
		}
	case "/api/v2/worker/runs/run-1/complete":
		var body struct {
			Namespace string          `json:"namespace"`
			Output    json.RawMessage `json:"output"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.completed["run-1"] = string(body.Output)
		_, _ = io.WriteString(w, `{}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"not found"}}`)
	}
}

func TestBackoffAfterServerErrorsAndEarlyEmptyPolls(t *testing.T) {
	t.Parallel()
	fake := &flakyServer{failures: 3, completed: map[string]string{}}
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)

	attempts := make(chan int, 64)
	w, err := worker.New(worker.Options{
		BaseURL: ts.URL, Token: "tok", Namespace: "billing", PollWait: 2 * time.Second, LeaseSeconds: 30,
		Logger: slog.New(slog.DiscardHandler),
		Backoff: func(attempt int) time.Duration {
			select {
			case attempts <- attempt:
			default:
			}
			return time.Millisecond
		},
	})
	require.NoError(t, err)
	w.Register("echo", func(_ context.Context, run worker.Run) (any, error) { return run.Input, nil })
	stop := runWorker(t, w)

	var got []int
	for len(got) < 5 {
		select {
		case a := <-attempts:
			got = append(got, a)
		case <-time.After(waitLimit):
			t.Fatalf("backoff attempts so far %v", got)
		}
	}
	stop()
	// Three 503s back off longer and longer; the successful poll resets the
	// count; empty answers that come back at once back off again.
	require.Equal(t, []int{1, 2, 3, 1, 2}, got)

	fake.mu.Lock()
	defer fake.mu.Unlock()
	require.JSONEq(t, `{"n":7}`, fake.completed["run-1"])
	for _, a := range fake.auth {
		require.Equal(t, "Bearer tok", a)
	}
}

func TestNewRejectsOptionsThatCannotWork(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts worker.Options
		want string
	}{
		{"no base URL", worker.Options{}, "must be an absolute http(s) URL"},
		{"relative base URL", worker.Options{BaseURL: "/api"}, "must be an absolute http(s) URL"},
		{"negative concurrency", worker.Options{BaseURL: "http://x", Concurrency: -1}, "concurrency -1"},
		{"lease too long", worker.Options{BaseURL: "http://x", LeaseSeconds: 3601}, "lease of 3601 seconds"},
		{"poll wait too long", worker.Options{BaseURL: "http://x", PollWait: 31 * time.Second}, "poll wait 31s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := worker.New(tc.opts)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestRegisterPanicsOnProgrammingErrors(t *testing.T) {
	t.Parallel()
	w, err := worker.New(worker.Options{BaseURL: "http://127.0.0.1:1"})
	require.NoError(t, err)
	noop := func(context.Context, worker.Run) (any, error) { return nil, nil }
	w.Register("report", noop)
	require.PanicsWithValue(t, `worker: workflow type "report" registered twice`, func() { w.Register("report", noop) })
	require.Panics(t, func() { w.Register("", noop) })
	require.Panics(t, func() { w.Register("cleanup", nil) })
}

func TestRunRefusesToRunTwice(t *testing.T) {
	t.Parallel()
	fake := &flakyServer{completed: map[string]string{}}
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	polled := make(chan struct{}, 1)
	w, err := worker.New(worker.Options{BaseURL: ts.URL, Backoff: func(int) time.Duration {
		select {
		case polled <- struct{}{}:
		default:
		}
		return time.Millisecond
	}})
	require.NoError(t, err)
	w.Register("echo", func(_ context.Context, run worker.Run) (any, error) { return nil, nil })
	runWorker(t, w)
	waitClosed(t, closedOn(polled), "the first Run to poll")
	require.ErrorContains(t, w.Run(t.Context()), "already running")
}

// closedOn returns a channel closed once ch yields a value.
func closedOn(ch <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		<-ch
		close(done)
	}()
	return done
}

// answerLateServer holds its first poll until released, then hands out one
// run; it records the run's report.
type answerLateServer struct {
	polled, release chan struct{}
	reported        chan string // the report's path
	once            sync.Once
}

func (s *answerLateServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v2/worker/poll":
		first := false
		s.once.Do(func() { first = true })
		if !first {
			_, _ = io.WriteString(w, `{"runs":[]}`)
			return
		}
		close(s.polled)
		<-s.release
		_, _ = io.WriteString(w, `{"runs":[{"run_id":"run-1","instance_id":"i-1","workflow_type":"echo","input":{},"attempt":1,"lease_expires_at":"2026-07-16T13:00:30.000000Z","run_deadline_at":null,"execution_deadline_at":null}]}`)
	default:
		select {
		case s.reported <- r.URL.Path:
		default:
		}
		_, _ = io.WriteString(w, `{}`)
	}
}

// A poll in flight when the worker stops still gets its answer: its runs
// are already claimed on the server (a draining server answers such polls
// at once), and aborting it would strand them until their leases lapse.
func TestPollInFlightWhenStoppingKeepsItsRuns(t *testing.T) {
	t.Parallel()
	fake := &answerLateServer{polled: make(chan struct{}), release: make(chan struct{}), reported: make(chan string, 4)}
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	w, err := worker.New(worker.Options{BaseURL: ts.URL, Token: "tok", Namespace: "billing", PollWait: 2 * time.Second,
		LeaseSeconds: 30, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	w.Register("echo", func(_ context.Context, run worker.Run) (any, error) { return run.Input, nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	select {
	case <-fake.polled:
	case <-time.After(waitLimit):
		t.Fatal("the worker did not poll")
	}
	cancel() // the worker stops while the server is still claiming
	close(fake.release)
	select {
	case path := <-fake.reported:
		require.Equal(t, "/api/v2/worker/runs/run-1/complete", path, "the run that arrived after the stop is run and reported")
	case <-time.After(waitLimit):
		t.Fatal("the run answered after the stop was never reported: the poll was aborted")
	}
	require.NoError(t, <-done)
}
