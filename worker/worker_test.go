package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/tidelinehq/tideline/web"
	"github.com/tidelinehq/tideline/worker"
)

const (
	testToken    = "s3cret-worker-token"
	testWorkerID = "test-worker"
	waitLimit    = 20 * time.Second
)

// server is the real router on a fresh database, driven by a fake clock
// that never moves, so leases and deadlines never expire under a test.
type server struct {
	t       *testing.T
	svc     *scheduling.Service
	url     string
	nextID  atomic.Int64
	authMu  sync.Mutex
	authSet map[string]bool // every Authorization header the server saw
}

func newServer(t *testing.T, db *bun.DB) *server {
	t.Helper()
	clock := schedtest.NewClock(time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC))
	svc := schedtest.Service(db, clock)
	e := web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.DiscardHandler), Version: "test", Clock: clock})
	s := &server{t: t, svc: svc, authSet: map[string]bool{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.authMu.Lock()
		s.authSet[r.Header.Get("Authorization")] = true
		s.authMu.Unlock()
		e.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s
}

func (s *server) authorizations() map[string]bool {
	s.authMu.Lock()
	defer s.authMu.Unlock()
	out := map[string]bool{}
	for k, v := range s.authSet {
		out[k] = v
	}
	return out
}

// start creates a schedule for workflowType and triggers it once; it
// returns the pending run's ID.
func (s *server) start(workflowType string, input any) string {
	s.t.Helper()
	ctx := s.t.Context()
	id := fmt.Sprintf("sch-%d", s.nextID.Add(1))
	raw, err := json.Marshal(input)
	require.NoError(s.t, err)
	_, err = s.svc.Create(ctx, scheduling.CreateInput{
		Namespace: "default", ScheduleID: id,
		Spec:          models.Spec{CronExpressions: []string{"0 0 1 1 *"}, Timezone: "UTC"},
		Action:        models.Action{WorkflowType: workflowType, Input: raw},
		OverlapPolicy: scheduling.OverlapAllowAll,
	}, nil)
	require.NoError(s.t, err)
	res, err := s.svc.Trigger(ctx, "default", id, "", nil)
	require.NoError(s.t, err)
	require.Equal(s.t, scheduling.OutcomeTriggered, res.Outcome)
	require.NotEmpty(s.t, res.RunID)
	return res.RunID
}

// waitRun polls the service until the run satisfies done.
func (s *server) waitRun(runID string, what string, done func(*models.Run) bool) *models.Run {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), waitLimit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		run, err := s.svc.GetRun(ctx, "default", runID)
		require.NoError(s.t, err)
		if done(run) {
			return run
		}
		select {
		case <-ctx.Done():
			s.t.Fatalf("run %s never became %s; last status %s", runID, what, run.Status)
		case <-tick.C:
		}
	}
}

func (s *server) waitFinished(runID string) *models.Run {
	s.t.Helper()
	return s.waitRun(runID, "finished", func(r *models.Run) bool { return !r.Active() })
}

func (s *server) options() worker.Options {
	return worker.Options{
		BaseURL: s.url, Token: testToken, Namespace: "default", WorkerID: testWorkerID,
		Concurrency: 4, LeaseSeconds: 1, PollWait: time.Second,
		Logger:  slog.New(slog.DiscardHandler),
		Backoff: func(int) time.Duration { return time.Millisecond },
	}
}

// runWorker runs w until the test ends (or stop is called) and checks that
// Run returned nil.
func runWorker(t *testing.T, w *worker.Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done, "Run returns nil when its context ends")
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitClosed fails the test when ch is not closed in time.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
}

type quotaError struct{}

func (quotaError) Error() string       { return "monthly quota of 1000 reports used up" }
func (quotaError) FailureType() string { return "quota_exceeded" }

