package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/worker"
)

const waitLimit = 20 * time.Second

// newRunner runs every type with one sh -c script.
func newRunner(t *testing.T, script string, opts ...func(*Options)) *Runner {
	t.Helper()
	o := Options{Commands: []Command{{Pattern: "*", Argv: []string{"sh", "-c", script}}}, Grace: 5 * time.Second,
		Environ: []string{"PATH=" + os.Getenv("PATH"), "TIDELINE_TOKEN=secret", "KEEP=me"}}
	for _, f := range opts {
		f(&o)
	}
	r, err := New(o)
	require.NoError(t, err)
	return r
}

func sampleRun() worker.Run {
	at := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
	return worker.Run{ID: "run-1", InstanceID: "inst-1", ScheduleID: "nightly", Namespace: "billing", WorkflowType: "report.daily",
		Trigger: "scheduled", OccurrenceTime: &at, Input: json.RawMessage(`{"region":"eu"}`), Attempt: 2}
}

// failureOf splits a handler error into what the worker reports.
func failureOf(t *testing.T, err error) (typ, message string, nonRetryable bool) {
	t.Helper()
	require.Error(t, err)
	var typed interface{ FailureType() string }
	require.True(t, errors.As(err, &typed), "error %v has no failure type", err)
	return typed.FailureType(), err.Error(), worker.IsNonRetryable(err)
}

func TestStdinAndEnvironmentReachTheCommand(t *testing.T) {
	t.Parallel()
	r := newRunner(t, `printf '{"stdin":%s,"env":"%s|%s|%s|%s|%s|%s|%s|%s","token":"%s","keep":"%s"}' "$(cat)" `+
		`"$TIDELINE_RUN_ID" "$TIDELINE_INSTANCE_ID" "$TIDELINE_SCHEDULE_ID" "$TIDELINE_NAMESPACE" "$TIDELINE_OCCURRENCE_TIME" `+
		`"$TIDELINE_ATTEMPT" "$TIDELINE_WORKFLOW_TYPE" "$TIDELINE_TRIGGER" "${TIDELINE_TOKEN-unset}" "$KEEP"`)
	out, err := r.Handle(t.Context(), sampleRun())
	require.NoError(t, err)
	raw, ok := out.(json.RawMessage)
	require.True(t, ok, "JSON stdout is the output as it is, got %T", out)
	require.JSONEq(t, `{"stdin":{"region":"eu"},"env":"run-1|inst-1|nightly|billing|2026-07-16T12:00:00Z|2|report.daily|scheduled",`+
		`"token":"unset","keep":"me"}`, string(raw))
}

func TestExitCodesAndOutput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script          string
		wantOutput            string // JSON, when it completes
		wantType, wantMessage string
		wantNonRetryable      bool
	}{
		{name: "json stdout", script: `echo '{"rows": 42}'`, wantOutput: `{"rows":42}`},
		{name: "text stdout", script: `echo hello; echo world`, wantOutput: `{"stdout":"hello\nworld\n"}`},
		{name: "no stdout", script: `true`, wantOutput: `{"stdout":""}`},
		{name: "a JSON scalar", script: `echo 7`, wantOutput: `7`},
		{name: "exit 3", script: `echo partial; echo "disk full" >&2; exit 3`, wantType: "exit_3", wantMessage: "disk full\n"},
		{name: "exit 1 without stderr", script: `exit 1`, wantType: "exit_1", wantMessage: "exited with status 1"},
		{name: "listed exit code", script: `echo "bad input" >&2; exit 64`, wantType: "exit_64", wantMessage: "bad input\n", wantNonRetryable: true},
		{name: "killed by a signal", script: `echo dying >&2; kill -KILL $$`, wantType: "signal_SIGKILL", wantMessage: "dying\n"},
		{name: "terminated", script: `kill -TERM $$`, wantType: "signal_SIGTERM", wantMessage: "killed by SIGTERM"},
	}
	r := newRunner(t, "true", func(o *Options) { o.NonRetryableExit = []int{2, 64} })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rr := *r
			rr.patterns = []resolved{{Command: Command{Pattern: "*", Argv: []string{"sh", "-c", tc.script}}, path: r.patterns[0].path}}
			out, err := rr.Handle(t.Context(), sampleRun())
			if tc.wantType == "" {
				require.NoError(t, err)
				b, mErr := json.Marshal(out)
				require.NoError(t, mErr)
				require.JSONEq(t, tc.wantOutput, string(b))
				return
			}
			typ, msg, nonRetryable := failureOf(t, err)
			require.Equal(t, tc.wantType, typ)
			require.Equal(t, tc.wantMessage, msg)
			require.Equal(t, tc.wantNonRetryable, nonRetryable)
		})
	}
}

