package reliability

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/notify"
	"github.com/tidelinehq/tideline/worker"
)

// traffic is the load the production-PostgreSQL tests (connection loss,
// PgBouncer, failover) put on replicas besides firing: Go workers
// (package worker, the library users run) that complete runs and fail one
// in five for good, so run_failed notifications flow to a receiver; every
// answer the workers get is counted by status.
type traffic struct {
	t        testing.TB
	statuses sync.Map // int → *atomic.Int64
	handled  sync.Map // run ID → *atomic.Int64 (handler invocations)
	logs     lockedBuffer
	cancel   context.CancelFunc
	done     sync.WaitGroup

	mu         sync.Mutex
	deliveries map[string]int             // Tideline-Delivery → posts received
	completed  map[string]bool            // runs whose complete or fail report was answered 200
	instances  map[string]map[string]bool // instance ID → the run IDs handed to a handler for it
}

// countingTransport counts the workers' answers by status ("err" for a
// transport failure).
type countingTransport struct{ tr *traffic }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	key := 0
	if err == nil {
		key = res.StatusCode
		if p := r.URL.Path; res.StatusCode == http.StatusOK && (strings.HasSuffix(p, "/complete") || strings.HasSuffix(p, "/fail")) {
			parts := strings.Split(p, "/")
			c.tr.mu.Lock()
			c.tr.completed[parts[len(parts)-2]] = true
			c.tr.mu.Unlock()
		}
	}
	v, _ := c.tr.statuses.LoadOrStore(key, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	return res, err
}

// status is how many answers of that status the workers got (0: transport errors).
func (tr *traffic) status(code int) int64 {
	v, ok := tr.statuses.Load(code)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

func (tr *traffic) statusSummary() string {
	var parts []string
	tr.statuses.Range(func(k, v any) bool {
		name := strconv.Itoa(k.(int))
		if k.(int) == 0 {
			name = "transport error"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, v.(*atomic.Int64).Load()))
		return true
	})
	return strings.Join(parts, ", ")
}

// failsForGood is the one run in five whose handler fails non-retryably.
func failsForGood(runID string) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(runID))
	return h.Sum32()%5 == 0
}

// startTraffic runs `workers` workers against each base URL (concurrency 8,
// short backoff) and returns the receiver URL that notifiers should post
// to. Stop them with stop.
func startTraffic(t testing.TB, baseURLs []string, workers int) (*traffic, string) {
	t.Helper()
	tr := &traffic{t: t, deliveries: map[string]int{}, completed: map[string]bool{}, instances: map[string]map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.deliveries[r.Header.Get("Tideline-Delivery")]++
		tr.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	tr.cancel = cancel
	logger := slog.New(slog.NewTextHandler(&tr.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for i, base := range baseURLs {
		for j := range workers {
			w, err := worker.New(worker.Options{
				BaseURL: base, WorkerID: fmt.Sprintf("w-%d-%d", i, j), Concurrency: 8, LeaseSeconds: 10, PollWait: 5 * time.Second,
				HTTPClient: &http.Client{Transport: countingTransport{tr}}, Logger: logger,
				Backoff: func(n int) time.Duration { return min(100*time.Millisecond*time.Duration(n), time.Second) },
			})
			if err != nil {
				t.Fatal(err)
			}
			w.Register("reliability", func(ctx context.Context, run worker.Run) (any, error) {
				v, _ := tr.handled.LoadOrStore(run.ID, new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
				tr.mu.Lock()
				if tr.instances[run.InstanceID] == nil {
					tr.instances[run.InstanceID] = map[string]bool{}
				}
				tr.instances[run.InstanceID][run.ID] = true
				tr.mu.Unlock()
				if failsForGood(run.ID) {
					return nil, worker.NonRetryable(errors.New("fails for good"))
				}
				return map[string]any{"ok": true}, nil
			})
			tr.done.Go(func() { _ = w.Run(ctx) })
		}
	}
	t.Cleanup(tr.stop)
	return tr, srv.URL
}

// stop ends the workers and waits for them (harmless twice).
func (tr *traffic) stop() {
	tr.cancel()
	tr.done.Wait()
}

// createNotifier makes r post run_failed to the traffic's receiver.
func createNotifier(t testing.TB, r *replica, name, receiverURL string) {
	t.Helper()
	if _, err := r.do(http.MethodPost, "/waterline/api/v2/notifiers", map[string]any{
		"name": name, "url": receiverURL + "/hook", "format": "json", "events": []string{notify.EventRunFailed},
	}, nil); err != nil {
		t.Fatal(err)
	}
}

// runOutcome is what the database says about the runs once traffic
// settled.
type runOutcome struct {
	Runs, Completed, Failed, Unfinished int
	HandledTwice                        int // runs whose handler ran more than once (a report lost, the lease expired)
	Undelivered                         int // run_failed deliveries not delivered
	ReceivedTwice                       int // deliveries posted more than once (at-least-once: allowed)
}

func (o runOutcome) String() string {
	return fmt.Sprintf("%d runs (%d completed, %d failed, %d unfinished), %d handled twice; notifications: %d undelivered, %d received twice",
		o.Runs, o.Completed, o.Failed, o.Unfinished, o.HandledTwice, o.Undelivered, o.ReceivedTwice)
}

// settle waits until every run of the prefix's schedules has ended and
// every notification is delivered, then reports the outcome.
func (tr *traffic) settle(t testing.TB, db *bun.DB, prefix string) runOutcome {
	t.Helper()
	var o runOutcome
	// Each count has a timeout of its own: one context for the whole wait
	// would end before the wait does and hide the state it timed out in.
	count := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var rows []struct {
			Status string `bun:"status"`
			N      int    `bun:"n"`
		}
		err := db.NewSelect().TableExpr("workflow_runs AS r").
			Join("JOIN workflow_schedules AS s ON s.id = r.workflow_schedule_id").
			ColumnExpr("r.status, count(*) AS n").Where("s.schedule_id LIKE ?", prefix+"-%").
			GroupExpr("r.status").Scan(ctx, &rows)
		if err != nil {
			return err
		}
		o = runOutcome{}
		for _, r := range rows {
			o.Runs += r.N
			switch r.Status {
			case models.RunCompleted:
				o.Completed += r.N
			case models.RunFailed:
				o.Failed += r.N
			case models.RunPending, models.RunRunning:
				o.Unfinished += r.N
			}
		}
		undelivered, err := db.NewSelect().Table("notification_deliveries").Where("status <> 'delivered'").Count(ctx)
		o.Undelivered = int(undelivered)
		return err
	}
	waitFor(t, 90*time.Second, 100*time.Millisecond, "every run ended and every notification delivered", func() (bool, error) {
		if err := count(); err != nil {
			return false, err
		}
		if o.Unfinished > 0 || o.Undelivered > 0 {
			return false, fmt.Errorf("still %d runs unfinished, %d notifications undelivered", o.Unfinished, o.Undelivered)
		}
		return true, nil
	})
	tr.handled.Range(func(_, v any) bool {
		if v.(*atomic.Int64).Load() > 1 {
			o.HandledTwice++
		}
		return true
	})
	tr.mu.Lock()
	for _, n := range tr.deliveries {
		if n > 1 {
			o.ReceivedTwice++
		}
	}
	tr.mu.Unlock()
	return o
}

// lockedBuffer is a log sink several goroutines write.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
