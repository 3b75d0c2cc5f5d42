package demo

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
	"github.com/tidelinehq/tideline/worker"
)

var t0 = time.Date(2026, 7, 16, 13, 0, 10, 0, time.UTC)

func listDemo(t *testing.T, svc *scheduling.Service, statuses ...string) []models.Schedule {
	t.Helper()
	page, err := svc.List(t.Context(), scheduling.ListFilter{Namespace: "demo", Statuses: statuses, Limit: scheduling.MaxListLimit})
	require.NoError(t, err)
	return page.Schedules
}

func TestSeedIsIdempotent(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	svc := schedtest.Service(dbtest.SQLite(t), clock)

	require.NoError(t, Seed(t.Context(), svc, "demo"))
	first := listDemo(t, svc)
	require.Len(t, first, len(schedules("demo")))
	require.NoError(t, Seed(t.Context(), svc, "demo"))
	second := listDemo(t, svc)
	require.Len(t, second, len(first), "a second seed adds nothing")
	for i := range first {
		require.Equal(t, first[i].ID, second[i].ID, "a second seed replaces nothing")
		require.Equal(t, first[i].UpdatedAt, second[i].UpdatedAt)
	}

	page, err := svc.List(t.Context(), scheduling.ListFilter{Namespace: "default"})
	require.NoError(t, err)
	require.Empty(t, page.Schedules, "seeding stays in its namespace")

	// A schedule the user deleted stays deleted.
	_, err = svc.Delete(t.Context(), "demo", "demo-cache-cleanup", nil)
	require.NoError(t, err)
	require.NoError(t, Seed(t.Context(), svc, "demo"))
	require.Len(t, listDemo(t, svc), len(first)-1)
	require.Len(t, listDemo(t, svc, models.StatusDeleted), 1)
}

func TestSeededSchedulesShowEveryFeatureSoon(t *testing.T) {
	t.Parallel()
	clock := schedtest.NewClock(t0)
	svc := schedtest.Service(dbtest.SQLite(t), clock)
	require.NoError(t, Seed(t.Context(), svc, "demo"))

	var policies, zones []string
	cron, interval := 0, 0
	for _, s := range listDemo(t, svc) {
		policies = append(policies, s.OverlapPolicy)
		zones = append(zones, s.Spec.Timezone)
		cron += len(s.Spec.CronExpressions)
		interval += len(s.Spec.Intervals)
		require.Equal(t, models.StatusActive, s.Status, s.ScheduleID)
		require.Equal(t, "true", s.Labels["demo"], s.ScheduleID)
		require.NotEmpty(t, s.Labels["team"], s.ScheduleID)
		require.NotEmpty(t, s.Note, s.ScheduleID)
		require.Contains(t, []string{WorkflowInvoiceSync, WorkflowReport, WorkflowCleanup}, s.Action.WorkflowType, s.ScheduleID)
		require.NotNil(t, s.NextFireAt, s.ScheduleID)
		// A new user should see a fire within a minute of starting (the
		// every-two-minutes schedule within two).
		require.LessOrEqual(t, s.NextFireAt.Sub(t0), 2*time.Minute, s.ScheduleID)
	}
	slices.Sort(policies)
	want := slices.Clone(scheduling.OverlapPolicies)
	slices.Sort(want)
	require.Equal(t, want, policies, "one schedule per overlap policy")
	require.Contains(t, zones, "America/New_York")
	require.Positive(t, cron)
	require.Positive(t, interval)
}

func TestWorkflowsSucceedMostlyAndFailSometimes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		workflowType, input string
		wantKey             string // an output field that echoes the input
		wantValue           string
		failureType         string
	}{
		{WorkflowInvoiceSync, `{"region":"us"}`, "region", "us", "upstream_unavailable"},
		{WorkflowReport, `{"report":"usage","format":"csv"}`, "report", "usage", "query_timeout"},
		{WorkflowCleanup, `null`, "target", "cache", "error"},
	}
	for _, tc := range cases {
		t.Run(tc.workflowType, func(t *testing.T) {
			t.Parallel()
			wf := newWorkflows(rand.NewPCG(1, 2), 0)
			handlers := map[string]worker.Handler{WorkflowInvoiceSync: wf.invoiceSync, WorkflowReport: wf.report, WorkflowCleanup: wf.cleanup}
			const n = 400
			failures := 0
			for range n {
				out, err := handlers[tc.workflowType](t.Context(), worker.Run{ID: "r", WorkflowType: tc.workflowType, Input: json.RawMessage(tc.input)})
				if err != nil {
					failures++
					var typed interface{ FailureType() string }
					if tc.failureType == "error" {
						require.False(t, errors.As(err, &typed), "cleanup fails untyped")
					} else {
						require.ErrorAs(t, err, &typed)
						require.Equal(t, tc.failureType, typed.FailureType())
					}
					continue
				}
				b, err := json.Marshal(out)
				require.NoError(t, err)
				var got map[string]any
				require.NoError(t, json.Unmarshal(b, &got))
				require.Equal(t, tc.wantValue, got[tc.wantKey])
			}
			require.InDelta(t, 0.10, float64(failures)/n, 0.05, "about one run in ten fails (%d of %d)", failures, n)
		})
	}
}