func TestWorkerReportsHandlerResults(t *testing.T) {
	t.Parallel()
	type input struct {
		Region string `json:"region"`
	}
	cases := []struct {
		name        string
		handler     worker.Handler // nil: the type is not registered
		wantStatus  string
		wantOutput  string // JSON; empty: no output
		wantMessage string // prefix of the failure message
		wantType    string
	}{
		{
			name: "output is stored",
			handler: func(_ context.Context, run worker.Run) (any, error) {
				var in input
				if err := json.Unmarshal(run.Input, &in); err != nil {
					return nil, err
				}
				return map[string]any{"region": in.Region, "attempt": run.Attempt, "type": run.WorkflowType, "lease": run.LeaseExpiresAt != nil}, nil
			},
			wantStatus: models.RunCompleted,
			wantOutput: `{"region":"eu","attempt":1,"type":"output is stored","lease":true}`,
		},
		{
			name:       "no output",
			handler:    func(context.Context, worker.Run) (any, error) { return nil, nil },
			wantStatus: models.RunCompleted,
		},
		{
			name: "typed failure",
			handler: func(context.Context, worker.Run) (any, error) {
				return nil, worker.WithFailureType(errors.New("billing API timed out"), "upstream_timeout")
			},
			wantStatus: models.RunFailed, wantMessage: "billing API timed out", wantType: "upstream_timeout",
		},
		{
			name: "error implementing FailureType",
			handler: func(context.Context, worker.Run) (any, error) {
				return nil, fmt.Errorf("render report: %w", quotaError{})
			},
			wantStatus: models.RunFailed, wantMessage: "render report: monthly quota of 1000 reports used up", wantType: "quota_exceeded",
		},
		{
			name:       "plain error",
			handler:    func(context.Context, worker.Run) (any, error) { return nil, errors.New("disk full") },
			wantStatus: models.RunFailed, wantMessage: "disk full", wantType: "error",
		},
		{
			name:       "panic",
			handler:    func(context.Context, worker.Run) (any, error) { panic("boom") },
			wantStatus: models.RunFailed, wantMessage: "handler panicked: boom", wantType: "panic",
		},
		{
			name:       "output that is not JSON",
			handler:    func(context.Context, worker.Run) (any, error) { return func() {}, nil },
			wantStatus: models.RunFailed, wantMessage: "encode the handler's output as JSON", wantType: "invalid_output",
		},
		{
			name:       "unknown workflow type",
			wantStatus: models.RunFailed, wantMessage: `no handler is registered for workflow type "unknown workflow type"`, wantType: "unknown_workflow_type",
		},
	}
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		s := newServer(t, db)
		w, err := worker.New(s.options())
		require.NoError(t, err)
		runIDs := map[string]string{}
		for _, tc := range cases {
			if tc.handler != nil {
				w.Register(tc.name, tc.handler)
			}
			runIDs[tc.name] = s.start(tc.name, input{Region: "eu"})
		}
		runWorker(t, w)

		for _, tc := range cases {
			run := s.waitFinished(runIDs[tc.name])
			require.Equal(t, tc.wantStatus, run.Status, tc.name)
			require.Equal(t, testWorkerID, *run.WorkerID, tc.name)
			if tc.wantOutput == "" {
				// The worker sends no output; the model stores a nil
				// json.RawMessage as JSON null rather than SQL NULL.
				require.Contains(t, []string{"", "null"}, string(run.Output), tc.name)
			} else {
				require.JSONEq(t, tc.wantOutput, string(run.Output), tc.name)
			}
			if tc.wantType == "" {
				require.Nil(t, run.FailureType, tc.name)
				continue
			}
			require.NotNil(t, run.FailureType, tc.name)
			require.Equal(t, tc.wantType, *run.FailureType, tc.name)
			require.Contains(t, *run.FailureMessage, tc.wantMessage, tc.name)
		}
		require.Equal(t, map[string]bool{"Bearer " + testToken: true}, s.authorizations(), "every request carries the token")
	})
}

// blockingHandler closes started once running, then waits for its context
// and hands the context's error to ended.
func blockingHandler(started chan<- struct{}, ended chan<- error) worker.Handler {
	return func(ctx context.Context, _ worker.Run) (any, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, fmt.Errorf("stopped early: %w", ctx.Err())
	}
}

func eventTypes(t *testing.T, svc *scheduling.Service, runID string) []string {
	t.Helper()
	d, err := svc.DescribeRun(t.Context(), "default", runID)
	require.NoError(t, err)
	var out []string
	for _, e := range d.Events {
		out = append(out, e.EventType)
	}
	return out
}

