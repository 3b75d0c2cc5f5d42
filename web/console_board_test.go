package web_test

import (
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// chipCounts maps each health chip to its count, and names the current one.
func chipCounts(t *testing.T, doc *goquery.Document) (map[string]string, string) {
	counts, current := map[string]string{}, ""
	doc.Find(tid("health-chip")).Each(func(_ int, s *goquery.Selection) {
		key, _ := s.Attr("data-chip")
		counts[key] = textOf(s.Find(tid("chip-count")))
		if _, ok := s.Attr("aria-current"); ok {
			require.Empty(t, current, "one current chip")
			current = key
		}
	})
	return counts, current
}

// The registry is a health board: chips with counts on top (all · failing ·
// overdue · paused · active), each a link that filters the list, an order
// by health or ID, and a warning when schedules are well past their fire
// time (no loop is running: the test has none).
func TestConsoleRegistryHealthBoard(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const v2 = "/waterline/api/v2"
		for _, body := range []string{
			`{"schedule_id":"a-fine","cron":"0 0 1 1 *","action":{"workflow_type":"w"}}`,
			`{"schedule_id":"b-flaky","cron":"0 0 1 1 *","overlap_policy":"allow_all","action":{"workflow_type":"w"}}`,
			`{"schedule_id":"c-often","cron":"*/5 * * * *","action":{"workflow_type":"w"}}`,
			`{"schedule_id":"d-held","cron":"0 0 1 1 *","paused":true,"action":{"workflow_type":"w"}}`,
		} {
			c.api.must(201, "POST", v2+"/schedules", body)
		}
		tr := c.api.must(200, "POST", v2+"/schedules/b-flaky/trigger", "")
		c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":1}`)
		c.api.must(200, "POST", v2+"/worker/runs/"+tr["run_id"].(string)+"/fail", `{"worker_id":"w1","message":"disk full"}`)

		// The page says what it is (title, favicon) and which build serves it.
		whole := c.get("/waterline/schedules")
		require.Contains(t, whole.Raw, "<title>Schedules · Tideline</title>")
		require.Contains(t, whole.Raw, `<link rel="icon" href="/static/favicon.svg"`)
		require.Contains(t, textOf(whole.Doc.Find(tid("footer"))), "Tideline test", "footer shows the version")

		// Nothing late yet: no warning.
		doc := c.page200("/waterline/schedules")
		counts, current := chipCounts(t, doc)
		require.Equal(t, map[string]string{"all": "4", "failing": "1", "stuck": "0", "overdue": "0", "skipping": "0", "paused": "1", "active": "3"}, counts)
		require.Equal(t, "all", current)
		require.Zero(t, doc.Find(tid("loop-warning")).Length())

		// Ten minutes on without a loop: c-often is overdue, well past.
		c.api.clock.Advance(10 * 60e9)
		doc = c.page200("/waterline/schedules")
		counts, _ = chipCounts(t, doc)
		require.Equal(t, "1", counts["overdue"])
		require.Contains(t, textOf(doc.Find(tid("loop-warning"))), "1 schedule is more than 1 min past its fire time")

		chipURL := func(doc *goquery.Document, key string) string {
			return attrOf(t, doc.Find(tid("health-chip")+`[data-chip="`+key+`"]`), "href")
		}
		for key, want := range map[string][]string{
			"failing": {"b-flaky"}, "overdue": {"c-often"}, "paused": {"d-held"}, "active": {"b-flaky", "c-often", "a-fine"},
			"all": {"b-flaky", "c-often", "a-fine", "d-held"},
		} {
			page := c.page200(chipURL(doc, key))
			require.Equal(t, want, rowIDs(page), key)
			_, cur := chipCounts(t, page)
			require.Equal(t, key, cur, "the %s chip is current on its own page", key)
		}

		// The health order is the default: the failing first, then the
		// overdue (c-often), then the rest by ID. The ID order is a link
		// away, and a text filter keeps it.
		require.Equal(t, []string{"b-flaky", "c-often", "a-fine", "d-held"}, rowIDs(doc))
		_, on := doc.Find(tid("sort-link") + `[data-sort="health"]`).Attr("aria-current")
		require.True(t, on, "health is the current order by default")
		require.Equal(t, "descending", attrOf(t, doc.Find(`th[aria-sort="descending"]`), "aria-sort"))
		require.Contains(t, textOf(doc.Find(`th[aria-sort="descending"]`)), "Health")
		byID := c.page200(attrOf(t, doc.Find(tid("sort-link")+`[data-sort="schedule_id"]`), "href"))
		require.Equal(t, []string{"a-fine", "b-flaky", "c-often", "d-held"}, rowIDs(byID))
		require.Equal(t, "schedule_id", attrOf(t, byID.Find(tid("registry-filters")).Find(`input[name="sort"]`), "value"))
		// Each row's label is its chip's: the rows a chip lists say its state.
		for _, key := range []string{"failing", "overdue"} {
			for _, row := range c.page200(chipURL(doc, key)).Find(tid("schedule-row")).EachIter() {
				require.Equal(t, key, attrOf(t, row, "data-health"))
				require.Equal(t, key, textOf(row.Find(tid("health-state"))))
			}
		}
		failingText := c.page200("/waterline/schedules?health=failing&q=flaky")
		require.Equal(t, []string{"b-flaky"}, rowIDs(failingText))
		require.Equal(t, "failing", attrOf(t, failingText.Find(tid("registry-filters")).Find(`input[name="health"]`), "value"))

		// The API filters the same way.
		list := c.api.must(200, "GET", v2+"/schedules?health=overdue", "")
		items := list["schedules"].([]any)
		require.Len(t, items, 1)
		require.Equal(t, "c-often", items[0].(map[string]any)["schedule_id"])
		c.api.must(422, "GET", v2+"/schedules?health=late", "")
	})
}
