package reliability

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// EnvPGRestart enables TestPostgresRestart. It restarts the machine's
// shared PostgreSQL, which breaks any other test using it at that moment,
// so CI runs it as a separate step after the main suite:
//
//	TIDELINE_RELIABILITY_PG_RESTART=1 go test ./reliability -run TestPostgresRestart -count=1 -v
const EnvPGRestart = "TIDELINE_RELIABILITY_PG_RESTART"

// EnvPGCluster names the cluster to restart as "VERSION NAME" (default: the
// one version under /etc/postgresql, cluster "main"). Point it, together
// with TIDELINE_TEST_DATABASE_URL, at a private cluster to run the test
// without disturbing anything else.
const EnvPGCluster = "TIDELINE_RELIABILITY_PG_CLUSTER"

// TestPostgresRestart checks that the scheduling loop rides out PostgreSQL
// going away, by itself:
//
//  1. Two replicas fire 20 schedules every second.
//  2. `pg_ctlcluster … restart` (fast shutdown: every session is cut, open
//     transactions roll back) while they fire. Every schedule fires again
//     afterwards, with no restart of the replicas.
//  3. `pg_ctlcluster … stop`: both replicas' /readyz answer 503 while the
//     database is down; after `… start` they answer 200 again and every
//     schedule fires again. Each replica's loop counted failed passes
//     (tideline_loop_pass_errors_total > 0) and kept going.
//  4. The database shows no occurrence fired twice and none lost beyond the
//     missed-fire policy (verifyExactlyOnce).
func TestPostgresRestart(t *testing.T) {
	if os.Getenv(EnvPGRestart) != "1" {
		t.Skipf("set %s=1 to run: it restarts the shared PostgreSQL cluster (%s), which breaks other tests running at the same time; "+
			"CI runs it as its own step after the main suite (docs/RELIABILITY.md)", EnvPGRestart, strings.Join(pgctl(t, "restart").Args, " "))
	}
	const n = 20
	url := dbtest.PostgresURL(t)
	db := openDB(t, url)
	replicas := []*replica{
		newReplica(t, "replica-0", url, "--loop-period", "100ms", "--log-level", "warn"),
		newReplica(t, "replica-1", url, "--loop-period", "100ms", "--log-level", "warn"),
	}
	for _, r := range replicas {
		r.start()
	}
	createIntervalSchedules(t, replicas[0], "pg", n, "PT1S")
	ctx := ctxTimeout(t)
	allFireAfter := func(what string, since time.Time) {
		t.Helper()
		waitFor(t, 60*time.Second, 50*time.Millisecond, what, func() (bool, error) {
			fired, err := firedSince(ctx, db, "pg", since)
			return fired == n, err
		})
	}
	allReady := func(want int, what string) {
		t.Helper()
		waitFor(t, 60*time.Second, 20*time.Millisecond, what, func() (bool, error) {
			for _, r := range replicas {
				if code, err := r.readyz(); code != want {
					return false, fmt.Errorf("%s /readyz: %d %v", r.name, code, err)
				}
			}
			return true, nil
		})
	}
	allFireAfter("every schedule fires", time.Now().Add(time.Second))

	// A restart while the loop fires.
	runPGCtl(t, "restart")
	allReady(http.StatusOK, "/readyz 200 after the restart")
	allFireAfter("every schedule fires after the restart", time.Now().Add(time.Second))
	before, _ := totalFires(ctx, db, "pg")

	// An outage long enough to watch.
	runPGCtl(t, "stop")
	stopped := true
	t.Cleanup(func() {
		if stopped {
			runPGCtl(t, "start")
		}
	})
	allReady(http.StatusServiceUnavailable, "/readyz 503 while PostgreSQL is down")
	outage := time.NewTimer(3 * time.Second) // the fault's length, not a wait for a condition
	<-outage.C
	for _, r := range replicas {
		if code, _ := r.readyz(); code != http.StatusServiceUnavailable {
			t.Errorf("%s /readyz during the outage: %d, want 503", r.name, code)
		}
		if !r.running() {
			t.Fatalf("%s exited during the outage", r.name)
		}
	}
	runPGCtl(t, "start")
	stopped = false
	allReady(http.StatusOK, "/readyz 200 after PostgreSQL is back")
	allFireAfter("every schedule fires after the outage", time.Now().Add(time.Second))
	after, _ := totalFires(ctx, db, "pg")
	for _, r := range replicas {
		failed, err := r.metric("tideline_loop_pass_errors_total")
		if err != nil {
			t.Fatal(err)
		}
		if failed == 0 {
			t.Errorf("%s counted no failed loop pass: did its loop run during the outage?", r.name)
		}
		t.Logf("%s: %v failed loop passes during the faults", r.name, failed)
	}
	for _, r := range replicas {
		r.stop()
	}
	stats := verifyExactlyOnce(t, db, "pg")
	t.Logf("verified: %s; %d fires after the outage", stats, after-before)
}

// pgctl is the pg_ctlcluster command for an action on the cluster under test.
func pgctl(t testing.TB, action string) *exec.Cmd {
	t.Helper()
	cluster := strings.Fields(os.Getenv(EnvPGCluster))
	if len(cluster) == 0 {
		entries, err := os.ReadDir("/etc/postgresql")
		version := "15"
		if err == nil {
			for _, e := range entries {
				if _, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
					version = e.Name()
				}
			}
		}
		cluster = []string{version, "main"}
	}
	if len(cluster) != 2 {
		t.Fatalf("%s=%q: want \"VERSION NAME\", e.g. \"15 main\"", EnvPGCluster, os.Getenv(EnvPGCluster))
	}
	return exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", cluster[0], cluster[1], action)
}

func runPGCtl(t testing.TB, action string) {
	t.Helper()
	cmd := pgctl(t, action)
	started := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	t.Logf("%s took %s", strings.Join(cmd.Args, " "), time.Since(started).Round(time.Millisecond))
}
