package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the tideline executable TestMain builds for this run.
var binary string

// TestMain builds the tideline binary once; every test and benchmark starts
// it as separate processes, as an operator would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tideline-reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "reliability: temp dir:", err)
		os.Exit(1)
	}
	binary, err = buildBinary(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func buildBinary(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the tideline module")
	}
	path := filepath.Join(dir, "tideline")
	cmd := exec.Command("go", "build", "-o", path, ".")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return path, nil
}

// envInt reads a size knob of the full-size runs (docs/RELIABILITY.md).
func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	raw := os.Getenv(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, raw)
	}
	return n
}

// waitFor polls cond every interval until it holds or timeout passes; the
// message describes what was awaited. Tests wait on conditions, never on
// fixed sleeps.
func waitFor(t testing.TB, timeout, interval time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := waitUntil(timeout, interval, what, cond); err != nil {
		t.Fatal(err)
	}
}

// waitUntil is waitFor for goroutines other than the test's own: it
// returns the timeout as an error instead of failing the test.
func waitUntil(timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		lastErr = err
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
		}
		<-ticker.C
	}
}

var client = &http.Client{Timeout: 5 * time.Second}

// replica is one `tideline serve` process. Restart reuses the same
// arguments; its log keeps the stderr of every incarnation.
type replica struct {
	t    testing.TB
	name string
	args []string
	log  *os.File
	bin  string // the executable; binary (this build) when empty

	mu     sync.Mutex
	cmd    *exec.Cmd
	addr   string
	exited chan struct{}
	starts int
	// exitErr is cmd.Wait's answer for the last incarnation, once exited
	// is closed (nil: exit status 0).
	exitErr error
}

var runningLine = regexp.MustCompile(`is running\. Open https?://([^/\s]+)/waterline`)

// newReplica prepares (but does not start) a serve process on a random
// loopback port with the given database and extra flags.
func newReplica(t testing.TB, name, databaseURL string, extra ...string) *replica {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--database", databaseURL}, extra...)
	r := &replica{t: t, name: name, args: args, log: log}
	t.Cleanup(func() {
		r.kill()
		if t.Failed() {
			t.Logf("--- last lines of %s's log ---\n%s", name, tail(log.Name(), 40))
		}
		_ = log.Close()
	})
	return r
}

// start launches the process and waits until it prints its address and
// answers /readyz with 200.
func (r *replica) start() {
	r.t.Helper()
	if err := r.tryStart(); err != nil {
		r.t.Fatal(err)
	}
}

// tryStart is start for goroutines other than the test's own.
func (r *replica) tryStart() error {
	r.mu.Lock()
	if r.cmd != nil {
		r.mu.Unlock()
		return fmt.Errorf("%s is already running", r.name)
	}
	r.starts++
	fmt.Fprintf(r.log, "=== start #%d at %s\n", r.starts, time.Now().Format(time.RFC3339Nano))
	bin := binary
	if r.bin != "" {
		bin = r.bin
	}
	cmd := exec.Command(bin, r.args...)
	cmd.Stderr = r.log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.mu.Unlock()
		return err
	}
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		return fmt.Errorf("start %s: %w", r.name, err)
	}
	exited := make(chan struct{})
	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := runningLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrCh <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		r.exitErr = err
		r.mu.Unlock()
		close(exited)
	}()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()

	select {
	case addr := <-addrCh:
		r.mu.Lock()
		r.addr = addr
		r.mu.Unlock()
	case <-exited:
		return fmt.Errorf("%s exited before serving:\n%s", r.name, tail(r.log.Name(), 20))
	case <-time.After(60 * time.Second):
		return fmt.Errorf("%s did not print its address within 60s", r.name)
	}
	return waitUntil(30*time.Second, 20*time.Millisecond, r.name+" /readyz = 200", func() (bool, error) {
		code, err := r.readyz()
		return code == http.StatusOK, err
	})
}

// url returns the address of a path on the running replica.
func (r *replica) url(path string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "http://" + r.addr + path
}

func (r *replica) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil
}

// alive reports whether the last started process has not exited.
func (r *replica) alive() bool {
	r.mu.Lock()
	exited := r.exited
	r.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// readyz returns the status of GET /readyz (0 when unreachable).
func (r *replica) readyz() (int, error) {
	res, err := client.Get(r.url("/readyz"))
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

// terminate sends SIGTERM and returns at once, with a channel closed when
// the process has exited (then exitStatus tells how).
func (r *replica) terminate() <-chan struct{} {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	return exited
}

// exitStatus is the last incarnation's exit error (nil: status 0).
func (r *replica) exitStatus() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exitErr
}

// kill sends SIGKILL and waits for the process to be gone; a crash, not a
// shutdown: no deferred cleanup runs, open transactions die with the socket.
func (r *replica) kill() { r.signal(syscall.SIGKILL) }

// stop asks for a graceful shutdown (SIGTERM) and waits for it.
func (r *replica) stop() { r.signal(syscall.SIGTERM) }

func (r *replica) signal(sig syscall.Signal) {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	fmt.Fprintf(r.log, "=== %s at %s\n", sig, time.Now().Format(time.RFC3339Nano))
}

// do sends a JSON request to the replica and decodes a JSON answer.
func (r *replica) do(method, path string, body any, out any) (int, error) {
	var rdr io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rdr = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.url(path), rdr)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, err
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return res.StatusCode, fmt.Errorf("decode %s: %w", raw, err)
		}
	}
	if res.StatusCode >= 300 {
		return res.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	return res.StatusCode, nil
}

// metric reads one sample from /metrics ("name" or "name{labels}"); a
// missing sample reads as 0.
func (r *replica) metric(name string) (float64, error) {
	res, err := client.Get(r.url("/metrics"))
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/metrics: %d", res.StatusCode)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, nil
}

// tail returns the last n lines of a file, for failure messages.
func tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// createIntervalSchedules creates n allow_all schedules firing on the given
// ISO-8601 interval through the API, named prefix-0000, prefix-0001, ….
func createIntervalSchedules(t testing.TB, r *replica, prefix string, n int, every string) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for i := range n {
		id := fmt.Sprintf("%s-%04d", prefix, i)
		body := map[string]any{
			"schedule_id":    id,
			"spec":           map[string]any{"intervals": []map[string]string{{"every": every}}},
			"action":         map[string]any{"workflow_type": "reliability"},
			"overlap_policy": "allow_all",
		}
		if _, err := r.do(http.MethodPost, "/waterline/api/v2/schedules", body, nil); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// ctxTimeout is a context for one verification query.
func ctxTimeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
