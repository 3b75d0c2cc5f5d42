package reliability

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// EnvUpgrade enables TestRollingUpgrade, which builds the previous
// release from git (half a minute or more on two cores):
//
//	TIDELINE_RELIABILITY_UPGRADE=1 go test ./reliability -run TestRollingUpgrade -count=1 -v
//
// EnvPrevious names the commit of the previous release (default
// previousRelease).
const (
	EnvUpgrade  = "TIDELINE_RELIABILITY_UPGRADE"
	EnvPrevious = "TIDELINE_RELIABILITY_PREVIOUS"
)

// previousRelease is the last commit before round 3's migrations (0013 on):
// the binary a rolling deploy of this round replaces.
const previousRelease = "90bbd7b"

// TestRollingUpgrade (SPEC §20): a replica of the previous release fires
// 20 schedules every second on an empty schema it migrated; a replica of
// this build starts beside it on the same database — applying this
// round's migrations while the old one fires — and both fire together for
// a while, then the old one is stopped and the new one fires alone, as a
// rolling deploy does. Every occurrence fired at most once and none lost
// beyond the missed-fire policy (whichever binary fired it), /readyz stays
// 200 on the old binary after the new migrations, and the audit history and
// runs of every schedule read the same through both binaries.
func TestRollingUpgrade(t *testing.T) {
	if os.Getenv(EnvUpgrade) != "1" {
		t.Skipf("set %s=1 to run: it builds the previous release (%s) from git (docs/PRODUCTION.md)", EnvUpgrade, previousRelease)
	}
	t.Parallel()
	commit := previousRelease
	if c := os.Getenv(EnvPrevious); c != "" {
		commit = c
	}
	started := time.Now()
	old := buildRelease(t, commit)
	t.Logf("built %s in %s", commit, time.Since(started).Round(time.Second))

	const n = 20
	url := dbtest.PostgresURL(t)
	db := openDB(t, url)
	oldR := newReplica(t, "old", url, "--loop-period", "100ms", "--fire-ahead", "1m")
	oldR.bin = old
	oldR.start()
	createIntervalSchedules(t, oldR, "up", n, "PT1S")
	ctx := ctxTimeout(t)
	allFire := func(what string) {
		t.Helper()
		since := time.Now()
		waitFor(t, 30*time.Second, 20*time.Millisecond, what, func() (bool, error) {
			fired, err := firedSince(ctx, db, "up", since)
			return fired == n, err
		})
	}
	allFire("the old release fires")

	newR := newReplica(t, "new", url, "--loop-period", "100ms", "--fire-ahead", "1m")
	newR.start() // migrates the schema while the old one fires
	for range 3 {
		allFire("both fire")
		if code, err := oldR.readyz(); code != http.StatusOK {
			t.Fatalf("old release /readyz after the new migrations: %d %v", code, err)
		}
	}
	for i := range n {
		id := fmt.Sprintf("up-%04d", i)
		for _, path := range []string{"/waterline/api/v2/schedules/" + id, "/waterline/api/v2/schedules/" + id + "/history?limit=5"} {
			var fromOld, fromNew map[string]any
			if _, err := oldR.do(http.MethodGet, path, nil, &fromOld); err != nil {
				t.Fatalf("old release reads %s: %v", path, err)
			}
			if _, err := newR.do(http.MethodGet, path, nil, &fromNew); err != nil {
				t.Fatalf("new release reads %s: %v", path, err)
			}
			if strings.HasSuffix(path, "history?limit=5") && fmt.Sprint(fromOld["events"]) != fmt.Sprint(fromNew["events"]) {
				t.Errorf("%s: the two releases serve different history:\nold %v\nnew %v", path, fromOld["events"], fromNew["events"])
			}
			// Both releases recorded actions (the old release in its
			// ten-row ring, this build in the schedule's ring since 0033):
			// this build reads every action whole, newest first.
			if actions, ok := fromNew["recent_actions"].([]any); ok && !strings.HasSuffix(path, "history?limit=5") {
				if len(actions) == 0 {
					t.Errorf("%s: no recent actions", path)
				}
				previous := ""
				for _, a := range actions {
					a := a.(map[string]any)
					if a["outcome"] != "scheduled" || !strings.HasPrefix(fmt.Sprint(a["instance_id"]), "schedule:"+id+":") || len(fmt.Sprint(a["run_id"])) != 26 {
						t.Errorf("%s: a recent action read incompletely: %v", path, a)
					}
					// RFC 3339 in UTC, so text order is time order.
					if occurrence := fmt.Sprint(a["occurrence_time"]); previous != "" && occurrence >= previous {
						t.Errorf("%s: recent actions out of order: %s after %s", path, occurrence, previous)
					} else {
						previous = occurrence
					}
				}
			}
		}
	}
	oldR.stop()
	allFire("the new release fires alone")
	newR.stop()
	stats := verifyExactlyOnce(t, db, "up")
	t.Logf("rolling upgrade %s → this build: %s", commit, stats)
}

// buildRelease builds the tideline binary of a commit from git (git archive
// into a temporary directory: no worktree left behind).
func buildRelease(t testing.TB, commit string) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("not in a git checkout: %v", err)
	}
	root := strings.TrimSpace(string(top))
	dir := t.TempDir()
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive %s | tar -x -C %q", root, commit, dir))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	bin := filepath.Join(dir, "tideline-"+commit)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", commit, err, out)
	}
	return bin
}
