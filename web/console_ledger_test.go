package web_test

import (
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// The schedule page shows the ledger; "Backfill the missed ones" opens the
// backfill dry run with exactly the missed occurrences selected (not the
// ones that ran in between), and confirming it turns them to started —
// all with plain links and forms.
func TestConsoleLedgerBackfillsTheMissedOnes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		c.api.clock.Set(c.api.clock.Now().Truncate(time.Hour).Add(time.Hour))
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"hourly","cron":"0 * * * *","overlap_policy":"allow_all","action":{"workflow_type":"w"}}`)
		start := c.api.clock.Now()
		// S+1h fires; down until S+4h10m (S+2h fires late, S+3h and S+4h are
		// missed); S+5h fires; down again until S+7h05m (S+6h late, S+7h missed).
		for _, d := range []time.Duration{time.Hour, 4*time.Hour + 10*time.Minute, 5 * time.Hour, 7*time.Hour + 5*time.Minute} {
			c.api.clock.Set(start.Add(d))
			c.api.must(200, "POST", v2+"/tick", "")
		}
		fates := func(doc *goquery.Document) map[string]string {
			out := map[string]string{}
			doc.Find(tid("ledger-legend") + " li").Each(func(_ int, s *goquery.Selection) {
				id, _ := s.Attr("data-testid")
				out[id] = textOf(s)
			})
			return out
		}
		detail := c.page200("/waterline/schedules/hourly")
		// The runs started and wait for a worker: pending, by outcome.
		require.Equal(t, "pending: 4", fates(detail)["ledger-count-pending"], "S+1h, 2h, 5h and 6h")
		require.Equal(t, "missed: 3", fates(detail)["ledger-count-missed"])
		require.Equal(t, 3, detail.Find(tid("ledger-row")+`[data-fate="missed"]`).Length(), "the text table lists them")
		// One square per hour from the creation's hour (S) to now (S+7h05m).
		cells := detail.Find(tid("ledger-cell"))
		require.Equal(t, 8, cells.Length())
		require.Equal(t, "none", attrOf(t, cells.First(), "data-fate"), "S itself is not an occurrence: the first is S+1h")
		require.Equal(t, 3, detail.Find(tid("ledger-cell")+`[data-fate="missed"]`).Length())
		started := detail.Find(tid("ledger-cell") + `[data-fate="pending"]`).First()
		href, _ := started.Attr("href")
		require.Regexp(t, `^/waterline/runs/[0-9A-Z]{26}$`, href, "a started cell links to its run")
		link := detail.Find(tid("backfill-missed"))
		require.Equal(t, "Backfill the 3 missed", textOf(link))

		target, _ := link.Attr("href")
		dry := c.page200(target)
		require.Equal(t, "3", textOf(dry.Find(tid("backfill-count"))))
		var listed []string
		dry.Find(tid("backfill-occurrence") + " td.mono").Each(func(_ int, s *goquery.Selection) { listed = append(listed, textOf(s)) })
		at := func(d time.Duration) string { return "schedule:hourly:backfill:" + itoa(start.Add(d).Unix()) }
		require.Equal(t, []string{at(3 * time.Hour), at(4 * time.Hour), at(7 * time.Hour)}, listed, "exactly the missed ones")

		confirm := dry.Find(tid("backfill-confirm-form"))
		form := url.Values{}
		confirm.Find("input").Each(func(_ int, s *goquery.Selection) {
			name, _ := s.Attr("name")
			value, _ := s.Attr("value")
			if name != "_csrf" {
				form.Add(name, value)
			}
		})
		res := c.post("/waterline/schedules/hourly/backfill", form)
		require.Equal(t, 200, res.Status, res.Raw)
		require.Equal(t, "3", textOf(res.Doc.Find(tid("backfill-count"))))

		after := c.page200("/waterline/schedules/hourly")
		require.Equal(t, "pending: 7", fates(after)["ledger-count-pending"])
		require.NotContains(t, fates(after), "ledger-count-missed")
		require.Zero(t, after.Find(tid("backfill-missed")).Length())
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The pause form offers "Pause until…": an hour, tomorrow 09:00 in the
// schedule's zone, or a custom wall time.
func TestConsolePauseUntilPresets(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"ny","spec":{"cron_expressions":["0 * * * *"],"timezone":"America/New_York"},"action":{"workflow_type":"w"}}`)
		detail := c.page200("/waterline/schedules/ny")
		require.Contains(t, textOf(detail.Find(tid("pause-until"))), "Tomorrow 09:00 (America/New_York)")

		now := c.api.clock.Now() // 2026-07-16 12:00 UTC = 08:00 EDT
		for _, tc := range []struct {
			form url.Values
			want time.Time
		}{
			{url.Values{"until_preset": {"1h"}}, now.Add(time.Hour)},
			{url.Values{"until_preset": {"tomorrow_0900"}}, time.Date(2026, 7, 17, 13, 0, 0, 0, time.UTC)},
			{url.Values{"until_preset": {"custom"}, "until_custom": {"2026-07-20T18:30"}}, time.Date(2026, 7, 20, 22, 30, 0, 0, time.UTC)},
		} {
			res := c.post("/waterline/schedules/ny/pause", tc.form)
			require.Less(t, res.Status, 400, res.Raw)
			s := c.api.must(200, "GET", v2+"/schedules/ny", "")
			require.Equal(t, tc.want.Format("2006-01-02T15:04:05.000000Z"), s["paused_until"])
			c.api.must(200, "POST", v2+"/schedules/ny/resume", "")
		}
		c.post("/waterline/schedules/ny/pause", url.Values{"until_preset": {"custom"}, "until_custom": {"soon"}})
		require.Equal(t, "active", c.api.must(200, "GET", v2+"/schedules/ny", "")["status"], "an unreadable end pauses nothing")
	})
}

