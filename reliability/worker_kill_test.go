package reliability

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// commandRunner is one `tideline worker` process.
type commandRunner struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

func startCommandRunner(t *testing.T, name string, args ...string) *commandRunner {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, append([]string{"worker"}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &commandRunner{cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(w.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-w.exited
		if t.Failed() {
			t.Logf("--- last lines of %s's log ---\n%s", name, tail(logPath, 40))
		}
	})
	return w
}

// procAlive reports whether pid is a live process; a zombie is not (in a
// container without an init that reaps, an orphan killed stays one).
func procAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// TestWorkerKilledMidRunIsRetriedWithoutOverlap kills a `tideline worker`
// with SIGKILL while its command runs:
//
//  1. A schedule's run (retried up to 3 attempts) goes to worker A, whose
//     command records its PID and waits for a sleep it forked.
//  2. Worker A is SIGKILLed. Its command and the grandchild die with it
//     (the command shim sees its lifeline close): no orphan goes on
//     working.
//  3. The lease (2 s) expires; the loop fails the attempt as worker_lost
//     and the retry policy puts the run back as attempt 2.
//  4. Worker B, running all along, claims attempt 2. Its command checks
//     that attempt 1's process is gone when it starts, and completes.
func TestWorkerKilledMidRunIsRetriedWithoutOverlap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	server := newReplica(t, "serve", "sqlite:"+filepath.Join(dir, "tideline.db"))
	server.start()
	body := map[string]any{
		"schedule_id": "nightly", "spec": map[string]any{"cron_expressions": []string{"0 3 * * *"}},
		"action": map[string]any{"workflow_type": "slow", "input": map[string]int{"n": 1},
			"retry_policy": map[string]any{"max_attempts": 3, "initial_interval_seconds": 1}},
	}
	if _, err := server.do(http.MethodPost, "/waterline/api/v2/schedules", body, nil); err != nil {
		t.Fatal(err)
	}
	// Attempt N writes its shell's PID to pid.N and notes any process of an
	// earlier attempt still alive. Attempt 1 then forks a long sleep (a
	// grandchild of the worker: Pdeathsig alone would not reach it),
	// writes its PID to pid.1.child and waits for it.
	script := `echo $$ > ` + dir + `/pid.$TIDELINE_ATTEMPT.tmp && mv ` + dir + `/pid.$TIDELINE_ATTEMPT.tmp ` + dir + `/pid.$TIDELINE_ATTEMPT
for f in ` + dir + `/pid.*; do
  case "$f" in ` + dir + `/pid.$TIDELINE_ATTEMPT|*.tmp) continue;; esac
  state=$(sed 's/.*) //' /proc/$(cat "$f")/stat 2>/dev/null | cut -c1)
  if [ -n "$state" ] && [ "$state" != Z ]; then echo "attempt $TIDELINE_ATTEMPT started beside $f" >> ` + dir + `/overlaps; fi
done
if [ "$TIDELINE_ATTEMPT" = 1 ]; then
  sleep 600 & echo $! > ` + dir + `/child.tmp && mv ` + dir + `/child.tmp ` + dir + `/pid.1.child
  wait
fi
echo '{"attempt": '$TIDELINE_ATTEMPT'}'`
	args := func(id string) []string {
		return []string{"--server", server.url(""), "--worker-id", id, "--lease", "2s", "--grace", "1s", "--concurrency", "1",
			"--run", "slow=sh -c '" + strings.ReplaceAll(script, "'", `'\''`) + "'"}
	}
	a := startCommandRunner(t, "worker-a", args("worker-a")...)

	var run struct {
		RunID string `json:"run_id"`
	}
	if _, err := server.do(http.MethodPost, "/waterline/api/v2/schedules/nightly/trigger", map[string]any{}, &run); err != nil {
		t.Fatal(err)
	}
	readPID := func(name string) (int, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(string(b)))
	}
	var pid1, child1 int
	waitFor(t, 30*time.Second, 20*time.Millisecond, "attempt 1 and its grandchild to start on worker A", func() (bool, error) {
		var err error
		if pid1, err = readPID("pid.1"); err != nil {
			return false, err
		}
		child1, err = readPID("pid.1.child")
		return err == nil, err
	})
	if !procAlive(pid1) || !procAlive(child1) {
		t.Fatal("attempt 1's processes are not running")
	}
	b := startCommandRunner(t, "worker-b", args("worker-b")...)

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	waitFor(t, 10*time.Second, 10*time.Millisecond, "worker A's command and its grandchild to die with it", func() (bool, error) {
		return !procAlive(pid1) && !procAlive(child1), nil
	})

	var final struct {
		Status   string           `json:"status"`
		Attempt  int              `json:"attempt"`
		Output   map[string]int   `json:"output"`
		WorkerID string           `json:"worker_id"`
		History  []map[string]any `json:"history"`
	}
	waitFor(t, 60*time.Second, 50*time.Millisecond, "the run to be completed by its retry", func() (bool, error) {
		_, err := server.do(http.MethodGet, "/waterline/api/v2/runs/"+run.RunID, nil, &final)
		return final.Status == "completed", err
	})
	if final.Attempt != 2 || final.Output["attempt"] != 2 || final.WorkerID != "worker-b" {
		t.Fatalf("want attempt 2 completed by worker-b, got attempt %d output %v by %s", final.Attempt, final.Output, final.WorkerID)
	}
	if overlaps, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Fatalf("two attempts ran at once:\n%s", overlaps)
	}
	var failed []string
	for _, e := range final.History {
		if e["event_type"] == "RunAttemptFailed" {
			failed = append(failed, fmt.Sprint(e["payload"]))
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "worker_lost") {
		t.Fatalf("want one attempt failed as worker_lost, got %v", failed)
	}
	if _, err := os.Stat(filepath.Join(dir, "pid.3")); err == nil {
		t.Fatal("a third attempt ran")
	}

	// Worker B stops gracefully on SIGTERM and exits 0.
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("worker B did not stop on SIGTERM")
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("worker B exited %d after SIGTERM, want 0", code)
	}
}
