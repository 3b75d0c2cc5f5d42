package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// The console shows health where operators look: the registry row's strip
// of recent runs with the failures in a row and the latest error, the
// detail page's retry policy and pause-after, and the run's attempts.
func TestConsoleShowsHealthAndAttempts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"flaky","cron":"0 0 1 1 *","overlap_policy":"allow_all","pause_after_failures":3,
			"action":{"workflow_type":"w","retry_policy":{"max_attempts":2,"initial_interval_seconds":5}}}`)
		var runIDs []string
		for _, ok := range []bool{true, false} {
			tr := c.api.must(200, "POST", v2+"/schedules/flaky/trigger", "")
			runID := tr["run_id"].(string)
			runIDs = append(runIDs, runID)
			for attempt := 1; attempt <= 2; attempt++ {
				c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":1}`)
				if ok {
					c.api.must(200, "POST", v2+"/worker/runs/"+runID+"/complete", `{"worker_id":"w1"}`)
					break
				}
				c.api.must(200, "POST", v2+"/worker/runs/"+runID+"/fail", `{"worker_id":"w1","message":"disk full","type":"io"}`)
				c.api.clock.Advance(5e9)
			}
		}

		row := rowOf(c.page200("/waterline/schedules"), "flaky")
		strip := row.Find(tid("run-strip"))
		dots := strip.Find("[data-status]")
		require.Equal(t, 2, dots.Length())
		require.Equal(t, "completed", attrOf(t, dots.Eq(0), "data-status"), "oldest first")
		require.Equal(t, "failed", attrOf(t, dots.Eq(1), "data-status"))
		require.Equal(t, "/waterline/runs?schedule_id=flaky", attrOf(t, strip, "href"), "the strip is one touch target, to the schedule's runs")
		require.Equal(t, "Last 2 runs, oldest first: completed, failed. All runs of this schedule", attrOf(t, strip, "aria-label"))
		require.Zero(t, strip.Find("a").Length(), "no link per square (axe target-size)")
		require.Equal(t, "1 failure in a row", textOf(row.Find(tid("consecutive-failures"))))
		require.Equal(t, "disk full", textOf(row.Find(tid("row-detail"))), "the latest error is on the row, not in a tooltip")
		require.Equal(t, "/waterline/runs/"+runIDs[1], attrOf(t, row.Find(tid("row-detail-link")), "href"))
		require.Equal(t, "failing", textOf(row.Find(tid("health-state"))))

		detail := c.page200("/waterline/schedules/flaky")
		require.Equal(t, "2 attempts, backoff 5 s × 2.0 up to 500 s", textOf(detail.Find(tid("fact-retry-policy"))))
		require.Equal(t, "3 consecutive failures", textOf(detail.Find(tid("fact-pause-after-failures"))))
		require.Equal(t, "failed", attrOf(t, detail.Find(tid("last-run")).Find(tid("status-badge")), "data-status"))

		run := c.page200("/waterline/runs/" + runIDs[1])
		attempts := run.Find(tid("attempt"))
		require.Equal(t, 2, attempts.Length())
		require.Contains(t, textOf(attempts.Eq(0)), "io: disk full")
		require.Equal(t, "failed", attrOf(t, attempts.Eq(1).Find(tid("status-badge")), "data-status"))
		require.Contains(t, textOf(run.Find(tid("run-history"))), "attempt 1 failed: io: disk full; next attempt at")
		require.Contains(t, textOf(run.Find(tid("run-history"))), "attempt 2 failed: io: disk full; no attempt follows")
		require.Zero(t, run.Find(tid("run-autorefresh")).Length(), "a finished run's page does not poll")

		// An active run's page polls itself for the live region.
		tr := c.api.must(200, "POST", v2+"/schedules/flaky/trigger", "")
		live := c.page200("/waterline/runs/" + tr["run_id"].(string))
		poll := live.Find(tid("run-live") + " " + tid("run-autorefresh"))
		require.Equal(t, "/waterline/runs/"+tr["run_id"].(string), attrOf(t, poll, "hx-get"))
		require.Equal(t, "#run-live", attrOf(t, poll, "hx-select"))
	})
}

