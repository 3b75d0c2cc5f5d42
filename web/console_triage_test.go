package web_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// The registry as a triage board (issue 37): a run pending with no worker
// makes its schedule stuck, with the queue and the wait on its row; fires
// skipped behind a running run make one skipping; every chip lists exactly
// the rows that carry its label, and the default order puts the failing,
// stuck and overdue first.
func TestConsoleRegistryTriage(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		for _, body := range []string{
			`{"schedule_id":"a-fine","cron":"0 0 1 1 *","action":{"workflow_type":"w"}}`,
			`{"schedule_id":"b-broken","cron":"0 0 1 1 *","overlap_policy":"allow_all","action":{"workflow_type":"w"}}`,
			`{"schedule_id":"c-legacy-export-nightly-for-the-accounting-team","cron":"0 0 1 1 *","overlap_policy":"skip","queue":"legacy","action":{"workflow_type":"legacy.Export"}}`,
			`{"schedule_id":"d-long","cron":"0 0 1 1 *","overlap_policy":"skip","action":{"workflow_type":"w"}}`,
		} {
			c.api.must(201, "POST", v2+"/schedules", body)
		}
		tr := c.api.must(200, "POST", v2+"/schedules/b-broken/trigger", "")
		c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":1}`)
		c.api.must(200, "POST", v2+"/worker/runs/"+tr["run_id"].(string)+"/fail", `{"worker_id":"w1","message":"ledger API answered 503: upstream maintenance window","type":"http"}`)
		// d-long: its run is claimed and goes on; a fire skips behind it.
		c.api.must(200, "POST", v2+"/schedules/d-long/trigger", "")
		c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":1}`)
		c.api.must(200, "POST", v2+"/schedules/d-long/trigger", "")
		// c-legacy…: a run on a queue no worker polls, fires skipped behind it.
		stuckRun := c.api.must(200, "POST", v2+"/schedules/c-legacy-export-nightly-for-the-accounting-team/trigger", "")["run_id"].(string)
		for range 3 {
			c.api.clock.Advance(5 * time.Minute)
			c.api.must(200, "POST", v2+"/schedules/c-legacy-export-nightly-for-the-accounting-team/trigger", "")
		}
		c.api.clock.Advance(5 * time.Minute)

		doc := c.page200("/waterline/schedules")
		require.Equal(t, []string{"b-broken", "c-legacy-export-nightly-for-the-accounting-team", "d-long", "a-fine"}, rowIDs(doc),
			"failing, stuck, skipping, then the rest")
		counts, _ := chipCounts(t, doc)
		require.Equal(t, map[string]string{"all": "4", "failing": "1", "stuck": "1", "overdue": "0", "skipping": "1", "paused": "0", "active": "4"}, counts)

		stuck := rowOf(doc, "c-legacy-export-nightly-for-the-accounting-team")
		require.Equal(t, "stuck", attrOf(t, stuck, "data-health"))
		require.Equal(t, "stuck", textOf(stuck.Find(tid("health-state"))))
		require.Equal(t, "c-legacy-export-nightly-for-the-accounting-team", textOf(stuck.Find(tid("schedule-link"))), "the whole ID")
		require.Equal(t, "pending 20 min — unclaimed on queue legacy", textOf(stuck.Find(tid("row-detail"))))
		require.Equal(t, "/waterline/runs/"+stuckRun, attrOf(t, stuck.Find(tid("row-detail-link")), "href"))
		require.Equal(t, "3", textOf(stuck.Find(tid("skips-count"))))

		long := rowOf(doc, "d-long")
		require.Equal(t, "skipping", textOf(long.Find(tid("health-state"))))
		require.Contains(t, textOf(long.Find(tid("row-detail"))), "fires skip behind a running run, started 20 min ago")
		broken := rowOf(doc, "b-broken")
		require.Equal(t, "ledger API answered 503: upstream maintenance window", textOf(broken.Find(tid("row-detail"))))
		require.Zero(t, rowOf(doc, "a-fine").Find(tid("row-detail")).Length(), "nothing to say about a healthy schedule")

		// Every chip lists the rows labelled with its state, and only those.
		for _, key := range []string{"failing", "stuck", "overdue", "skipping"} {
			href := attrOf(t, doc.Find(tid("health-chip")+`[data-chip="`+key+`"]`), "href")
			page := c.page200(href)
			rows := page.Find(tid("schedule-row"))
			require.Equal(t, counts[key], strconv.Itoa(rows.Length()), "the %s chip's count is its list's length", key)
			for _, row := range rows.EachIter() {
				require.Equal(t, key, textOf(row.Find(tid("health-state"))))
			}
			pageCounts, current := chipCounts(t, page)
			require.Equal(t, key, current)
			require.Equal(t, counts, pageCounts)
		}
		// The Failing view shows the error text.
		failing := c.page200("/waterline/schedules?health=failing")
		require.Equal(t, "ledger API answered 503: upstream maintenance window", textOf(failing.Find(tid("row-detail"))))

		// A worker claims the stuck run: it is skipping now, no longer stuck.
		c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w2","queue":"legacy","limit":1}`)
		doc = c.page200("/waterline/schedules?health=stuck")
		require.Zero(t, doc.Find(tid("schedule-row")).Length())
		counts, _ = chipCounts(t, doc)
		require.Equal(t, "0", counts["stuck"])
		require.Equal(t, "2", counts["skipping"])
	})
}

