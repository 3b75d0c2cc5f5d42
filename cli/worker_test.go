package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/web"
)

// workerServer is the real router with a worker token, and the service to
// create and inspect runs with.
type workerServer struct {
	url   string
	token string
	svc   *scheduling.Service
}

func newWorkerServer(t *testing.T, db *bun.DB) *workerServer {
	t.Helper()
	store := &auth.Store{}
	token, err := store.AddEphemeral("runner", auth.RoleWorker)
	require.NoError(t, err)
	svc := scheduling.New(scheduling.Config{DB: db})
	srv := httptest.NewServer(web.NewServer(web.Deps{DB: db, Service: svc, Logger: discardLogger(), Auth: web.Auth{Store: store}}))
	t.Cleanup(srv.Close)
	return &workerServer{url: srv.URL, token: token, svc: svc}
}

// start creates a schedule of the type and triggers it; it returns the run.
func (s *workerServer) start(t *testing.T, id, workflowType, input string) string {
	t.Helper()
	_, err := s.svc.Create(t.Context(), scheduling.CreateInput{Namespace: "default", ScheduleID: id,
		Spec:   models.Spec{CronExpressions: []string{"0 0 1 1 *"}, Timezone: "UTC"},
		Action: models.Action{WorkflowType: workflowType, Input: json.RawMessage(input)}, OverlapPolicy: scheduling.OverlapAllowAll}, nil)
	require.NoError(t, err)
	res, err := s.svc.Trigger(t.Context(), "default", id, "", nil)
	require.NoError(t, err)
	return res.RunID
}

func (s *workerServer) wait(t *testing.T, runID string, done func(*models.Run) bool) *models.Run {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		run, err := s.svc.GetRun(t.Context(), "default", runID)
		require.NoError(t, err)
		if done(run) {
			return run
		}
		require.True(t, time.Now().Before(deadline), "run %s stayed %s", runID, run.Status)
		time.Sleep(10 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for the worker's log and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startWorkerCommand runs `tideline worker ARGS` in-process until stop.
func startWorkerCommand(t *testing.T, environ map[string]string, args ...string) (stop func() error, log *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log = &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"worker"}, args...), func(k string) string { return environ[k] }, strings.NewReader(""), log, log)
	}()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop, log
}

func TestWorkerCommandRunsCommandsAndHonoursCancel(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		s := newWorkerServer(t, db)
		stop, log := startWorkerCommand(t, map[string]string{"TIDELINE_TOKEN": s.token, "PATH": os.Getenv("PATH")},
			"--server", s.url, "--lease", "1s", "--grace", "5s", "--non-retryable-exit", "64",
			"--run", `report.*=sh -c 'printf "{\"input\":%s,\"schedule\":\"%s\",\"attempt\":%s,\"token\":\"%s\"}" "$(cat)" "$TIDELINE_SCHEDULE_ID" "$TIDELINE_ATTEMPT" "${TIDELINE_TOKEN-}"'`,
			"--run", `long=sh -c 'trap "echo stopping >&2; exit 7" TERM; sleep 100 & wait'`,
			"--run", `usage=sh -c 'echo "bad flag" >&2; exit 64'`)

		report := s.start(t, "nightly", "report.daily", `{"region":"eu"}`)
		done := s.wait(t, report, func(r *models.Run) bool { return !r.Active() })
		require.Equal(t, models.RunCompleted, done.Status, log.String())
		require.JSONEq(t, `{"input":{"region":"eu"},"schedule":"nightly","attempt":1,"token":""}`, string(done.Output),
			"input on stdin, run facts in the environment, the worker's token not")

		usage := s.start(t, "usage", "usage", `null`)
		failed := s.wait(t, usage, func(r *models.Run) bool { return !r.Active() })
		require.Equal(t, models.RunFailed, failed.Status)
		require.Equal(t, "exit_64", *failed.FailureType)
		require.Equal(t, "bad flag\n", *failed.FailureMessage)

		long := s.start(t, "long", "long", `null`)
		s.wait(t, long, func(r *models.Run) bool { return r.Status == models.RunRunning })
		_, err := s.svc.CancelRun(t.Context(), "default", long, nil)
		require.NoError(t, err)
		cancelled := s.wait(t, long, func(r *models.Run) bool { return !r.Active() })
		require.Equal(t, models.RunCancelled, cancelled.Status, log.String())
		require.Contains(t, log.String(), "exit_code=7", "the command got SIGTERM and ran its trap")

		require.NoError(t, stop(), "the worker exits cleanly when asked to stop")
		require.Contains(t, log.String(), "worker: stopped")
	})
}