// The create and edit form carry the retry policy and pause_after_failures:
// field errors land on their inputs, and an edit lists the change.
func TestConsoleFormRetryFields(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		base := url.Values{"schedule_id": {"retrying"}, "cron_expressions": {"0 * * * *"}, "workflow_type": {"w"}}
		bad := url.Values{}
		for k, v := range base {
			bad[k] = v
		}
		bad.Set("retry_policy.max_attempts", "0")
		bad.Set("retry_policy.backoff_coefficient", "fast")
		bad.Set("pause_after_failures", "101")
		p := c.post("/waterline/schedules", bad)
		require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
		require.Equal(t, "must be a number, e.g. 2.0", fieldError(p.Doc, "retry_policy.backoff_coefficient"))

		bad.Set("retry_policy.backoff_coefficient", "2.5")
		p = c.post("/waterline/schedules", bad)
		require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
		require.Contains(t, fieldError(p.Doc, "retry_policy.max_attempts"), "between 1 and 100")
		require.Contains(t, fieldError(p.Doc, "pause_after_failures"), "between 1 and 100")

		good := bad
		good.Set("retry_policy.max_attempts", "3")
		good.Set("retry_policy.non_retryable_error_types", "bad_input\nforbidden")
		good.Set("pause_after_failures", "4")
		good.Set("start_deadline_seconds", "900")
		seeOther(t, c.post("/waterline/schedules", good))
		s := c.api.must(200, "GET", "/waterline/api/v2/schedules/retrying", "")
		require.Equal(t, map[string]any{"max_attempts": 3.0, "initial_interval_seconds": 1.0, "backoff_coefficient": 2.5,
			"max_interval_seconds": 100.0, "non_retryable_error_types": []any{"bad_input", "forbidden"}}, s["action"].(map[string]any)["retry_policy"])
		require.EqualValues(t, 4, s["pause_after_failures"])
		require.EqualValues(t, 900, s["start_deadline_seconds"])

		edit := c.page200("/waterline/schedules/retrying/edit")
		require.Equal(t, "3", attrOf(t, edit.Find(tid("input-retry_policy.max_attempts")), "value"), "the edit form shows the stored policy")
		form := formValues(edit.Find(tid("schedule-form")))
		form.Set("pause_after_failures", "")
		seeOther(t, c.post("/waterline/schedules/retrying/edit", form))
		s = c.api.must(200, "GET", "/waterline/api/v2/schedules/retrying", "")
		require.Nil(t, s["pause_after_failures"], "emptied: never pause")
		require.NotNil(t, s["action"].(map[string]any)["retry_policy"], "an unchanged policy stays")
		h := c.history("default", "retrying")
		require.Equal(t, []any{"pause_after_failures"}, h[len(h)-1]["payload"].(map[string]any)["changed_fields"])
	})
}

// The header's time setting shows every time of the console in the
// schedule's zone (default), UTC, or (converted in the browser) local.
func TestConsoleTimeSetting(t *testing.T) {
	t.Parallel()
	c := newConsole(t, dbtest.SQLite(t), "")
	c.create("default", dailyBody) // 02:30 America/New_York
	next := func() string {
		t.Helper()
		return textOf(rowOf(c.page200("/waterline/schedules"), "daily-sync").Find(tid("next-fire")).Find("time"))
	}
	require.Equal(t, "2026-07-17 02:30 EDT", next(), "by default, the schedule's zone")
	doc := c.page200("/waterline/schedules")
	require.Equal(t, "/waterline/schedules", attrOf(t, doc.Find(tid("time-setting")).Find(`input[name="return_to"]`), "value"))

	p := c.get("/waterline/time?pref=utc&return_to=/waterline/schedules/daily-sync")
	require.Equal(t, "/waterline/schedules/daily-sync", seeOther(t, p))
	require.Equal(t, "2026-07-17 06:30 UTC", next(), "kept across pages")
	require.Equal(t, "utc", attrOf(t, c.page200("/waterline/schedules/daily-sync").Find(tid("time-pref")).Find("option[selected]"), "value"))

	seeOther(t, c.get("/waterline/time?pref=local&return_to=/waterline/schedules"))
	doc = c.page200("/waterline/schedules")
	require.Equal(t, "local", attrOf(t, doc.Find("body"), "data-time"), "the browser converts; the server renders UTC")
	require.Equal(t, "2026-07-17 06:30 UTC", next())

	seeOther(t, c.get("/waterline/time?pref=&return_to=https://evil.example/"))
	require.Equal(t, "2026-07-17 02:30 EDT", next())
	require.Equal(t, http.StatusUnprocessableEntity, c.get("/waterline/time?pref=mars").Status)
}

// Issue 36, finding 10: /waterline/time checked return_to by prefix only,
// weaker than the console's shared rule (localPath): a path that leaves
// the console once resolved, reaches the API, or carries a backslash is
// not followed.
func TestConsoleTimeSettingReturnsOnlyToConsolePages(t *testing.T) {
	t.Parallel()
	c := newConsole(t, dbtest.SQLite(t), "")
	for _, back := range []string{
		"/waterline/../evil", "/waterline/..%2F..%2Fevil", "/waterline/api/v2/tick",
		"/waterline/%5C%5Cevil.example", "//evil.example/", "https://evil.example/",
	} {
		require.Equal(t, "/waterline/schedules", seeOther(t, c.get("/waterline/time?pref=utc&return_to="+back)), back)
	}
	require.Equal(t, "/waterline/runs?status=failed", seeOther(t, c.get("/waterline/time?pref=utc&return_to=%2Fwaterline%2Fruns%3Fstatus%3Dfailed")))
}
