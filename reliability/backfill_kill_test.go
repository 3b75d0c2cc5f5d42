package reliability

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
)

// TestBackfillJobSurvivesKill is issue 33's acceptance on both databases:
// a backfill job of 12,000 occurrences, paced at 30,000 a minute, is
// running in `tideline serve` when the process is SIGKILLed mid-job (its
// worker is busy: a slice is most likely open at the kill). A new process
// on the same database takes the job up from its cursor and finishes it:
// every occurrence is started exactly once — each has one run, and none
// was skipped as already started (a slice worked twice would say so).
func TestBackfillJobSurvivesKill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "kill.db") }},
		{"postgres", func(t *testing.T) string { return dbtest.PostgresURL(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := tc.url(t)
			const total = 12_000
			a := newReplica(t, tc.name, url, "--loop-period", "100ms")
			a.start()
			schedule := createIntervalSchedules(t, a, "bk", 1, "PT1M")[0]
			type job struct {
				ID        string `json:"id"`
				Status    string `json:"status"`
				Total     int    `json:"total"`
				Started   int    `json:"started"`
				Skipped   int    `json:"skipped"`
				Failed    int    `json:"failed"`
				Remaining int    `json:"remaining"`
			}
			var created struct {
				Backfill job `json:"backfill"`
			}
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			status, err := a.do(http.MethodPost, "/waterline/api/v2/schedules/"+schedule+"/backfill", map[string]any{
				"from": from.Format(time.RFC3339), "to": from.Add(total * time.Minute).Format(time.RFC3339), "max_per_minute": 30_000,
			}, &created)
			if err != nil || status != http.StatusAccepted {
				t.Fatalf("start the backfill: %d %v", status, err)
			}
			if created.Backfill.Total != total || created.Backfill.Status != models.BackfillRunning {
				t.Fatalf("accepted job %+v, want %d occurrences running", created.Backfill, total)
			}
			read := func(r *replica) (job, error) {
				var out struct {
					Backfill job `json:"backfill"`
				}
				_, err := r.do(http.MethodGet, "/waterline/api/v2/backfills/"+created.Backfill.ID, nil, &out)
				return out.Backfill, err
			}
			var before job
			waitFor(t, 60*time.Second, 50*time.Millisecond, "the job a quarter done", func() (bool, error) {
				j, err := read(a)
				before = j
				return err == nil && j.Started >= total/4, err
			})
			a.kill()
			if before.Remaining == 0 {
				t.Fatalf("the job ended before the kill: %+v", before)
			}

			b := newReplica(t, tc.name+"-b", url, "--loop-period", "100ms")
			b.start()
			var after job
			waitFor(t, 120*time.Second, 200*time.Millisecond, "the job completed after the restart", func() (bool, error) {
				j, err := read(b)
				after = j
				return err == nil && j.Status != models.BackfillRunning, err
			})
			if after.Status != models.BackfillCompleted || after.Started != total || after.Skipped != 0 || after.Failed != 0 || after.Remaining != 0 {
				t.Fatalf("after the restart: %+v; want completed, %d started, none skipped or failed", after, total)
			}
			db := openDB(t, url)
			var runs, distinct int
			if err := db.NewSelect().TableExpr("workflow_runs").ColumnExpr("count(*), count(DISTINCT instance_id)").
				Where("schedule_id = ? AND trigger = 'backfilled'", schedule).Scan(ctxTimeout(t), &runs, &distinct); err != nil {
				t.Fatal(err)
			}
			if runs != total || distinct != total {
				t.Fatalf("%d backfilled runs (%d instances), want %d", runs, distinct, total)
			}
			t.Logf("killed at %d started of %d; the new process finished the job", before.Started, total)
		})
	}
}