// A command that prints far more than is kept costs bounded memory, and
// the run keeps the end of it.
func TestHugeOutputKeepsTheTail(t *testing.T) {
	t.Parallel()
	// 20 MiB on each stream, then a last line.
	r := newRunner(t, `head -c 20971520 /dev/zero | tr '\0' 'x'; echo; echo THE-END; head -c 20971520 /dev/zero | tr '\0' 'y' >&2; echo LAST-WORDS >&2; exit 5`)
	_, err := r.Handle(t.Context(), sampleRun())
	typ, msg, _ := failureOf(t, err)
	require.Equal(t, "exit_5", typ)
	require.LessOrEqual(t, len(msg), stderrTail)
	require.True(t, strings.HasPrefix(msg, "[… "), msg[:40])
	require.True(t, strings.HasSuffix(msg, "yyyyLAST-WORDS\n"))

	r = newRunner(t, `head -c 20971520 /dev/zero | tr '\0' 'x'; echo; echo THE-END`)
	out, err := r.Handle(t.Context(), sampleRun())
	require.NoError(t, err)
	stdout := out.(map[string]string)["stdout"]
	require.LessOrEqual(t, len(stdout), stdoutTail)
	require.True(t, strings.HasSuffix(stdout, "xxx\nTHE-END\n"))
	require.Contains(t, stdout, "bytes truncated] ")
}

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S …": the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// waitFile waits until the file holds a line and returns it.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s was never written", path)
	return ""
}

func waitDead(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still alive", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// pids reads "PARENT CHILD" written by a script.
func pids(t *testing.T, line string) (int, int) {
	t.Helper()
	f := strings.Fields(line)
	require.Len(t, f, 2, line)
	a, err := strconv.Atoi(f[0])
	require.NoError(t, err)
	b, err := strconv.Atoi(f[1])
	require.NoError(t, err)
	return a, b
}

// Cancelling a run stops the command and the grandchild it forked, with
// SIGTERM first.
func TestCancelStopsTheCommandAndItsGrandchildren(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	r := newRunner(t, `trap 'echo got TERM >&2; exit 143' TERM; sleep 1000 & child=$!; echo "$$ $child" > `+pidFile+`; wait`)
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := r.Handle(ctx, sampleRun())
		done <- err
	}()
	parent, child := pids(t, waitFile(t, pidFile))
	require.True(t, alive(parent) && alive(child))
	cancel(worker.ErrCancelRequested)
	err := <-done
	typ, msg, _ := failureOf(t, err)
	require.Equal(t, "exit_143", typ, "the script's own TERM trap ran")
	require.Equal(t, "got TERM\n", msg)
	waitDead(t, parent, child)
}

// A command that ignores SIGTERM is killed after the grace, with whatever
// it started.
func TestACommandIgnoringSIGTERMIsKilledAfterTheGrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	r := newRunner(t, `trap '' TERM; sh -c 'trap "" TERM; sleep 1000' & child=$!; echo "$$ $child" > `+pidFile+`; while :; do wait; done`,
		func(o *Options) { o.Grace = 300 * time.Millisecond })
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := r.Handle(ctx, sampleRun())
		done <- err
	}()
	parent, child := pids(t, waitFile(t, pidFile))
	cancel(worker.ErrRunGone)
	select {
	case err := <-done:
		typ, _, _ := failureOf(t, err)
		require.Equal(t, "signal_SIGKILL", typ)
	case <-time.After(waitLimit):
		t.Fatal("the command outlived its grace")
	}
	waitDead(t, parent, child)
}

// When the command exits, what it left running in its group goes too, and
// the run does not wait for the output pipes those held.
func TestLeftoversOfAFinishedCommandAreKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	r := newRunner(t, `sleep 1000 & echo "$$ $!" > `+pidFile+`; echo '{"ok":true}'`)
	out, err := r.Handle(t.Context(), sampleRun())
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":true}`, string(out.(json.RawMessage)))
	parent, child := pids(t, waitFile(t, pidFile))
	waitDead(t, parent, child)
}

// A command that never reads a large input does not hang the run.
func TestUnreadInputDoesNotBlock(t *testing.T) {
	t.Parallel()
	r := newRunner(t, `echo '"done"'`)
	run := sampleRun()
	run.Input = json.RawMessage(`"` + strings.Repeat("a", 4<<20) + `"`)
	out, err := r.Handle(t.Context(), run)
	require.NoError(t, err)
	require.Equal(t, `"done"`, string(out.(json.RawMessage)))
}

