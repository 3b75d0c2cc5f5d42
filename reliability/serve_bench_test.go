package reliability

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
)

// serveSchedules is how many schedules BenchmarkServe100k puts behind the
// server in its namespace: 100,000, or TIDELINE_BENCH_SCHEDULES (1000000
// for issue 35's goal 3).
func serveSchedules() int {
	if v, err := strconv.Atoi(os.Getenv("TIDELINE_BENCH_SCHEDULES")); err == nil && v > 0 {
		return v
	}
	return 100_000
}

// serveOtherNamespaces and serveOtherSchedules: the schedules of other
// tenants beside it (100 namespaces of 1,000), which no page of the
// loaded namespace may read.
const serveOtherNamespaces, serveOtherSchedules = 100, 1000

// BenchmarkServe100k starts `tideline serve` (loop on, default period, info
// logging to a file) on PostgreSQL with 100,000 idle daily schedules in
// one namespace (serveSchedules) and 100 other namespaces of 1,000, and
// loads it from this process — a second process on loopback — with 8
// keep-alive connections for 20 s per endpoint (after 2 s of warm-up):
//
//   - api-first: GET /waterline/api/v2/schedules?limit=50 (the first 50);
//   - api-cursor: the same from a random cursor (keyset pages across the
//     100,000);
//   - registry: GET /waterline/schedules, the console's schedule list (HTML).
//
// Reported per endpoint: requests/s and p50/p99 latency; and the server's
// resident memory (VmRSS) idle after start and after the load, with its
// peak (VmHWM). When wrk is installed it also loads each endpoint with
// `wrk -t2 -c8 -d20s --latency` and logs wrk's report as a cross-check.
//
//	go test ./reliability -run '^$' -bench Serve100k -benchtime 1x -count 3 -timeout 60m -v
func BenchmarkServe100k(b *testing.B) {
	url := dbtest.PostgresURL(b)
	db := openDB(b, url)
	ctx := context.Background()
	if _, err := migrations.Apply(ctx, db); err != nil {
		b.Fatal(err)
	}
	n := serveSchedules()
	seedIdleSchedules(b, db, "default", "load", n)
	for i := range serveOtherNamespaces {
		seedIdleSchedules(b, db, fmt.Sprintf("tenant-%03d", i), fmt.Sprintf("t%03d", i), serveOtherSchedules)
	}
	analyze(b, db)
	width := len(strconv.Itoa(n))
	r := newReplica(b, "serve", url)
	r.start()
	pid := r.pid()
	idle := readMemory(b, pid)
	b.Run("rss-idle", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(idle.rssMB, "rss-MB")
	})

	endpoints := []struct {
		name string
		path func(rng *rand.Rand) string
	}{
		{"api-first", func(*rand.Rand) string { return "/waterline/api/v2/schedules?limit=50" }},
		{"api-cursor", func(rng *rand.Rand) string {
			id := fmt.Sprintf("load-%0*d", width, 1+rng.IntN(n-50))
			return "/waterline/api/v2/schedules?limit=50&cursor=" + base64.RawURLEncoding.EncodeToString([]byte(id))
		}},
		{"registry", func(*rand.Rand) string { return "/waterline/schedules" }},
	}
	for _, ep := range endpoints {
		b.Run(ep.name, func(b *testing.B) {
			var res loadResult
			for b.Loop() {
				res = runLoad(b, r, ep.path, 8, 2*time.Second, 20*time.Second)
			}
			b.ReportMetric(res.rps, "req/s")
			b.ReportMetric(res.p50.Seconds()*1000, "p50-ms")
			b.ReportMetric(res.p99.Seconds()*1000, "p99-ms")
			b.Logf("%s: %d requests, %.0f req/s, p50 %s, p99 %s, max %s", ep.name, res.requests, res.rps, res.p50, res.p99, res.max)
			if wrk, err := exec.LookPath("wrk"); err == nil {
				out, err := exec.Command(wrk, "-t2", "-c8", "-d20s", "--latency", r.url(ep.path(rand.New(rand.NewPCG(1, 2))))).CombinedOutput()
				b.Logf("wrk cross-check (%v):\n%s", err, out)
			}
		})
	}
	loaded := readMemory(b, pid)
	b.Run("rss-after-load", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(loaded.rssMB, "rss-MB")
		b.ReportMetric(loaded.hwmMB, "peak-rss-MB")
	})
	b.Logf("serve RSS with %d schedules: %.1f MB idle, %.1f MB after load, peak %.1f MB", n, idle.rssMB, loaded.rssMB, loaded.hwmMB)
	r.stop()
}

