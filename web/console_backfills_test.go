package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// The console's backfill jobs: a window too large to list is outlined
// (counted, the first 500 listed), confirming starts a paced job whose
// progress the dialog, the schedule page and the Backfills page show, and
// its Pause / Resume / Cancel are real forms (a redirect without htmx, the
// panel with it).
func TestConsoleBackfillJobs(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", `{"schedule_id":"m","spec":{"cron_expressions":["* * * * *"]},"action":{"workflow_type":"w"},"overlap_policy":"allow_all"}`)

		// A year of minutes: more than a dry run lists, not more than a job takes.
		form := url.Values{"from": {"2025-07-16 12:00"}, "to": {"2026-07-16 12:00"}, "dry_run": {"1"}, "max_per_minute": {"600"}}
		p := c.post("/waterline/schedules/m/backfill", form)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		res := p.Doc.Find(tid("backfill-result"))
		require.Equal(t, "525600", textOf(res.Find(tid("backfill-count"))))
		require.Equal(t, "would start 525600 · skipped 0", textOf(res.Find(tid("backfill-summary"))))
		require.Equal(t, 500, res.Find(tid("backfill-occurrence")).Length())
		require.Equal(t, "…and 525100 more.", textOf(res.Find(tid("backfill-not-listed"))))
		confirm := formValues(res.Find(tid("backfill-confirm-form")))
		require.Equal(t, "600", confirm.Get("max_per_minute"), "the pace goes with the confirmation")

		p = c.post("/waterline/schedules/m/backfill", confirm)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		job := p.Doc.Find(tid("backfill-job"))
		require.Equal(t, "running", attrOf(t, job, "data-status"))
		require.Equal(t, "60", textOf(job.Find(tid("backfill-started"))), "a tenth of the rate at once")
		require.Equal(t, "525540", textOf(job.Find(tid("backfill-remaining"))))
		require.Equal(t, "at most 600 a minute", textOf(job.Find(tid("backfill-pace"))))
		require.NotEmpty(t, textOf(job.Find(tid("backfill-eta"))))
		jobURL := attrOf(t, job.Find(tid("backfill-job-link")), "href")
		require.Equal(t, jobURL, attrOf(t, job, "hx-get"), "a running job's panel refreshes itself")
		pause := formValues(job.Find(`form:has([data-testid="backfill-pause"])`))
		require.Equal(t, "/waterline/schedules/m", pause.Get("return_to"))

		// The schedule page and the Backfills page show it.
		detail := c.page200("/waterline/schedules/m")
		require.Equal(t, 1, detail.Find(tid("schedule-backfills")+" "+tid("backfill-job")).Length())
		require.Equal(t, 1, detail.Find(tid("schedule-autorefresh")).Length(), "live while the job runs")
		list := c.page200("/waterline/backfills")
		require.Equal(t, 1, list.Find(tid("backfill-row")).Length())
		require.Equal(t, "running", attrOf(t, list.Find(tid("backfill-row")), "data-status"))
		require.Equal(t, 0, c.page200("/waterline/backfills?status=paused").Find(tid("backfill-row")).Length())

		// Pause without JavaScript: back where it came from, with a message.
		action := strings.TrimSuffix(jobURL, "") + "/pause"
		p = c.post(action, pause)
		require.Equal(t, http.StatusSeeOther, p.Status, p.Raw)
		require.Equal(t, "/waterline/schedules/m", p.Header.Get("Location"))
		page := c.page200(jobURL)
		require.Equal(t, "paused", attrOf(t, page.Find(tid("backfill-job")), "data-status"))
		require.Equal(t, 1, page.Find(tid("backfill-resume")).Length())
		require.Zero(t, page.Find(tid("backfill-pause")).Length())
		_, polls := page.Find(tid("backfill-job")).Attr("hx-get")
		require.False(t, polls, "a paused job does not poll")

		// Pausing again is refused, said in the panel (htmx).
		p = c.post(action, pause, hx...)
		require.Equal(t, http.StatusConflict, p.Status)
		require.Contains(t, textOf(p.Doc.Find(tid("backfill-error"))), "not running")

		// Resume and cancel with htmx: the panel comes back.
		p = c.post(jobURL+"/resume", pause, hx...)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		require.Equal(t, "running", attrOf(t, p.Doc.Find(tid("backfill-job")), "data-status"))
		p = c.post(jobURL+"/cancel", pause, hx...)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		require.Equal(t, "cancelled", attrOf(t, p.Doc.Find(tid("backfill-job")), "data-status"))
		require.Zero(t, p.Doc.Find(tid("backfill-cancel")).Length())
		require.Equal(t, "cancelled", c.api.must(200, "GET", v2+"/backfills/"+strings.TrimPrefix(jobURL, "/waterline/backfills/"), "")["backfill"].(map[string]any)["status"])

		require.Equal(t, http.StatusNotFound, c.get("/waterline/backfills/01KXNR6R809X7XT0RFJDNTWDR2").Status)
	})
}
