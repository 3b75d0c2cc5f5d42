package reliability

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/apijson"
	tlclient "github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/models"
)

// EnvFailover enables TestFailover: it creates two PostgreSQL clusters of
// its own (initdb on free ports, never the machine's cluster), takes a
// minute or more and most of two cores, so it runs on demand:
//
//	TIDELINE_RELIABILITY_FAILOVER=1 go test ./reliability -run TestFailover -count=1 -v -timeout 20m
//
// TIDELINE_RELIABILITY_SCHEDULES sets how many schedules fire every second
// (default 300).
const EnvFailover = "TIDELINE_RELIABILITY_FAILOVER"

// pgBin is where Debian keeps PostgreSQL's server programs.
var pgBin = "/usr/lib/postgresql/15/bin"

// TestFailover (SPEC §20): a primary and a streaming standby of the test's
// own, two `tideline serve` replicas on the multi-host URL with
// target_session_attrs=read-write, N schedules firing every second, Go
// workers completing and failing runs, and an API client creating a
// schedule every 200 ms. The primary is stopped hard (`pg_ctl stop -m
// immediate`: no shutdown checkpoint, connections cut) and the standby
// promoted at once. The replicas must follow by themselves. Measured:
// time without fires, acknowledged creates and completions lost, fires
// lost, occurrences started twice, failed worker reports and 503s.
//
//   - synchronous replication (synchronous_standby_names = '*'): the
//     guarantee — no acknowledged write lost, no occurrence started twice
//     (asserted);
//   - asynchronous: what a commit not yet replayed on the standby loses,
//     measured and logged (docs/PRODUCTION.md states the bound).
func TestFailover(t *testing.T) {
	if os.Getenv(EnvFailover) != "1" {
		t.Skipf("set %s=1 to run (two private PostgreSQL clusters, a minute or more; docs/PRODUCTION.md)", EnvFailover)
	}
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		t.Fatalf("PostgreSQL server programs not found in %s: %v", pgBin, err)
	}
	// 1,000 a second is the aim; two shared cores bear 300 beside two
	// clusters, two replicas and the workers (docs/PRODUCTION.md).
	n := envInt(t, "TIDELINE_RELIABILITY_SCHEDULES", 300)
	for _, mode := range []string{"synchronous", "asynchronous"} {
		t.Run(mode, func(t *testing.T) { failover(t, mode == "synchronous", n) })
	}
}

