package reliability

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// EnvPgBouncer set to "required" makes a missing pgbouncer binary fail
// TestPgBouncerTransactionPooling instead of skipping it; .ci/run sets it
// after installing Debian's pgbouncer.
const EnvPgBouncer = "TIDELINE_RELIABILITY_PGBOUNCER"

// TestPgBouncerTransactionPooling runs Tideline through PgBouncer 1.18 in
// transaction pooling mode (SPEC §20), started by the test on a port of its
// own: `serve` migrates an empty database through it, then fires 50
// schedules every second, with Go workers completing and failing runs and
// run_failed notifications posted — first with prepare-ahead off, then on
// (its default) — and the fires show every occurrence at most once and
// none lost. While it fires the test samples PgBouncer's SHOW POOLS, so
// the cost of prepare-ahead's open transactions in server connections is
// measured (docs/PRODUCTION.md).
func TestPgBouncerTransactionPooling(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin, err = exec.LookPath("/usr/sbin/pgbouncer") // Debian's, off a non-root PATH
	}
	if err != nil {
		if os.Getenv(EnvPgBouncer) == "required" {
			t.Fatalf("pgbouncer not found (%s=required): apt-get install -y pgbouncer", EnvPgBouncer)
		}
		t.Skipf("pgbouncer not installed (apt-get install -y pgbouncer; .ci/run installs it)")
	}
	const poolSize = 10
	dbName, admin := createDatabase(t)
	bouncer := startPgBouncer(t, bin, dbName, poolSize)
	dbURL := bouncer.url(dbName)
	db := openDB(t, dbURL)

	const n = 50
	type phase struct {
		name  string
		flags []string
		peak  pools
	}
	phases := []*phase{
		{name: "fire-ahead off", flags: []string{"--fire-ahead", "0"}},
		{name: "fire-ahead 1m", flags: []string{"--fire-ahead", "1m"}},
	}
	for i, ph := range phases {
		r := newReplica(t, fmt.Sprintf("serve-%d", i), dbURL, append([]string{"--loop-period", "100ms", "--allow-private-notifiers"}, ph.flags...)...)
		r.start()
		if i == 0 {
			createIntervalSchedules(t, r, "pb", n, "PT1S")
		}
		tr, receiver := startTraffic(t, []string{r.url("")}, 1)
		createNotifier(t, r, fmt.Sprintf("failures-%d", i), receiver)
		sampler := bouncer.sample(dbName, admin)
		ctx := ctxTimeout(t)
		since := time.Now()
		for round := range 8 {
			waitFor(t, 30*time.Second, 20*time.Millisecond, fmt.Sprintf("%s: every schedule fires (round %d)", ph.name, round), func() (bool, error) {
				fired, err := firedSince(ctx, db, "pb", since)
				return fired == n, err
			})
			since = time.Now()
		}
		ph.peak = sampler.stop()
		o := tr.settle(t, db, "pb")
		tr.stop()
		r.stop()
		if tr.status(500) > 0 || tr.status(503) > 0 {
			t.Errorf("%s: workers got errors through PgBouncer: %s", ph.name, tr.statusSummary())
		}
		t.Logf("%s: server connections in use: peak %d of the pool's %d; clients waiting for one: peak %d, longest wait %s; "+
			"held by an open transaction between statements (idle in transaction): peak %d, mean %.2f; %s",
			ph.name, ph.peak.serverActive, poolSize, ph.peak.clientsWaiting, ph.peak.maxWait, ph.peak.idleInTx, ph.peak.idleInTxMean, o)
	}
	// The final count reads the database directly, not through PgBouncer:
	// what is checked is what the replicas wrote through it. (PgBouncer 1.18
	// was seen to stop listening after the last replica shut down, once in
	// several runs under load; docs/PRODUCTION.md.)
	u, err := url.Parse(dbtest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + dbName
	u.RawQuery = "sslmode=disable" // not dbtest's per-test search_path: serve migrated the database's own schema
	stats := verifyExactlyOnce(t, openDB(t, u.String()), "pb")
	t.Logf("through PgBouncer (transaction pooling, pool %d): %s", poolSize, stats)
}

// createDatabase makes an empty database of the test's own on the test
// server (PgBouncer cannot carry dbtest's per-connection search_path: a
// startup parameter is a session's, and transaction pooling has none) and
// drops it at cleanup.
func createDatabase(t testing.TB) (string, *bun.DB) {
	t.Helper()
	base := dbtest.PostgresURL(t) // fails the test with the usual hint when unset
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "tl_" + hex.EncodeToString(b)
	admin := openDB(t, base)
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		_, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return name, admin
}