// The heatmap has its axes (days down the side in the schedule's zone,
// hours across), colours an hour by the worst outcome of its runs (a
// failed run is failed, not "started"), and starts at the schedule's
// creation: no square, and no before_created count, before it.
func TestConsoleLedgerHeatmapByOutcome(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		// 2026-07-16 12:00 UTC is 08:00 EDT; create at 08:20 EDT.
		created := time.Date(2026, 7, 16, 12, 20, 0, 0, time.UTC)
		c.api.clock.Set(created)
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"quarter","spec":{"cron_expressions":["*/15 * * * *"],"timezone":"America/New_York"},"overlap_policy":"allow_all","action":{"workflow_type":"w"}}`)
		// 08:30 and 08:45 EDT fire; 08:45's run fails, 08:30's completes.
		// 09:00 fires and completes, 09:15 fires and times out (its
		// attempt passed its deadline: ended by the worker as failed here).
		var runs []string
		for _, m := range []int{10, 25, 40, 55} {
			c.api.clock.Set(created.Add(time.Duration(m) * time.Minute))
			c.api.must(200, "POST", v2+"/tick", "")
			polled := c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":10}`)["runs"].([]any)
			require.Len(t, polled, 1)
			runs = append(runs, polled[0].(map[string]any)["run_id"].(string))
		}
		c.api.must(200, "POST", v2+"/worker/runs/"+runs[0]+"/complete", `{"worker_id":"w1"}`)
		c.api.must(200, "POST", v2+"/worker/runs/"+runs[1]+"/fail", `{"worker_id":"w1","message":"disk full","type":"io"}`)
		c.api.must(200, "POST", v2+"/worker/runs/"+runs[2]+"/complete", `{"worker_id":"w1"}`)
		// runs[3] (09:15) is still running.
		c.api.clock.Set(created.Add(56 * time.Minute))

		doc := c.page200("/waterline/schedules/quarter")
		grid := doc.Find(tid("ledger-grid"))
		require.Equal(t, 24, grid.Find(tid("ledger-hour")).Length(), "hours across")
		require.Equal(t, "00", textOf(grid.Find(tid("ledger-hour")).First()))
		days := grid.Find(tid("ledger-day"))
		require.Equal(t, 1, days.Length(), "one day since creation")
		require.Equal(t, "Thu 16 Jul", textOf(days))
		require.Contains(t, textOf(doc.Find(tid("ledger-axes"))), "days in America/New_York")

		cells := grid.Find(tid("ledger-cell"))
		require.Equal(t, 2, cells.Length(), "08:00 and 09:00 EDT: nothing before the creation's hour, nothing to come")
		require.Equal(t, "2026-07-16T12:00:00Z", attrOf(t, cells.Eq(0), "data-at"))
		require.Equal(t, "failed", attrOf(t, cells.Eq(0), "data-fate"), "08:30 completed, 08:45 failed: the hour is failed")
		require.Equal(t, "/waterline/runs/"+runs[1], attrOf(t, cells.Eq(0), "href"), "the square opens the failed run")
		require.Equal(t, "Thu 16 Jul 08:00 EDT: 1 failed, 1 completed", attrOf(t, cells.Eq(0), "title"))
		require.Equal(t, "running", attrOf(t, cells.Eq(1), "data-fate"), "09:00 completed, 09:15 running")

		legend := map[string]string{}
		doc.Find(tid("ledger-legend") + " li").Each(func(_ int, s *goquery.Selection) {
			id, _ := s.Attr("data-testid")
			legend[id] = textOf(s)
		})
		require.Equal(t, map[string]string{"ledger-count-failed": "failed: 1", "ledger-count-running": "running: 1",
			"ledger-count-completed": "completed: 2"}, legend, "no before_created count")
		require.Contains(t, textOf(doc.Find(tid("ledger-since"))), "2026-07-16 08:20 EDT")

		// Under the UTC time setting the days and hours are UTC ones.
		seeOther(t, c.get("/waterline/time?pref=utc&return_to=/waterline/schedules/quarter"))
		doc = c.page200("/waterline/schedules/quarter")
		require.Contains(t, textOf(doc.Find(tid("ledger-axes"))), "days in UTC")
		cells = doc.Find(tid("ledger-cell"))
		require.Equal(t, 2, cells.Length())
		require.Equal(t, "Thu 16 Jul 12:00 UTC: 1 failed, 1 completed", attrOf(t, cells.Eq(0), "title"))
	})
}

