package web_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/views"
)

// Issue 37, major 6, through the real router without JavaScript: a failed
// run's page offers Retry now and Run again; each posts, redirects and
// says what it did; the runs list filtered to failed runs offers "Retry
// all matching", which retries every matching run.
func TestConsoleRetriesFailedRuns(t *testing.T) {
	t.Parallel()
	require.Equal(t, scheduling.MaxRetryMatching, views.RetryMatchingLimit, "the page states the service's bound")
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", `{"schedule_id":"flaky","cron":"0 0 1 1 *","overlap_policy":"allow_all","action":{"workflow_type":"w","input":{"day":"2026-07-15"}}}`)
		// Each run end at a time of its own, as on a real clock (a run's
		// end is keyed by when it ended).
		fail := func() string {
			c.api.clock.Advance(time.Second)
			tr := c.api.must(200, "POST", v2+"/schedules/flaky/trigger", "")
			c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":10}`)
			runID := tr["run_id"].(string)
			c.api.must(200, "POST", v2+"/worker/runs/"+runID+"/fail", `{"worker_id":"w1","message":"disk full","type":"io"}`)
			return runID
		}
		first := fail()

		doc := c.page200("/waterline/runs/" + first)
		require.Equal(t, 1, doc.Find(tid("run-retry")).Length())
		require.Equal(t, 1, doc.Find(tid("run-again")).Length())
		require.Zero(t, doc.Find(tid("run-cancel")).Length(), "a finished run has nothing to cancel")

		p := c.post("/waterline/runs/"+first+"/retry", formValues(doc.Find(tid("run-retry-form"))))
		require.Equal(t, "/waterline/runs/"+first, seeOther(t, p))
		doc = c.page200("/waterline/runs/" + first)
		require.Contains(t, textOf(doc.Find(tid("flash"))), "Retried")
		require.Equal(t, "pending", attrOf(t, doc.Find("#run-head-status [data-status]"), "data-status"))
		require.Zero(t, doc.Find(tid("run-retry")).Length(), "pending: nothing to retry")
		p = c.post("/waterline/runs/"+first+"/retry", url.Values{})
		require.Equal(t, "/waterline/runs/"+first, seeOther(t, p), "a second retry is refused with a message, not an error page")
		require.Contains(t, textOf(c.page200("/waterline/runs/"+first).Find(tid("flash"))), "only a failed or timed-out run can be retried")

		second := fail()
		doc = c.page200("/waterline/runs/" + second)
		p = c.post("/waterline/runs/"+second+"/again", formValues(doc.Find(tid("run-again-form"))))
		fresh := seeOther(t, p)
		require.NotEqual(t, "/waterline/runs/"+second, fresh, "the new run's page")
		doc = c.page200(fresh)
		require.Contains(t, textOf(doc.Find(tid("flash"))), "Started again")
		require.Contains(t, doc.Text(), `"day": "2026-07-15"`, "the repeated run's input")

		// The runs list filtered to failed runs: Retry all matching.
		third := fail()
		doc = c.page200("/waterline/runs?status=failed")
		form := doc.Find(tid("runs-retry-matching-form"))
		require.Equal(t, 1, form.Length())
		require.Zero(t, c.page200("/waterline/runs").Find(tid("runs-retry-matching")).Length(), "only on a failed or timed-out filter")
		p = c.post("/waterline/runs/retry", formValues(form))
		require.Equal(t, "/waterline/runs?status=failed", seeOther(t, p))
		doc = c.page200("/waterline/runs?status=failed")
		require.Equal(t, "Retried 2 runs: pending for one more attempt.", textOf(doc.Find(tid("flash"))), "the second and the third")
		for _, id := range []string{second, third} {
			run := c.api.must(200, "GET", v2+"/runs/"+id, "")
			require.Equal(t, "pending", run["status"], id)
		}

		// The API's face of the same actions.
		c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":10}`)
		c.api.clock.Advance(time.Second)
		c.api.must(200, "POST", v2+"/worker/runs/"+third+"/fail", `{"worker_id":"w1","message":"again","type":"io"}`)
		run := c.api.must(200, "POST", v2+"/runs/"+third+"/retry", `{"reason":"api"}`)
		require.Equal(t, "pending", run["status"])
		require.EqualValues(t, 3, run["attempt"])
		got := c.api.must(200, "POST", v2+"/runs/retry", `{"status":"failed"}`)
		require.Equal(t, map[string]any{"retried": float64(0), "more": false}, got)
		c.api.must(422, "POST", v2+"/runs/retry", `{"status":"completed"}`)
		c.api.must(409, "POST", v2+"/runs/"+third+"/retry", `{}`)
		again := c.api.must(200, "POST", v2+"/runs/"+third+"/again", `{}`)
		require.Equal(t, "triggered", again["outcome"])
		require.Equal(t, http.StatusNotFound, c.api.do("POST", v2+"/runs/NOPE/retry", `{}`).Status)
	})
}