func failover(t *testing.T, sync bool, n int) {
	primary := newCluster(t, "primary")
	primary.start(t)
	standby := primary.standby(t, "standby")
	if sync {
		primary.psql(t, "postgres", "ALTER SYSTEM SET synchronous_standby_names = '*'")
		primary.psql(t, "postgres", "SELECT pg_reload_conf()")
	}
	primary.psql(t, "postgres", "CREATE DATABASE tideline")
	waitFor(t, 30*time.Second, 50*time.Millisecond, "the standby streams", func() (bool, error) {
		out, err := primary.query("postgres", "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
		return out == "1", err
	})
	dbURL := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/tideline?sslmode=disable&target_session_attrs=read-write&connect_timeout=2&application_name=tideline",
		primary.port, standby.port)
	replicas := []*replica{
		newReplica(t, "replica-0", dbURL, "--loop-period", "100ms", "--fire-ahead", "1m", "--log-level", "warn"),
		newReplica(t, "replica-1", dbURL, "--loop-period", "100ms", "--fire-ahead", "1m", "--log-level", "warn"),
	}
	for _, r := range replicas {
		r.start()
	}
	db := openDB(t, strings.Replace(dbURL, "application_name=tideline", "application_name=verifier", 1))
	// n schedules fire on a queue no worker polls (two cores cannot also
	// run 1,000 runs a second to their end); 50 more feed the workers.
	seedIntervalSchedules(t, replicas[0], "fo", n, "nobody")
	seedIntervalSchedules(t, replicas[0], "fw", workerSchedules, "default")
	ctx := ctxTimeout(t)
	allFireAfter := func(what string, since time.Time, timeout time.Duration) {
		t.Helper()
		waitFor(t, timeout, 50*time.Millisecond, what, func() (bool, error) {
			fired, err := firedSince(ctx, db, "fo", since)
			return fired == int64(n), err
		})
	}
	allFireAfter("every schedule fires", time.Now(), 60*time.Second)
	tr, _ := startTraffic(t, []string{replicas[0].url(""), replicas[1].url("")}, 1)
	creator := startCreator(t, replicas)
	for range 3 { // steady state: three rounds of every schedule
		allFireAfter("steady firing", time.Now(), 30*time.Second)
	}

	stopped := time.Now()
	primary.pgctl(t, "stop", "-m", "immediate")
	standby.pgctl(t, "promote")
	promoted := time.Now()
	waitFor(t, 60*time.Second, 50*time.Millisecond, "every schedule fires on the promoted standby", func() (bool, error) {
		fired, err := firedSince(ctx, db, "fo", promoted)
		return fired == int64(n), err
	})
	allFireAfter("firing goes on", time.Now(), 30*time.Second)
	creator.stop()
	o := tr.settle(t, db, "fw")
	tr.stop()
	for _, r := range replicas {
		if !r.alive() {
			t.Fatalf("%s exited during the failover", r.name)
		}
	}

	// What the promoted database has, against what clients were told.
	lostCreates := 0
	for _, id := range creator.acknowledged() {
		if c, err := db.NewSelect().Model((*models.Schedule)(nil)).Where("schedule_id = ?", id).Count(ctx); err != nil || c != 1 {
			lostCreates++
		}
	}
	tr.mu.Lock()
	acked := make([]string, 0, len(tr.completed))
	for id := range tr.completed {
		acked = append(acked, id)
	}
	handedRuns := map[string]bool{}
	startedTwice := 0
	for _, runs := range tr.instances {
		if len(runs) > 1 {
			startedTwice++
		}
		for id := range runs {
			handedRuns[id] = true
		}
	}
	tr.mu.Unlock()
	lostCompletions, lostRuns := 0, 0
	for _, id := range acked {
		var status string
		err := db.NewSelect().Model((*models.Run)(nil)).Column("status").Where("id = ?", id).Scan(ctx, &status)
		if err != nil || (status != models.RunCompleted && status != models.RunFailed) {
			lostCompletions++
		}
	}
	for id := range handedRuns {
		if c, err := db.NewSelect().Model((*models.Run)(nil)).Where("id = ?", id).Count(ctx); err != nil || c != 1 {
			lostRuns++
		}
	}
	before, after := lastFireBefore(t, db, "fo", stopped), firstFireAfter(t, db, "fo", stopped)
	gap := after.Sub(before).Round(time.Millisecond)
	reportsFailed := len(grepLines(tr.logs.String(), "could not report"))
	mode := map[bool]string{true: "synchronous", false: "asynchronous"}[sync]
	t.Logf("%s, %d schedules every second: promoted %s after the stop; no fire for %s (last %s before the stop, first %s after); "+
		"acknowledged creates lost %d of %d (creates refused during the failover: %d); acknowledged completions lost %d of %d; "+
		"runs handed to workers and lost %d of %d; occurrences started twice %d; worker reports that failed for good %d; worker answers: %s; %s",
		mode, n, promoted.Sub(stopped).Round(time.Millisecond), gap, stopped.Sub(before).Round(time.Millisecond), after.Sub(stopped).Round(time.Millisecond),
		lostCreates, len(creator.acknowledged()), creator.refused.Load(), lostCompletions, len(acked), lostRuns, len(handedRuns),
		startedTwice, reportsFailed, tr.statusSummary(), o)
	if tr.status(500) > 0 {
		t.Errorf("workers got %d answers 500 (want 503 database_unavailable)", tr.status(500))
	}
	if creator.internal.Load() > 0 {
		t.Errorf("%d creates answered 500", creator.internal.Load())
	}
	for _, r := range replicas {
		r.stop()
	}
	// A commit a replica sent just before it exited may still be running
	// in its backend: verify once every replica backend is gone.
	waitFor(t, 30*time.Second, 20*time.Millisecond, "the replicas' backends are gone", func() (bool, error) {
		out, err := standby.query("tideline", "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tideline'")
		return out == "0", err
	})
	if sync {
		if lostCreates > 0 || lostCompletions > 0 || lostRuns > 0 || startedTwice > 0 {
			t.Errorf("synchronous replication: %d creates, %d completions, %d runs lost, %d occurrences started twice; want none",
				lostCreates, lostCompletions, lostRuns, startedTwice)
		}
		stats := verifyExactlyOnce(t, db, "fo")
		t.Logf("verified: %s; workers' schedules: %s", stats, verifyExactlyOnce(t, db, "fw"))
		if t.Failed() {
			dumpSchedule(t, db, "fo-0012")
		}
	}
}