// On its own stop the worker lets a running command finish within the
// grace and reports it.
func TestWorkerCommandFinishesRunningCommandsOnStop(t *testing.T) {
	t.Parallel()
	s := newWorkerServer(t, dbtest.SQLite(t))
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	stop, log := startWorkerCommand(t, map[string]string{"PATH": os.Getenv("PATH")},
		"--server", s.url, "--token", s.token, "--lease", "1s", "--grace", "20s",
		"--run", `job=sh -c 'echo started > `+dir+`/started; while [ ! -e `+release+` ]; do sleep 0.05; done; echo "{\"finished\":true}"'`)
	runID := s.start(t, "job", "job", `null`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the command never started: %s", log.String())
		time.Sleep(10 * time.Millisecond)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// The worker stops polling but waits for its command: were it killed at
	// once, the run would fail as worker_stopped.
	require.NoError(t, os.WriteFile(release, nil, 0o600))
	require.NoError(t, <-stopped)
	run, err := s.svc.GetRun(t.Context(), "default", runID)
	require.NoError(t, err)
	require.Equal(t, models.RunCompleted, run.Status, log.String())
	require.JSONEq(t, `{"finished":true}`, string(run.Output))
}

func TestWorkerCommandConfigFile(t *testing.T) {
	t.Parallel()
	s := newWorkerServer(t, dbtest.SQLite(t))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "worker.yaml")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte(s.token+"\n"), 0o600))
	require.NoError(t, os.WriteFile(cfg, []byte(`
server: http://127.0.0.1:1  # overridden by --server
token_file: `+filepath.Join(dir, "token")+`
queue: reports
concurrency: 2
grace: 10s
lease: 2s
non_retryable_exit: [3]
run:
  - type: "a.*"
    command: echo '{"from":"line"}'
  - type: b
    command: ["sh", "-c", "echo nope >&2; exit 3"]
`), 0o600))
	stop, log := startWorkerCommand(t, map[string]string{"PATH": os.Getenv("PATH")}, "--config", cfg, "--server", s.url)
	reports := "reports"
	_, err := s.svc.Create(t.Context(), scheduling.CreateInput{Namespace: "default", ScheduleID: "a", Queue: &reports,
		Spec: models.Spec{CronExpressions: []string{"0 0 1 1 *"}, Timezone: "UTC"}, Action: models.Action{WorkflowType: "a.x"}}, nil)
	require.NoError(t, err)
	_, err = s.svc.Create(t.Context(), scheduling.CreateInput{Namespace: "default", ScheduleID: "b", Queue: &reports,
		Spec: models.Spec{CronExpressions: []string{"0 0 1 1 *"}, Timezone: "UTC"}, Action: models.Action{WorkflowType: "b"}}, nil)
	require.NoError(t, err)
	a, err := s.svc.Trigger(t.Context(), "default", "a", "", nil)
	require.NoError(t, err)
	b, err := s.svc.Trigger(t.Context(), "default", "b", "", nil)
	require.NoError(t, err)
	ra := s.wait(t, a.RunID, func(r *models.Run) bool { return !r.Active() })
	require.JSONEq(t, `{"from":"line"}`, string(ra.Output), log.String())
	rb := s.wait(t, b.RunID, func(r *models.Run) bool { return !r.Active() })
	require.Equal(t, models.RunFailed, rb.Status)
	require.Equal(t, "exit_3", *rb.FailureType)
	require.NoError(t, stop())
}

func TestWorkerCommandUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badKey := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(badKey, []byte("serverr: http://x\n"), 0o600))
	badRun := filepath.Join(dir, "badrun.yaml")
	require.NoError(t, os.WriteFile(badRun, []byte("run:\n  - type: x\n    command: {a: 1}\n"), 0o600))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "no command to run"},
		{"run without equals", []string{"--run", "report"}, "want TYPE=COMMAND"},
		{"unclosed quote", []string{"--run", "x=echo 'hi"}, "single quote is not closed"},
		{"missing program", []string{"--run", "x=no-such-program-tideline"}, "find no-such-program-tideline"},
		{"bad exit codes", []string{"--run", "x=true", "--non-retryable-exit", "2,x"}, "invalid --non-retryable-exit"},
		{"exit code zero", []string{"--run", "x=true", "--non-retryable-exit", "0"}, "invalid --non-retryable-exit"},
		{"bad server", []string{"--run", "x=true", "--server", "ftp://x"}, "invalid --server"},
		{"bad concurrency", []string{"--run", "x=true", "--concurrency", "0"}, "invalid --concurrency 0"},
		{"bad lease", []string{"--run", "x=true", "--lease", "1500ms"}, "invalid --lease"},
		{"two tokens", []string{"--run", "x=true", "--token", "a", "--token-file", "b"}, "not both"},
		{"unknown config key", []string{"--config", badKey}, "field serverr not found"},
		{"bad config command", []string{"--config", badRun}, "run[0]: command: want a line or a list of words"},
		{"missing config", []string{"--config", filepath.Join(dir, "none.yaml")}, "read --config"},
		{"positional", []string{"--run", "x=true", "extra"}, `unexpected argument "extra"`},
		{"duplicate type", []string{"--run", "x=true", "--run", "x=false"}, `"x" has two commands`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := runCLI(t, map[string]string{"PATH": os.Getenv("PATH")}, append([]string{"worker"}, tc.args...)...)
			var usage *UsageError
			require.ErrorAs(t, err, &usage)
			requireExit(t, 2, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