func TestMatchingAndValidation(t *testing.T) {
	t.Parallel()
	r, err := New(Options{Commands: []Command{
		{Pattern: "*", Argv: []string{"true"}},
		{Pattern: "report.*", Argv: []string{"echo", "report"}},
		{Pattern: "report.daily", Argv: []string{"echo", "daily"}},
		{Pattern: "report.weekly.*", Argv: []string{"echo", "weekly"}},
	}})
	require.NoError(t, err)
	for typ, want := range map[string]string{"report.daily": "daily", "report.monthly": "report", "report.weekly.eu": "weekly", "cleanup": "true"} {
		c, ok := r.match(typ)
		require.True(t, ok)
		require.Equal(t, want, c.Argv[len(c.Argv)-1], typ)
	}
	only, err := New(Options{Commands: []Command{{Pattern: "a", Argv: []string{"true"}}}})
	require.NoError(t, err)
	_, err = only.Handle(t.Context(), worker.Run{WorkflowType: "b"})
	typ, msg, _ := failureOf(t, err)
	require.Equal(t, worker.FailureTypeUnknownType, typ)
	require.Contains(t, msg, `"b"`)

	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "no command"},
		{Options{Commands: []Command{{Pattern: "a*b", Argv: []string{"true"}}}}, "may only end"},
		{Options{Commands: []Command{{Pattern: "a", Argv: []string{"true"}}, {Pattern: "a", Argv: []string{"true"}}}}, "two commands"},
		{Options{Commands: []Command{{Pattern: "a", Argv: nil}}}, "empty command"},
		{Options{Commands: []Command{{Pattern: "a", Argv: []string{"no-such-program-tideline"}}}}, "find no-such-program-tideline"},
		{Options{Commands: []Command{{Pattern: "a", Argv: []string{"true"}}}, NonRetryableExit: []int{0}}, "between 1 and 255"},
		{Options{Commands: []Command{{Pattern: "a", Argv: []string{"true"}}}, Grace: -time.Second}, "negative"},
	} {
		_, err := New(tc.opts)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestParseRun(t *testing.T) {
	t.Parallel()
	c, err := ParseRun(`report.*=python3 "/opt/jobs/my report.py" --format csv`)
	require.NoError(t, err)
	require.Equal(t, Command{Pattern: "report.*", Argv: []string{"python3", "/opt/jobs/my report.py", "--format", "csv"}}, c)
	c, err = ParseRun(`sync=sh -c 'curl -fsS "$URL" | jq .'`)
	require.NoError(t, err)
	require.Equal(t, []string{"sh", "-c", `curl -fsS "$URL" | jq .`}, c.Argv)
	for _, bad := range []string{"no-equals", "=cmd", `x=echo 'open`} {
		_, err := ParseRun(bad)
		require.Error(t, err, bad)
	}
}

// In a binary with the shim (this test binary, tideline) the command's
// parent is the shim, which leads its process group.
func TestCommandsRunUnderTheShim(t *testing.T) {
	t.Parallel()
	r := newRunner(t, `tr '\0' ' ' < /proc/$PPID/cmdline; echo; ps -o pgid= -p $PPID; ps -o pgid= -p $$`)
	out, err := r.Handle(t.Context(), sampleRun())
	require.NoError(t, err)
	stdout := out.(map[string]string)["stdout"]
	require.Contains(t, stdout, shimArg+" ")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 3, stdout)
	require.Equal(t, strings.TrimSpace(lines[1]), strings.TrimSpace(lines[2]), "shim and command share the process group")
}

func TestShimStatus(t *testing.T) {
	t.Parallel()
	code, sig, startErr, ok := shimStatus("exit 3\n")
	require.Equal(t, []any{3, 0, "", true}, []any{code, int(sig), startErr, ok})
	code, sig, _, ok = shimStatus("signal 15\n")
	require.Equal(t, []any{-1, 15, true}, []any{code, int(sig), ok})
	_, _, startErr, ok = shimStatus("start fork/exec /x: permission denied\n")
	require.Equal(t, []any{"fork/exec /x: permission denied", true}, []any{startErr, ok})
	for _, bad := range []string{"", "exit", "exit x", "what 1"} {
		_, _, _, ok := shimStatus(bad)
		require.False(t, ok, bad)
	}
}
