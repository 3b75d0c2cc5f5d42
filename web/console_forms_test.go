package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// A form with problems the form finds (a label line, JSON) and problems
// only the service finds (the ID, a cron line, a missing workflow type, a
// jitter out of range) answers with all of them at once, on create and on
// edit; the summary lists each.
func TestConsoleFormReportsEveryErrorAtOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", dailyBody)

		p := c.post("/waterline/schedules", url.Values{"schedule_id": {"bad one"}, "cron_expressions": {"0 9 * * *\n61 * * * *\nnope"},
			"workflow_type": {""}, "jitter_seconds": {"99999"}, "input": {`{"x": tru`}, "labels": {"novalue"}})
		require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
		require.Contains(t, fieldError(p.Doc, "schedule_id"), "1-200 characters")
		require.Contains(t, fieldError(p.Doc, "cron_expressions"), "line 2:")
		require.Contains(t, fieldError(p.Doc, "cron_expressions"), "line 3:", "every bad line")
		require.Contains(t, fieldError(p.Doc, "workflow_type"), "is required")
		require.Contains(t, fieldError(p.Doc, "jitter_seconds"), "3600")
		require.Contains(t, fieldError(p.Doc, "input"), "must be valid JSON")
		require.Equal(t, "line 1: write key=value", fieldError(p.Doc, "labels"))
		require.Equal(t, 6, p.Doc.Find(tid("error-summary-link")).Length())
		require.Equal(t, "7 problems to fix", textOf(p.Doc.Find(tid("error-summary")).Find("h2")))
		require.Empty(t, c.api.must(200, "GET", v2+"/schedules?status=all", "")["schedules"].([]any)[1:], "nothing was created")

		// Intervals the form could not read leave the spec empty: the
		// service's "add a cron expression" would only confuse.
		p = c.post("/waterline/schedules", url.Values{"intervals": {"every fortnight"}, "workflow_type": {"w"}})
		require.Equal(t, http.StatusUnprocessableEntity, p.Status)
		require.Contains(t, fieldError(p.Doc, "intervals"), "line 1")
		require.Empty(t, fieldError(p.Doc, "cron_expressions"))

		edit := formValues(c.page200("/waterline/schedules/daily-sync/edit").Find(tid("schedule-form")))
		edit.Set("labels", "novalue")
		edit.Set("overlap_policy", "sometimes")
		p = c.post("/waterline/schedules/daily-sync/edit", edit)
		require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
		require.Equal(t, "line 1: write key=value", fieldError(p.Doc, "labels"))
		require.Contains(t, fieldError(p.Doc, "overlap_policy"), "must be one of", "the service's verdict too")
	})
}

// The console's dry run counts what a backfill would start and what an
// earlier one already started, and offers to start only those.
func TestConsoleBackfillDryRunCountsStarted(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", `{"schedule_id":"h","spec":{"cron_expressions":["0 * * * *"]},"action":{"workflow_type":"w"},"overlap_policy":"allow_all"}`)
		c.api.must(202, "POST", v2+"/schedules/h/backfill", `{"from":"2026-07-01T00:00:00Z","to":"2026-07-01T02:00:00Z"}`)

		p := c.post("/waterline/schedules/h/backfill", url.Values{"from": {"2026-07-01T00:00"}, "to": {"2026-07-01T05:00"}, "dry_run": {"1"}})
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		res := p.Doc.Find(tid("backfill-result"))
		require.Equal(t, "5", textOf(res.Find(tid("backfill-count"))))
		require.Equal(t, "would start 3 · skipped 2: 2 already started", textOf(res.Find(tid("backfill-summary"))))
		require.Equal(t, "Start 3 runs", textOf(res.Find(tid("backfill-confirm"))))
		rows := res.Find(tid("backfill-occurrence"))
		require.Equal(t, "skipped", attrOf(t, rows.Eq(0), "data-outcome"))
		require.Equal(t, "already started", textOf(rows.Eq(0).Find(tid("backfill-reason"))))
		require.Regexp(t, `^/waterline/runs/\w+$`, attrOf(t, rows.Eq(0).Find("a"), "href"), "the run that started it")
		require.Equal(t, "planned", attrOf(t, rows.Eq(2), "data-outcome"))

		p = c.post("/waterline/schedules/h/backfill", formValues(res.Find(tid("backfill-confirm-form"))))
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		job := p.Doc.Find(tid("backfill-job"))
		require.Equal(t, "3", textOf(job.Find(tid("backfill-started"))))
		require.Equal(t, "2", textOf(job.Find(tid("backfill-skipped"))), "the two already started")

		// Everything started: nothing to confirm.
		p = c.post("/waterline/schedules/h/backfill", url.Values{"from": {"2026-07-01T00:00"}, "to": {"2026-07-01T05:00"}, "dry_run": {"1"}})
		require.Equal(t, "would start 0 · skipped 5: 5 already started", textOf(p.Doc.Find(tid("backfill-summary"))))
		require.Zero(t, p.Doc.Find(tid("backfill-confirm")).Length())
		require.Equal(t, 1, p.Doc.Find(tid("backfill-nothing")).Length())
	})
}

// Issue 37, major 4: the dry run plays the overlap policy as the backfill
// will (a skip schedule behind a pending run starts nothing, and says
// why), an override in the dialog changes the prediction, the dialog
// counts the occurrences before the schedule existed, and its reason goes
// with the job to the audit stream.
func TestConsoleBackfillDryRunFollowsTheOverlapPolicy(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", `{"schedule_id":"s","spec":{"cron_expressions":["0 * * * *"]},"action":{"workflow_type":"w"},"overlap_policy":"skip"}`)
		c.api.must(200, "POST", v2+"/schedules/s/trigger", `{}`) // a run stays pending: no worker
		window := url.Values{"from": {"2026-07-16T09:00"}, "to": {"2026-07-16T14:00"}, "dry_run": {"1"}}

		p := c.post("/waterline/schedules/s/backfill", window)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		res := p.Doc.Find(tid("backfill-result"))
		require.Equal(t, "would start 0 · skipped 5: 5 behind a running run (overlap policy skip)", textOf(res.Find(tid("backfill-summary"))))
		require.Contains(t, textOf(res.Find(tid("backfill-nothing"))), "behind a running run")
		require.Zero(t, res.Find(tid("backfill-confirm")).Length())
		require.Equal(t, "3 occurrences fall before the schedule was created.", textOf(res.Find(tid("backfill-before-created"))))
		require.Equal(t, "overlap policy skip", textOf(res.Find(tid("backfill-reason")).First()))

		window.Set("overlap_policy", "allow_all")
		window.Set("reason", "replay after the outage")
		p = c.post("/waterline/schedules/s/backfill", window)
		res = p.Doc.Find(tid("backfill-result"))
		require.Equal(t, "would start 5 · skipped 0", textOf(res.Find(tid("backfill-summary"))))
		confirm := formValues(res.Find(tid("backfill-confirm-form")))
		require.Equal(t, "replay after the outage", confirm.Get("reason"), "the reason rides along to the confirmation")

		p = c.post("/waterline/schedules/s/backfill", confirm)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		require.Equal(t, "5", textOf(p.Doc.Find(tid("backfill-job")).Find(tid("backfill-started"))), "what the dry run said")
		list := c.api.must(200, "GET", v2+"/backfills", "")
		jobs := list["backfills"].([]any)
		require.Len(t, jobs, 1)
		require.Equal(t, "replay after the outage", jobs[0].(map[string]any)["reason"])
	})
}