func TestCancelRequestCancelsTheHandler(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		s := newServer(t, db)
		w, err := worker.New(s.options())
		require.NoError(t, err)
		started, ended := make(chan struct{}), make(chan error, 1)
		w.Register("long-report", blockingHandler(started, ended))
		runID := s.start("long-report", nil)
		runWorker(t, w)
		waitClosed(t, started, "the handler to start")

		_, err = s.svc.CancelRun(t.Context(), "default", runID, &scheduling.CommandContext{Source: "api", Actor: "ops"})
		require.NoError(t, err)
		run := s.waitFinished(runID)
		require.ErrorIs(t, <-ended, context.Canceled, "the handler's context was cancelled")
		require.Equal(t, models.RunCancelled, run.Status)
		require.Nil(t, run.FailureType)
		require.Equal(t, []string{
			scheduling.RunEventScheduleTriggered, scheduling.RunEventStarted,
			scheduling.RunEventCancelRequested, scheduling.RunEventCancelled,
		}, eventTypes(t, s.svc, runID))
	})
}

func TestTerminateStopsTheHandlerWithoutReport(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		s := newServer(t, db)
		w, err := worker.New(s.options())
		require.NoError(t, err)
		started, ended := make(chan struct{}), make(chan error, 1)
		w.Register("stuck-export", blockingHandler(started, ended))
		runID := s.start("stuck-export", nil)
		stop := runWorker(t, w)
		waitClosed(t, started, "the handler to start")

		_, err = s.svc.TerminateRun(t.Context(), "default", runID, nil)
		require.NoError(t, err)
		// The next heartbeat is refused (409 run_not_running), which
		// cancels the handler; the worker then has nothing to report.
		require.ErrorIs(t, <-ended, context.Canceled)
		stop() // Run returns only after the handler's result was dealt with
		run, err := s.svc.GetRun(t.Context(), "default", runID)
		require.NoError(t, err)
		require.Equal(t, models.RunTerminated, run.Status)
		require.Equal(t, []string{
			scheduling.RunEventScheduleTriggered, scheduling.RunEventStarted, scheduling.RunEventTerminated,
		}, eventTypes(t, s.svc, runID))
	})
}

func TestStoppingTheWorkerFailsRunningRuns(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.SQLite(t))
	w, err := worker.New(s.options())
	require.NoError(t, err)
	started, ended := make(chan struct{}), make(chan error, 1)
	w.Register("nightly", blockingHandler(started, ended))
	runID := s.start("nightly", nil)
	stop := runWorker(t, w)
	waitClosed(t, started, "the handler to start")

	stop()
	require.ErrorIs(t, <-ended, context.Canceled)
	run, err := s.svc.GetRun(t.Context(), "default", runID)
	require.NoError(t, err)
	require.Equal(t, models.RunFailed, run.Status, "the result is reported before Run returns")
	require.Equal(t, "worker_stopped", *run.FailureType)
	require.Contains(t, *run.FailureMessage, "worker test-worker stopped before the run finished")
}

func TestConcurrencyLimitsClaims(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		s := newServer(t, db)
		opts := s.options()
		opts.Concurrency = 2
		w, err := worker.New(opts)
		require.NoError(t, err)
		var mu sync.Mutex
		inFlight, peak := 0, 0
		started, release := make(chan string, 5), make(chan struct{})
		w.Register("sync", func(ctx context.Context, run worker.Run) (any, error) {
			mu.Lock()
			inFlight++
			peak = max(peak, inFlight)
			mu.Unlock()
			defer func() {
				mu.Lock()
				inFlight--
				mu.Unlock()
			}()
			started <- run.ID
			select {
			case <-release:
				return nil, nil
			case <-ctx.Done(): // lets a failing test stop the worker
				return nil, ctx.Err()
			}
		})
		var runIDs []string
		for range 5 {
			runIDs = append(runIDs, s.start("sync", nil))
		}
		runWorker(t, w)

		for range 2 {
			select {
			case <-started:
			case <-time.After(waitLimit):
				t.Fatal("two handlers never ran at once")
			}
		}
		// Both slots are busy: the worker must not have claimed more.
		page, err := s.svc.ListRuns(t.Context(), scheduling.RunListFilter{Namespace: "default", Statuses: []string{models.RunRunning}})
		require.NoError(t, err)
		require.Equal(t, 2, len(page.Runs), "runs claimed while both slots are busy")

		close(release)
		for _, id := range runIDs {
			require.Equal(t, models.RunCompleted, s.waitFinished(id).Status)
		}
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, 2, peak, "handlers running at once")
	})
}

