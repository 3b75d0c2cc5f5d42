package reliability

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// TestConnectionLoss terminates every PostgreSQL backend of two replicas
// (pg_terminate_backend: the loop's passes, the preparer's open
// transactions, the notification dispatcher, workers' long polls and
// reports, pooled idle connections) every 2 s while they fire 50 schedules
// every second, with prepare-ahead on, Go workers completing and failing
// runs and run_failed notifications flowing. Every time, every schedule
// fires again with no restart; afterwards nothing fired twice or was lost
// beyond the missed-fire policy, every run ended and every notification
// was delivered, no worker got a 500, the replicas never exited, and each
// logged the lost connection at WARN (never ERROR), at most once per kill,
// and counted it in tideline_database_connection_lost_total.
//
// CI size: 8 kills. TIDELINE_RELIABILITY_KILLS sets another count.
func TestConnectionLoss(t *testing.T) {
	t.Parallel()
	kills := envInt(t, "TIDELINE_RELIABILITY_KILLS", 8)
	const n = 50
	dbURL, app := withApplicationName(t, dbtest.PostgresURL(t))
	db := openDB(t, dbURL)
	replicas := []*replica{
		newReplica(t, "replica-0", dbURL, "--loop-period", "100ms", "--fire-ahead", "1m", "--allow-private-notifiers"),
		newReplica(t, "replica-1", dbURL, "--loop-period", "100ms", "--fire-ahead", "1m", "--allow-private-notifiers"),
	}
	for _, r := range replicas {
		r.start()
	}
	createIntervalSchedules(t, replicas[0], "cl", n, "PT1S")
	tr, receiver := startTraffic(t, []string{replicas[0].url(""), replicas[1].url("")}, 1)
	createNotifier(t, replicas[0], "failures", receiver)
	ctx := ctxTimeout(t)
	allFireAfter := func(what string, since time.Time) {
		t.Helper()
		waitFor(t, 30*time.Second, 20*time.Millisecond, what, func() (bool, error) {
			fired, err := firedSince(ctx, db, "cl", since)
			return fired == n, err
		})
	}
	allFireAfter("every schedule fires", time.Now())

	var terminated int
	for i := range kills {
		killed := terminateBackends(t, db, app)
		terminated += killed
		allFireAfter(fmt.Sprintf("every schedule fires after kill %d", i+1), time.Now().Add(time.Second))
	}
	o := tr.settle(t, db, "cl")
	tr.stop()
	for _, r := range replicas {
		if !r.alive() {
			t.Fatalf("%s exited during the kills", r.name)
		}
		lost, err := r.metric("tideline_database_connection_lost_total")
		if err != nil {
			t.Fatal(err)
		}
		logText, _ := os.ReadFile(r.log.Name())
		warned := strings.Count(string(logText), `msg="database connection lost`)
		if errLines := grepLines(string(logText), "level=ERROR"); len(errLines) > 0 {
			t.Errorf("%s logged %d ERRORs, e.g. %s", r.name, len(errLines), errLines[0])
		}
		if lost > float64(kills) || warned > kills {
			t.Errorf("%s: %v outages counted, %d WARNs for %d kills; want at most one each per kill", r.name, lost, warned, kills)
		}
		t.Logf("%s: %v connection losses counted, %d logged", r.name, lost, warned)
	}
	if n := tr.status(500); n > 0 {
		t.Errorf("workers got %d answers 500", n)
	}
	if o.Runs == 0 || o.Failed == 0 {
		t.Errorf("traffic: %s; want completed and failed runs", o)
	}
	for _, r := range replicas {
		r.stop()
	}
	stats := verifyExactlyOnce(t, db, "cl")
	gap := longestGap(t, db, "cl")
	t.Logf("%d kills, %d backends terminated; %s; %s; worker answers: %s; longest time without a fire %s",
		kills, terminated, stats, o, tr.statusSummary(), gap)
}

// withApplicationName tags every connection of the URL with a name of the
// test's own, so the test can find (and kill) exactly those backends.
func withApplicationName(t testing.TB, raw string) (string, string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	app := "tl-" + hex.EncodeToString(b)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), app
}

// terminateBackends kills every backend named app but the caller's own.
func terminateBackends(t testing.TB, db *bun.DB, app string) int {
	t.Helper()
	var killed []bool
	err := db.NewRaw(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = ? AND pid <> pg_backend_pid()`, app).Scan(ctxTimeout(t), &killed)
	if err != nil {
		t.Fatalf("terminate backends: %v", err)
	}
	return len(killed)
}

// longestGap is the longest time between two consecutive fires of the
// prefix's schedules (by the runs' creation), the "time without fires".
func longestGap(t testing.TB, db *bun.DB, prefix string) time.Duration {
	t.Helper()
	var gap float64
	err := db.NewRaw(`SELECT COALESCE(max(d), 0) FROM (
		SELECT extract(epoch FROM r.created_at - lag(r.created_at) OVER (ORDER BY r.created_at)) AS d
		FROM workflow_runs r JOIN workflow_schedules s ON s.id = r.workflow_schedule_id
		WHERE s.schedule_id LIKE ?) g`, prefix+"-%").Scan(ctxTimeout(t), &gap)
	if err != nil {
		t.Fatalf("longest gap: %v", err)
	}
	return time.Duration(gap * float64(time.Second)).Round(time.Millisecond)
}

func grepLines(text, needle string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, needle) {
			out = append(out, line)
		}
	}
	return out
}