// A backfill of occurrences from before the schedule existed shows: the
// grid starts at the first backfilled one (and says why), the hours between
// without a run read "before created", and the legend counts no
// before_created.
func TestConsoleLedgerShowsBackfillsFromBeforeCreation(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"late","cron":"0 * * * *","overlap_policy":"allow_all","action":{"workflow_type":"w"}}`)
		// Created 2026-07-16 12:00 UTC; backfill 09:00 and 10:00 of that day.
		c.api.must(202, "POST", v2+"/schedules/late/backfill", `{"from":"2026-07-16T09:00:00Z","to":"2026-07-16T10:30:00Z"}`)
		doc := c.page200("/waterline/schedules/late")
		cells := doc.Find(tid("ledger-cell"))
		require.Equal(t, "2026-07-16T09:00:00Z", attrOf(t, cells.Eq(0), "data-at"), "the grid starts at the first backfilled occurrence")
		require.Equal(t, "pending", attrOf(t, cells.Eq(0), "data-fate"))
		require.Equal(t, "pending", attrOf(t, cells.Eq(1), "data-fate"))
		require.Equal(t, "before_created", attrOf(t, cells.Eq(2), "data-fate"), "11:00: no run, before the creation")
		require.Equal(t, 4, cells.Length(), "09:00 to 12:00")
		require.Contains(t, textOf(doc.Find(tid("ledger-since"))), "a backfill ran occurrences from before then")
		require.Zero(t, doc.Find(tid("ledger-count-before_created")).Length())
		require.Equal(t, "pending: 2", textOf(doc.Find(tid("ledger-count-pending"))))
		require.Equal(t, "before created", textOf(doc.Find(tid("ledger-key-before_created"))), "named in the legend, not counted")
		require.Equal(t, "no occurrence", textOf(doc.Find(tid("ledger-key-none"))))
	})
}