// dumpSchedule logs one schedule's row, runs and audit events (a failed
// verification's evidence).
func dumpSchedule(t testing.TB, db *bun.DB, id string) {
	ctx := ctxTimeout(t)
	var row []map[string]any
	_ = db.NewRaw("SELECT fires_count, last_sequence, next_fire_at, last_fired_at, updated_at FROM workflow_schedules WHERE schedule_id = ?", id).Scan(ctx, &row)
	t.Logf("schedule %s: %v", id, row)
	var runs []map[string]any
	_ = db.NewRaw(`SELECT r.id, r.occurrence_time, r.created_at, r.trigger_number, r.trigger, r.status FROM workflow_runs r
		JOIN workflow_schedules s ON s.id = r.workflow_schedule_id WHERE s.schedule_id = ? ORDER BY r.created_at`, id).Scan(ctx, &runs)
	for _, r := range runs {
		t.Logf("  run %v", r)
	}
	var events []map[string]any
	_ = db.NewRaw(`SELECT e.sequence, e.event_type, e.occurrence_time, e.recorded_at, e.trigger_number FROM workflow_schedule_history_events e
		JOIN workflow_schedules s ON s.id = e.workflow_schedule_id WHERE s.schedule_id = ? ORDER BY e.sequence`, id).Scan(ctx, &events)
	for _, e := range events {
		t.Logf("  event %v", e)
	}
}

// workerSchedules is how many schedules of TestFailover feed its workers.
const workerSchedules = 50

// seedIntervalSchedules creates n PT1S allow_all schedules on a queue with
// 8 clients at once (n may be a thousand).
func seedIntervalSchedules(t testing.TB, r *replica, prefix string, n int, queue string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := atomic.Int64{}
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				body := map[string]any{
					"schedule_id": fmt.Sprintf("%s-%04d", prefix, i), "overlap_policy": "allow_all",
					"spec":   map[string]any{"intervals": []map[string]string{{"every": "PT1S"}}},
					"action": map[string]any{"workflow_type": "reliability"}, "queue": queue,
				}
				if _, err := r.do(http.MethodPost, "/waterline/api/v2/schedules", body, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// creator is an API client (package client) creating a schedule every
// 200 ms, alternating between the replicas, that remembers which creates
// were acknowledged.
type creator struct {
	cancel   context.CancelFunc
	done     sync.WaitGroup
	mu       sync.Mutex
	acked    []string
	refused  atomic.Int64 // answered 503 (or not reached)
	internal atomic.Int64 // answered 500
}

func startCreator(t testing.TB, replicas []*replica) *creator {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &creator{cancel: cancel}
	clients := make([]*tlclient.Client, len(replicas))
	for i, r := range replicas {
		cl, err := tlclient.New(r.url(""))
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = cl
	}
	c.done.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			id := fmt.Sprintf("created-%05d", i)
			_, err := clients[i%len(clients)].CreateSchedule(ctx, apijson.CreateSchedule{
				ScheduleID: id, Cron: "0 0 1 1 *", Action: apijson.Action{WorkflowType: "created"},
			})
			var apiErr *tlclient.Error
			switch {
			case err == nil:
				c.mu.Lock()
				c.acked = append(c.acked, id)
				c.mu.Unlock()
			case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusInternalServerError:
				c.internal.Add(1)
			case ctx.Err() == nil:
				c.refused.Add(1)
			}
		}
	})
	return c
}

func (c *creator) stop() {
	c.cancel()
	c.done.Wait()
}

func (c *creator) acknowledged() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.acked...)
}

// lastFireBefore and firstFireAfter bracket the failover by the runs' own
// creation times in the promoted database.
func lastFireBefore(t testing.TB, db *bun.DB, prefix string, at time.Time) time.Time {
	t.Helper()
	var ts time.Time
	err := db.NewRaw(`SELECT max(r.created_at) FROM workflow_runs r JOIN workflow_schedules s ON s.id = r.workflow_schedule_id
		WHERE s.schedule_id LIKE ? AND r.created_at <= ?`, prefix+"-%", at).Scan(ctxTimeout(t), &ts)
	if err != nil {
		t.Fatalf("last fire before the stop: %v", err)
	}
	return ts
}

