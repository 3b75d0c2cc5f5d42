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
		require.Equal(t, "started: 4", fates(detail)["ledger-count-started"], "S+1h, 2h, 5h and 6h")
		require.Equal(t, "missed: 3", fates(detail)["ledger-count-missed"])
		require.Equal(t, 3, detail.Find(tid("ledger-row")+`[data-fate="missed"]`).Length(), "the text table lists them")
		cells := detail.Find(tid("ledger-cell"))
		require.Greater(t, cells.Length(), 7*24-2)
		started := detail.Find(tid("ledger-cell") + `[data-fate="started"]`).First()
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
		require.Equal(t, "started: 7", fates(after)["ledger-count-started"])
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