func TestWorkflowsStopWhenCancelled(t *testing.T) {
	t.Parallel()
	wf := newWorkflows(rand.NewPCG(3, 4), time.Hour) // an hour per unit: only cancellation can end them in time
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, h := range map[string]worker.Handler{WorkflowInvoiceSync: wf.invoiceSync, WorkflowReport: wf.report, WorkflowCleanup: wf.cleanup} {
		out, err := h(ctx, worker.Run{ID: "r", WorkflowType: name})
		require.ErrorIs(t, err, context.Canceled, name)
		require.Contains(t, err.Error(), "interrupted", name)
		require.Nil(t, out, name)
	}
}

// TestDemoRunsEndToEnd seeds the demo, triggers every schedule and lets the
// sample workflows run through the real HTTP worker protocol.
func TestDemoRunsEndToEnd(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	clock := schedtest.NewClock(t0)
	svc := schedtest.Service(db, clock)
	ts := httptest.NewServer(web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.DiscardHandler), Version: "test", Clock: clock}))
	t.Cleanup(ts.Close)
	require.NoError(t, Seed(t.Context(), svc, "demo"))

	w, err := worker.New(worker.Options{
		BaseURL: ts.URL, Namespace: "demo", WorkerID: "demo-worker", Concurrency: 8, LeaseSeconds: 30, PollWait: time.Second,
		Backoff: func(int) time.Duration { return time.Millisecond },
	})
	require.NoError(t, err)
	newWorkflows(rand.NewPCG(5, 6), time.Millisecond).register(w)
	// The schedules of CommandQueue run as shell commands, as serve --demo
	// runs them (steps of no time here).
	cw, err := worker.New(worker.Options{
		BaseURL: ts.URL, Namespace: "demo", WorkerID: "demo-command-runner", Queue: CommandQueue, Concurrency: 8, LeaseSeconds: 30,
		PollWait: time.Second, Backoff: func(int) time.Duration { return time.Millisecond },
	})
	require.NoError(t, err)
	commands, err := NewRunner(nil, 0)
	require.NoError(t, err)
	commands.Register(cw)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- w.Run(ctx) }()
	go func() { done <- cw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	})

	var runIDs []string
	for _, s := range listDemo(t, svc) {
		res, err := svc.Trigger(t.Context(), "demo", s.ScheduleID, "", nil)
		require.NoError(t, err)
		require.Equal(t, scheduling.OutcomeTriggered, res.Outcome, s.ScheduleID)
		runIDs = append(runIDs, res.RunID)
	}

	deadline, stop := context.WithTimeout(t.Context(), 20*time.Second)
	defer stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	commandRuns := 0
	for _, id := range runIDs {
		for {
			run, err := svc.GetRun(deadline, "demo", id)
			require.NoError(t, err)
			if !run.Active() {
				require.Contains(t, []string{models.RunCompleted, models.RunFailed}, run.Status)
				if run.Status == models.RunCompleted {
					require.NotEmpty(t, run.Output)
				} else {
					require.NotEmpty(t, *run.FailureMessage)
				}
				if run.Queue == CommandQueue {
					commandRuns++
					require.Equal(t, "demo-command-runner", *run.WorkerID, "a command run went to the command runner")
					if run.Status == models.RunCompleted {
						require.True(t, json.Valid(run.Output) && (strings.Contains(string(run.Output), "files_deleted") ||
							strings.Contains(string(run.Output), `"rollup"`)), "the command's JSON stdout is the output: %s", run.Output)
					} else {
						require.Contains(t, []string{"exit_13", "exit_2"}, *run.FailureType)
					}
				}
				break
			}
			select {
			case <-deadline.Done():
				t.Fatalf("run %s (%s) still %s", id, run.WorkflowType, run.Status)
			case <-tick.C:
			}
		}
	}
	require.Equal(t, 2, commandRuns, "two demo schedules run as shell commands")
}
