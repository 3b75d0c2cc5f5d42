package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
)

// TestGracefulShutdown sends SIGTERM to a `tideline serve --demo` on
// PostgreSQL that is firing (prepare-ahead on), whose in-process demo
// worker holds runs, and to which a worker's 20 s long poll is waiting:
//
//   - /readyz answers 503 "shutting down" while the process still serves
//     (the drain), so a load balancer's next probe takes it out;
//   - the long poll is answered, empty, while the process is still up — not
//     held until the listener closes;
//   - the in-process worker hands back what it held: no run is left
//     running (each attempt it had ended as "stopped");
//   - the process exits 0, and the fires show every occurrence at most once
//     and none lost beyond the missed-fire policy.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	url := dbtest.PostgresURL(t)
	db := openDB(t, url)
	r := newReplica(t, "serve", url, "--demo", "--loop-period", "100ms", "--fire-ahead", "1m",
		"--shutdown-drain", "2s", "--shutdown-timeout", "20s")
	r.start()
	ctx := ctxTimeout(t)

	const n = 10
	for i := range n {
		body := map[string]any{
			"schedule_id": fmt.Sprintf("sd-%04d", i), "overlap_policy": "allow_all",
			"spec":   map[string]any{"intervals": []map[string]string{{"every": "PT1S"}}},
			"action": map[string]any{"workflow_type": "reliability"}, "queue": "nobody",
		}
		if _, err := r.do(http.MethodPost, "/waterline/api/v2/schedules", body, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Runs the demo worker takes and works on for seconds.
	hold := map[string]any{
		"schedule_id": "hold", "overlap_policy": "allow_all",
		"spec":   map[string]any{"intervals": []map[string]string{{"every": "PT1S"}}},
		"action": map[string]any{"workflow_type": "report"},
	}
	if _, err := r.do(http.MethodPost, "/waterline/api/v2/schedules", hold, nil); err != nil {
		t.Fatal(err)
	}
	running := func() (int64, error) {
		return db.NewSelect().Model((*models.Run)(nil)).Where("status = ?", models.RunRunning).Count(ctx)
	}
	waitFor(t, 30*time.Second, 20*time.Millisecond, "the demo worker holds runs", func() (bool, error) {
		n, err := running()
		return n > 0, err
	})
	held, _ := running()
	waitFor(t, 30*time.Second, 20*time.Millisecond, "three fires of every schedule", func() (bool, error) {
		fires, err := totalFires(ctx, db, "sd")
		return fires >= 3*n, err
	})

	// A worker's long poll on a queue with nothing pending.
	type answer struct {
		status int
		runs   int
		at     time.Time
		err    error
	}
	polled := make(chan answer, 1)
	written := make(chan struct{})
	go func() {
		b, _ := json.Marshal(map[string]any{"queue": "empty", "wait_seconds": 20, "worker_id": "outside"})
		req, _ := http.NewRequest(http.MethodPost, r.url("/api/v2/worker/poll"), bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { close(written) },
		}))
		res, err := (&http.Client{Timeout: 40 * time.Second}).Do(req)
		if err != nil {
			polled <- answer{err: err, at: time.Now()}
			return
		}
		defer res.Body.Close()
		var out struct {
			Runs []json.RawMessage `json:"runs"`
		}
		raw, _ := io.ReadAll(res.Body)
		_ = json.Unmarshal(raw, &out)
		polled <- answer{status: res.StatusCode, runs: len(out.Runs), at: time.Now()}
	}()
	select {
	case <-written:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll was not sent")
	}
	sent := time.Now()
	firesBefore, _ := totalFires(ctx, db, "sd")
	exited := r.terminate()

	var sawDraining bool
	waitFor(t, 10*time.Second, 20*time.Millisecond, "/readyz 503 shutting down", func() (bool, error) {
		res, err := client.Get(r.url("/readyz"))
		if err != nil {
			return false, err
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		sawDraining = res.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(raw), "shutting down")
		return sawDraining, nil
	})
	var poll answer
	select {
	case poll = <-polled:
	case <-exited:
		t.Fatal("the process exited before answering the long poll")
	case <-time.After(15 * time.Second):
		t.Fatal("the long poll was not answered")
	}
	if poll.err != nil || poll.status != http.StatusOK || poll.runs != 0 {
		t.Fatalf("long poll during shutdown: status %d, %d runs, err %v; want 200 and no runs", poll.status, poll.runs, poll.err)
	}
	select {
	case <-exited:
		t.Fatal("the process exited at once: no drain for a load balancer to see")
	default:
	}
	if code, _ := r.readyz(); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after the poll was answered: %d, want 503 during the drain", code)
	}
	select {
	case <-exited:
	case <-time.After(25 * time.Second):
		t.Fatal("the process did not exit within --shutdown-timeout")
	}
	exitedAt := time.Now()
	if err := r.exitStatus(); err != nil {
		t.Fatalf("exit: %v, want status 0\n%s", err, tail(r.log.Name(), 30))
	}
	left, err := running()
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		var rows []models.Run
		_ = db.NewSelect().Model(&rows).Where("status = ?", models.RunRunning).Scan(ctx)
		for _, r := range rows {
			t.Logf("left running: %s %s queue %s worker %v attempt %d started %v lease until %v", r.ID, r.WorkflowType, r.Queue, strOrNil(r.WorkerID), r.Attempt, r.StartedAt, r.LeaseExpiresAt)
		}
		t.Errorf("%d runs still running after the shutdown; the in-process worker should hand back what it held", left)
	}
	logText, _ := os.ReadFile(r.log.Name())
	if bytes.Contains(logText, []byte("level=ERROR")) {
		t.Errorf("the shutdown logged an ERROR:\n%s", tail(r.log.Name(), 30))
	}
	firesAfter, _ := totalFires(ctx, db, "sd")
	if firesAfter <= firesBefore {
		t.Errorf("no fire during the drain (%d before SIGTERM, %d after exit): the loop should fire until the drain ends", firesBefore, firesAfter)
	}
	stats := verifyExactlyOnce(t, db, "sd")
	t.Logf("SIGTERM → long poll answered in %s, exit 0 in %s (drain 2s); %d fires during the drain; the demo worker held %d runs, %d left running; %s",
		poll.at.Sub(sent).Round(time.Millisecond), exitedAt.Sub(sent).Round(time.Millisecond), firesAfter-firesBefore, held, left, stats)
}

func strOrNil(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
