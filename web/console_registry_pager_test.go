package web_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
)

// The registry's pager goes back as well as forward (a stack of cursors in
// the URL) and says where the page is in the whole ("3–4 of 5", from the
// chips' counts, or counted for a text filter); all with plain links.
func TestConsoleRegistryPagerPreviousAndTotal(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		for _, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
			c.create("default", `{"schedule_id":"`+id+`","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		}
		for _, base := range []string{"/waterline/schedules?limit=2&sort=schedule_id", "/waterline/schedules?limit=2&sort=schedule_id&q=s"} {
			first := c.page200(base)
			require.Equal(t, []string{"s1", "s2"}, rowIDs(first), base)
			require.Equal(t, "1–2 of 5", textOf(first.Find(tid("pager-range"))), base)
			require.Zero(t, first.Find(tid("prev-page")).Length())
			require.Zero(t, first.Find(tid("first-page")).Length())

			second := c.page200(attrOf(t, first.Find(tid("next-page")), "href"))
			require.Equal(t, []string{"s3", "s4"}, rowIDs(second))
			require.Equal(t, "3–4 of 5", textOf(second.Find(tid("pager-range"))))
			prev := attrOf(t, second.Find(tid("prev-page")), "href")
			require.NotContains(t, prev, "cursor=", "Previous from page 2 is the first page")
			require.Equal(t, []string{"s1", "s2"}, rowIDs(c.page200(prev)))

			secondURL := attrOf(t, first.Find(tid("next-page")), "href")
			third := c.page200(attrOf(t, second.Find(tid("next-page")), "href"))
			require.Equal(t, []string{"s5"}, rowIDs(third))
			require.Equal(t, "5 of 5", textOf(third.Find(tid("pager-range"))))
			require.Zero(t, third.Find(tid("next-page")).Length())
			back := attrOf(t, third.Find(tid("prev-page")), "href")
			require.Equal(t, secondURL, back, "Previous from page 3 is page 2's own URL")
			require.Equal(t, []string{"s3", "s4"}, rowIDs(c.page200(back)))
			require.Equal(t, "3–4 of 5", textOf(c.page200(back).Find(tid("pager-range"))))
		}

		// A cursor without its page number (a link from elsewhere) pages
		// on, without claiming where it stands.
		next, _ := url.Parse(attrOf(t, c.page200("/waterline/schedules?limit=2&sort=schedule_id").Find(tid("next-page")), "href"))
		bare := c.page200("/waterline/schedules?limit=2&sort=schedule_id&cursor=" + url.QueryEscape(next.Query().Get("cursor")))
		require.Equal(t, []string{"s3", "s4"}, rowIDs(bare))
		require.Zero(t, bare.Find(tid("pager-range")).Length())

		// A chip resets the stack: its URL starts at the first page.
		second := c.page200(attrOf(t, c.page200("/waterline/schedules?limit=2").Find(tid("next-page")), "href"))
		chip := attrOf(t, second.Find(`[data-chip="active"]`), "href")
		require.NotContains(t, chip, "back=")
		require.NotContains(t, chip, "page=")
	})
}

// "Select all N matching" pauses (or resumes) the filter's whole result,
// not only the page shown, after saying how many; one request changes at
// most the count confirmed, bounded by scheduling.MaxBulkMatching. A plain
// form: it works without JavaScript.
func TestConsoleBulkSelectAllMatching(t *testing.T) {
	t.Parallel()
	require.Equal(t, 500, scheduling.MaxBulkMatching)
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		for _, id := range []string{"team-a-1", "team-a-2", "team-a-3", "other"} {
			c.create("default", `{"schedule_id":"`+id+`","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		}
		doc := c.page200("/waterline/schedules?q=team-a&limit=2")
		require.Len(t, rowIDs(doc), 2, "two on the page")
		all := doc.Find(tid("bulk-all"))
		require.Equal(t, "Select all 3 matching…", textOf(all.Find(tid("bulk-all-open"))))
		require.Contains(t, textOf(all.Find(tid("bulk-all-count"))), "all 3 schedules this filter selects")
		require.Equal(t, "Pause 3", textOf(all.Find(tid("bulk-all-pause"))))

		form := formValues(all.Find(tid("bulk-all-form")))
		require.Equal(t, "3", form.Get("expect"))
		form.Set("action", "pause")
		form.Set("reason", "freeze team a")
		seeOther(t, c.post("/waterline/schedules/bulk", form))
		require.Equal(t, "Paused 3 schedules.", textOf(c.page200("/waterline/schedules").Find(tid("flash"))))
		for _, id := range []string{"team-a-1", "team-a-2", "team-a-3"} {
			s := c.api.must(200, "GET", v2+"/schedules/"+id, "")
			require.Equal(t, "paused", s["status"], id)
			require.Equal(t, "freeze team a", s["pause_reason"], id)
		}
		require.Equal(t, "active", c.api.must(200, "GET", v2+"/schedules/other", "")["status"], "outside the filter")

		// The Paused chip's count is the total; one confirmed for two
		// matching changes one, and says the rest were left.
		doc = c.page200("/waterline/schedules?status=paused")
		require.Equal(t, "Select all 3 matching…", textOf(doc.Find(tid("bulk-all-open"))))
		form = formValues(doc.Find(tid("bulk-all-form")))
		form.Set("expect", "1")
		form.Set("action", "resume")
		seeOther(t, c.post("/waterline/schedules/bulk", form))
		f := textOf(c.page200("/waterline/schedules").Find(tid("flash")))
		require.True(t, strings.HasPrefix(f, "Resumed 1 schedule. More schedules match than were confirmed"), f)

		bad := url.Values{"all": {"1"}, "action": {"pause"}, "expect": {"0"}}
		seeOther(t, c.post("/waterline/schedules/bulk", bad))
		require.Equal(t, "Confirm how many schedules to change.", textOf(c.page200("/waterline/schedules").Find(tid("flash"))))
	})
}