func TestRunStopsWhenThePollIsRejected(t *testing.T) {
	t.Parallel()
	s := newServer(t, dbtest.SQLite(t))
	opts := s.options()
	opts.Namespace = "Not A Namespace!"
	w, err := worker.New(opts)
	require.NoError(t, err)
	err = w.Run(t.Context())
	var apiErr *worker.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnprocessableEntity, apiErr.StatusCode)
	require.Equal(t, "validation_failed", apiErr.Code)
	require.Contains(t, apiErr.Fields, "namespace")
}

// The server requires worker_id on heartbeats and results, so a worker
// started without one must use the ID it generates for poll everywhere.
func TestGeneratedWorkerIDFinishesRuns(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		s := newServer(t, db)
		opts := s.options()
		opts.WorkerID = ""
		w, err := worker.New(opts)
		require.NoError(t, err)
		w.Register("sync", func(ctx context.Context, run worker.Run) (any, error) { return map[string]bool{"ok": true}, nil })
		id := s.start("sync", nil)
		runWorker(t, w)
		run := s.waitFinished(id)
		require.Equal(t, models.RunCompleted, run.Status)
		require.NotEmpty(t, *run.WorkerID)
		require.NotEqual(t, testWorkerID, *run.WorkerID)
	})
}

// A retried run reaches the handler again as the same run with the next
// attempt number; an error marked NonRetryable ends it at once.
func TestRetriedRunsAndNonRetryableErrors(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		clock := schedtest.NewClock(time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC))
		svc := schedtest.Service(db, clock)
		ts := httptest.NewServer(web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.DiscardHandler), Version: "test", Clock: clock}))
		t.Cleanup(ts.Close)
		s := &server{t: t, svc: svc, url: ts.URL, authSet: map[string]bool{}}
		start := func(workflowType string) string {
			attempts, initial := 3, int64(1)
			_, err := svc.Create(t.Context(), scheduling.CreateInput{
				Namespace: "default", ScheduleID: workflowType,
				Spec: models.Spec{CronExpressions: []string{"0 0 1 1 *"}, Timezone: "UTC"},
				Action: models.Action{WorkflowType: workflowType,
					RetryPolicy: &models.RetryPolicy{MaxAttempts: &attempts, InitialIntervalSeconds: &initial}},
			}, nil)
			require.NoError(t, err)
			res, err := svc.Trigger(t.Context(), "default", workflowType, "", nil)
			require.NoError(t, err)
			return res.RunID
		}
		var mu sync.Mutex
		seen := map[string][]int{}
		w, err := worker.New(s.options())
		require.NoError(t, err)
		w.Register("flaky", func(_ context.Context, run worker.Run) (any, error) {
			mu.Lock()
			seen[run.ID] = append(seen[run.ID], run.Attempt)
			mu.Unlock()
			if run.Attempt == 1 {
				return nil, errors.New("connection reset")
			}
			return map[string]int{"attempt": run.Attempt}, nil
		})
		w.Register("doomed", func(context.Context, worker.Run) (any, error) {
			return nil, worker.NonRetryable(worker.WithFailureType(errors.New("invoice is malformed"), "bad_input"))
		})
		stop := runWorker(t, w)
		defer stop()

		flaky := start("flaky")
		s.waitRun(flaky, "waiting for its second attempt", func(r *models.Run) bool { return r.Status == models.RunPending && r.Attempt == 2 }) // a pending run names its next attempt (SPEC §10)
		clock.Advance(time.Second)                                                                                                              // the backoff
		run := s.waitFinished(flaky)
		require.Equal(t, models.RunCompleted, run.Status)
		require.JSONEq(t, `{"attempt":2}`, string(run.Output))
		mu.Lock()
		require.Equal(t, []int{1, 2}, seen[flaky])
		mu.Unlock()

		doomed := start("doomed")
		run = s.waitFinished(doomed)
		require.Equal(t, models.RunFailed, run.Status, "not retried although two attempts remained")
		require.Equal(t, 1, run.Attempt)
		require.Equal(t, "bad_input", *run.FailureType)
	})
}