// pgBouncer is a pgbouncer process of the test's own.
type pgBouncer struct {
	t    testing.TB
	port int
	dir  string
}

// startPgBouncer runs pgbouncer as user postgres (it refuses root) in the
// foreground on a free port, pool_mode = transaction, in front of the test
// server, with default_pool_size poolSize.
func startPgBouncer(t testing.TB, bin, dbName string, poolSize int) *pgBouncer {
	t.Helper()
	server, err := url.Parse(os.Getenv(dbtest.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(server.Host)
	dir, err := os.MkdirTemp("", "tideline-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o777)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	ini := fmt.Sprintf(`[databases]
%s = host=%s port=%s dbname=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = %d
max_client_conn = 500
logfile = %s/pgbouncer.log
pidfile = %s/pgbouncer.pid
`, dbName, host, port, dbName, listen, dir, poolSize, dir, dir)
	for name, body := range map[string]string{"pgbouncer.ini": ini, "userlist.txt": `"postgres" ""` + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgbouncer refuses to run as root, and there is no user postgres: %v", err)
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	out, err := os.Create(filepath.Join(dir, "stdout.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("--- pgbouncer log ---\n%s", tail(filepath.Join(dir, "pgbouncer.log"), 30))
		}
	})
	b := &pgBouncer{t: t, port: listen, dir: dir}
	waitFor(t, 10*time.Second, 20*time.Millisecond, "pgbouncer accepts connections", func() (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("pgbouncer exited: %s", tail(out.Name(), 10))
		default:
		}
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", listen))
		if err == nil {
			_ = c.Close()
		}
		return err == nil, err
	})
	return b
}

// url is a Tideline database URL through the bouncer.
func (b *pgBouncer) url(dbName string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", b.port, dbName)
}

// pools is one database's line of SHOW POOLS, or the peak of several.
type pools struct {
	serverActive, clientsWaiting int
	maxWait                      time.Duration
	// idleInTx counts the server's backends of the database idle in a
	// transaction: a pool slot held while nothing runs on it (fire-ahead's
	// prepared sets waiting for their instant).
	idleInTx     int
	idleInTxMean float64
	samples      int
}

type poolSampler struct {
	stopCh chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	peak   pools
}

// sample reads SHOW POOLS on the admin console and pg_stat_activity on the
// server (through admin, directly) every 20 ms until stop.
func (b *pgBouncer) sample(dbName string, admin *bun.DB) *poolSampler {
	s := &poolSampler{stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol", b.port))
		if err != nil {
			b.t.Errorf("pgbouncer admin console: %v", err)
			return
		}
		defer conn.Close(ctx)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stopCh:
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, "SHOW POOLS")
			if err != nil {
				b.t.Errorf("SHOW POOLS: %v", err)
				return
			}
			for rows.Next() {
				vals, err := rows.Values()
				if err != nil {
					continue
				}
				fields := rows.FieldDescriptions()
				col := map[string]any{}
				for i, f := range fields {
					col[f.Name] = vals[i]
				}
				if fmt.Sprint(col["database"]) != dbName {
					continue
				}
				active, _ := strconv.Atoi(fmt.Sprint(col["sv_active"]))
				waiting, _ := strconv.Atoi(fmt.Sprint(col["cl_waiting"]))
				waitS, _ := strconv.Atoi(fmt.Sprint(col["maxwait"]))
				waitUS, _ := strconv.Atoi(fmt.Sprint(col["maxwait_us"]))
				wait := time.Duration(waitS)*time.Second + time.Duration(waitUS)*time.Microsecond
				s.mu.Lock()
				s.peak.serverActive = max(s.peak.serverActive, active)
				s.peak.clientsWaiting = max(s.peak.clientsWaiting, waiting)
				s.peak.maxWait = max(s.peak.maxWait, wait)
				s.mu.Unlock()
			}
			rows.Close()
			var idle int
			if err := admin.NewRaw("SELECT count(*) FROM pg_stat_activity WHERE datname = ? AND state = 'idle in transaction'", dbName).Scan(ctx, &idle); err == nil {
				s.mu.Lock()
				s.peak.idleInTx = max(s.peak.idleInTx, idle)
				s.peak.idleInTxMean += float64(idle)
				s.peak.samples++
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *poolSampler) stop() pools {
	close(s.stopCh)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peak.samples > 0 {
		s.peak.idleInTxMean /= float64(s.peak.samples)
	}
	return s.peak
}