// The late-loop warning counts some of the Overdue chip's schedules and
// says both numbers; the row says overdue in full.
func TestConsoleLoopWarningAgreesWithOverdueChip(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"every-5","cron":"*/5 * * * *","action":{"workflow_type":"w"}}`)
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"every-1","cron":"* * * * *","action":{"workflow_type":"w"}}`)
		// 12:00 → 12:01:30: every-1 (12:01) is 30 s late, every-5 not due.
		c.api.clock.Advance(90 * time.Second)
		doc := c.page200("/waterline/schedules")
		counts, _ := chipCounts(t, doc)
		require.Equal(t, "1", counts["overdue"])
		require.Zero(t, doc.Find(tid("loop-warning")).Length(), "within the grace")
		require.Equal(t, "overdue", textOf(rowOf(doc, "every-1").Find(tid("overdue"))))
		// 12:05:50: every-1 is 4 min 50 s late, every-5 50 s.
		c.api.clock.Advance(4*time.Minute + 20*time.Second)
		doc = c.page200("/waterline/schedules")
		counts, _ = chipCounts(t, doc)
		require.Equal(t, "2", counts["overdue"])
		require.Contains(t, textOf(doc.Find(tid("loop-warning"))), "1 of the 2 overdue schedules is more than 1 min past its fire time")
	})
}

// /waterline/ (a trailing slash, typed or bookmarked) goes where /waterline
// goes.
func TestConsoleTrailingSlashRedirects(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		bare, slash := c.get("/waterline"), c.get("/waterline/")
		require.Equal(t, http.StatusSeeOther, bare.Status)
		require.Equal(t, bare.Status, slash.Status)
		require.Equal(t, "/waterline/schedules", slash.Header.Get("Location"))
		require.Equal(t, bare.Header.Get("Location"), slash.Header.Get("Location"))
	})
}

// Page titles name the schedule or run they show (issue 37, minor 15).
func TestConsolePageTitlesNameTheirObject(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"nightly-x","cron":"0 2 * * *","action":{"workflow_type":"w"}}`)
		runID := c.api.must(200, "POST", v2+"/schedules/nightly-x/trigger", "")["run_id"].(string)
		for path, want := range map[string]string{
			"/waterline/schedules":                   "Schedules",
			"/waterline/schedules/nightly-x":         "Schedule nightly-x",
			"/waterline/schedules/nightly-x/edit":    "Edit nightly-x",
			"/waterline/schedules/nightly-x/history": "History nightly-x",
			"/waterline/runs/" + runID:               "Run " + runID,
			"/waterline/runs":                        "Runs",
		} {
			p := c.get(path)
			require.Equal(t, http.StatusOK, p.Status, path)
			require.Equal(t, want+" · Tideline", p.Doc.Find("title").Text(), path)
		}
	})
}

// The runs list (issue 37, minors 10 and 12): each run's start in its
// schedule's zone under the "Schedule's zone" setting (UTC under "UTC"),
// on one line; its attempt out of the policy's; a failed run's error.
func TestConsoleRunsListZoneAttemptAndError(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"tokyo","spec":{"cron_expressions":["0 2 * * *"],"timezone":"Asia/Tokyo"},"overlap_policy":"allow_all","action":{"workflow_type":"w","retry_policy":{"max_attempts":3}}}`)
		runID := c.api.must(200, "POST", v2+"/schedules/tokyo/trigger", "")["run_id"].(string)
		c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":1}`)
		c.api.must(200, "POST", v2+"/worker/runs/"+runID+"/fail", `{"worker_id":"w1","message":"disk full","type":"io","non_retryable":true}`)

		row := func() *goquery.Selection {
			doc := c.page200("/waterline/runs")
			r := doc.Find(tid("run-row") + `[data-run-id="` + runID + `"]`)
			require.Equal(t, 1, r.Length())
			return r
		}
		r := row()
		// t0 is 2026-07-16 12:00 UTC: 21:00 in Tokyo.
		require.Equal(t, "2026-07-16 21:00 JST", textOf(r.Find(tid("run-started")).Find("time")), "in the schedule's zone")
		require.True(t, r.Find(tid("run-started")).Find("time").HasClass("nowrap"))
		require.Equal(t, "1 / 3", textOf(r.Find(tid("run-attempt"))))
		require.Equal(t, "io: disk full", textOf(r.Find(tid("run-error"))))
		require.Equal(t, "/waterline/runs/"+runID, attrOf(t, r.Find(tid("run-error")).Find("a"), "href"))

		require.Equal(t, http.StatusSeeOther, c.get("/waterline/time?pref=utc&return_to=/waterline/runs").Status)
		require.Equal(t, "2026-07-16 12:00 UTC", textOf(row().Find(tid("run-started")).Find("time")), "the UTC setting")
	})
}