// seedIdleSchedules inserts n active daily schedules of namespace, their
// IDs prefix-1…prefix-n (zero-padded to n's width), next fire tomorrow at
// 03:00 UTC (so the loop stays idle), each with a label and one recent
// action, in one generate_series statement each.
func seedIdleSchedules(b testing.TB, db *bun.DB, namespace, prefix string, n int) {
	b.Helper()
	ctx := context.Background()
	width := len(strconv.Itoa(n))
	_, err := db.ExecContext(ctx, `INSERT INTO workflow_schedules
		(id, namespace, schedule_id, status, spec, action, overlap_policy, labels, note, fires_count, last_fired_at,
		 latest_instance_id, actions_count, next_fire_at, next_nominal_at, created_at, updated_at)
		SELECT 'IDLE' || rpad(?, 6, '-') || lpad(g::text, 16, '0'), ?, ? || '-' || lpad(g::text, ?, '0'), 'active',
			'{"cron_expressions":["0 3 * * *"],"intervals":[],"timezone":"UTC"}',
			'{"workflow_type":"nightly-report","execution_timeout_seconds":null,"run_timeout_seconds":null}',
			'skip', jsonb_build_object('team', 'team-' || (g % 10)), 'seeded for the load benchmark', 1,
			date_trunc('day', now()) - interval '21 hours',
			'schedule:' || ? || '-' || lpad(g::text, ?, '0') || ':' || extract(epoch FROM date_trunc('day', now()) - interval '21 hours')::bigint,
			1, date_trunc('day', now()) + interval '27 hours', date_trunc('day', now()) + interval '27 hours',
			now() - interval '30 days', now() - interval '30 days'
		FROM generate_series(1, ?) AS g`, prefix, namespace, prefix, width, prefix, width, n)
	if err != nil {
		b.Fatalf("seed %d schedules: %v", n, err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO workflow_schedule_recent_actions
		(schedule_ulid, slot, n, outcome, instance_id, run_id, fired_at, occurrence_time, fire_lag_ms)
		SELECT 'IDLE' || rpad(?, 6, '-') || lpad(g::text, 16, '0'), 0, 0, 'scheduled',
			'schedule:' || ? || '-' || lpad(g::text, ?, '0') || ':' || extract(epoch FROM date_trunc('day', now()) - interval '21 hours')::bigint,
			'RUN' || rpad(?, 6, '-') || lpad(g::text, 17, '0'), date_trunc('day', now()) - interval '21 hours' + interval '12 milliseconds',
			date_trunc('day', now()) - interval '21 hours', 12
		FROM generate_series(1, ?) AS g`, prefix, prefix, width, prefix, n)
	if err != nil {
		b.Fatalf("seed the recent actions of %d schedules: %v", n, err)
	}
}

// analyze refreshes the planner's statistics after seeding (autovacuum is
// off on this machine).
func analyze(b testing.TB, db *bun.DB) {
	b.Helper()
	for _, table := range []string{"workflow_schedules", "workflow_schedule_recent_actions", "workflow_schedule_rings", "workflow_schedule_due"} {
		if _, err := db.ExecContext(context.Background(), "ANALYZE "+table); err != nil {
			b.Fatal(err)
		}
	}
}

type memory struct{ rssMB, hwmMB float64 }

// readMemory reads VmRSS and VmHWM of a process from /proc.
func readMemory(b testing.TB, pid int) memory {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "VmRSS:":
			m.rssMB = kb / 1024
		case "VmHWM:":
			m.hwmMB = kb / 1024
		}
	}
	return m
}

type loadResult struct {
	requests      int
	rps           float64
	p50, p99, max time.Duration
}

// runLoad sends GET requests from conns goroutines over keep-alive
// connections for warmup+measure, and summarises the measured part.
func runLoad(b testing.TB, r *replica, path func(*rand.Rand) string, conns int, warmup, measure time.Duration) loadResult {
	b.Helper()
	transport := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	defer transport.CloseIdleConnections()
	c := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	start := time.Now()
	measureFrom, end := start.Add(warmup), start.Add(warmup+measure)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  []string
		wg        sync.WaitGroup
	)
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			var mine []time.Duration
			for {
				sent := time.Now()
				if !sent.Before(end) {
					break
				}
				res, err := c.Get(r.url(path(rng)))
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					if err == nil && res.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", res.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					continue
				}
				if !sent.Before(measureFrom) {
					mine = append(mine, time.Since(sent))
				}
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		b.Fatalf("%d failed requests, e.g. %s", len(failures), failures[0])
	}
	slices.Sort(latencies)
	n := len(latencies)
	if n == 0 {
		b.Fatal("no request completed")
	}
	return loadResult{
		requests: n, rps: float64(n) / measure.Seconds(),
		p50: latencies[n/2], p99: latencies[min(n-1, n*99/100)], max: latencies[n-1],
	}
}