func firstFireAfter(t testing.TB, db *bun.DB, prefix string, at time.Time) time.Time {
	t.Helper()
	var ts time.Time
	err := db.NewRaw(`SELECT min(r.created_at) FROM workflow_runs r JOIN workflow_schedules s ON s.id = r.workflow_schedule_id
		WHERE s.schedule_id LIKE ? AND r.created_at > ?`, prefix+"-%", at).Scan(ctxTimeout(t), &ts)
	if err != nil {
		t.Fatalf("first fire after the stop: %v", err)
	}
	return ts
}

// cluster is a PostgreSQL cluster of the test's own, run as user postgres.
type cluster struct {
	name, dir string
	port      int
	cred      *syscall.Credential
}

// newCluster initdb's a cluster on a free port, ready for a streaming
// standby; it is stopped (immediate) and removed at cleanup.
func newCluster(t testing.TB, name string) *cluster {
	t.Helper()
	c := &cluster{name: name, port: freePort(t), cred: postgresCredential(t)}
	c.dir = privateDir(t, c.cred)
	c.run(t, filepath.Join(pgBin, "initdb"), "-D", c.dir, "-U", "postgres", "-A", "trust", "--no-sync")
	c.configure(t)
	if err := os.WriteFile(filepath.Join(c.dir, "pg_hba.conf"), []byte(
		"local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication postgres 127.0.0.1/32 trust\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.chown(t, filepath.Join(c.dir, "pg_hba.conf"))
	return c
}

// configure appends the settings of this cluster's port and socket.
func (c *cluster) configure(t testing.TB) {
	t.Helper()
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nwal_level = replica\n"+
		"max_wal_senders = 5\nhot_standby = on\nmax_connections = 200\nfsync = off\nfull_page_writes = off\n", c.port, c.dir)
	f, err := os.OpenFile(filepath.Join(c.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(conf); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) start(t testing.TB) {
	t.Helper()
	c.pgctl(t, "start", "-w", "-l", filepath.Join(c.dir, "server.log"))
	t.Cleanup(func() {
		cmd := exec.Command(filepath.Join(pgBin, "pg_ctl"), "-D", c.dir, "stop", "-m", "immediate")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		_ = cmd.Run()
	})
}

// standby makes a streaming standby of c by pg_basebackup and starts it.
func (c *cluster) standby(t testing.TB, name string) *cluster {
	t.Helper()
	s := &cluster{name: name, port: freePort(t), cred: c.cred}
	s.dir = privateDir(t, c.cred)
	_ = os.Remove(s.dir) // pg_basebackup creates it
	c.run(t, filepath.Join(pgBin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres",
		"-D", s.dir, "-R", "-X", "stream", "--no-sync")
	s.configure(t)
	s.start(t)
	return s
}

func (c *cluster) pgctl(t testing.TB, args ...string) {
	t.Helper()
	c.run(t, filepath.Join(pgBin, "pg_ctl"), append([]string{"-D", c.dir}, args...)...)
}

// psql runs one statement in database db.
func (c *cluster) psql(t testing.TB, db, stmt string) {
	t.Helper()
	if _, err := c.query(db, stmt); err != nil {
		t.Fatalf("%s: %s: %v", c.name, stmt, err)
	}
}

// query runs one statement and returns its unaligned output.
func (c *cluster) query(db, stmt string) (string, error) {
	cmd := exec.Command("psql", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres", "-d", db, "-tAc", stmt)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	return string(trimNewline(out)), nil
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// run runs a PostgreSQL program as the cluster's user.
func (c *cluster) run(t testing.TB, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	cmd.Dir = os.TempDir()
	started := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
	}
	if d := time.Since(started); d > time.Second {
		t.Logf("%s: %s %s took %s", c.name, filepath.Base(bin), args[len(args)-1], d.Round(time.Millisecond))
	}
}

func (c *cluster) chown(t testing.TB, path string) {
	t.Helper()
	if c.cred != nil {
		if err := os.Chown(path, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// postgresCredential is user postgres when the test runs as root (the
// server refuses root); nil otherwise (run as the current user).
func postgresCredential(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root needs user postgres for the private clusters: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// privateDir is an empty directory the cluster's user owns, removed at cleanup.
func privateDir(t testing.TB, cred *syscall.Credential) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tideline-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
