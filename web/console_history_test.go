package web_test

import (
	"net/http"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// The history page opens newest first with the total; "Load more" goes on
// down by before_sequence; the toggle and the event-type filter keep each
// other; the payload's facts are read from its typed fields.
func TestConsoleHistoryNewestFirstAndFilter(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", `{"schedule_id":"h","spec":{"cron_expressions":["0 * * * *"],"timezone":"Europe/Kyiv"},"action":{"workflow_type":"w"},"overlap_policy":"allow_all"}`)
		// 1 created + 120 backfilled = 121 events.
		c.api.must(202, "POST", v2+"/schedules/h/backfill", `{"from":"2026-07-01T00:00:00Z","to":"2026-07-06T00:00:00Z"}`)

		doc := c.page200("/waterline/schedules/h/history")
		panel := doc.Find(tid("history-panel"))
		events := panel.Find(tid("history-event"))
		require.Equal(t, 100, events.Length())
		require.Equal(t, "121", attrOf(t, events.First(), "data-sequence"), "newest first")
		require.Equal(t, "22", attrOf(t, events.Last(), "data-sequence"))
		require.Equal(t, "121 events", textOf(panel.Find(tid("history-total"))))
		require.Equal(t, "newest first", textOf(panel.Find(tid("history-order"))))
		require.Equal(t, "/waterline/schedules/h/history?order=asc", attrOf(t, panel.Find(tid("history-order-toggle")), "href"))
		more := panel.Find(tid("history-load-more"))
		require.Equal(t, "/waterline/schedules/h/history?before_sequence=22", attrOf(t, more, "hx-get"))
		last := events.First()
		require.Equal(t, "ScheduleTriggered", textOf(last.Find(tid("event-type"))))
		fields := map[string]string{}
		last.Find(tid("event-field")).Each(func(_ int, s *goquery.Selection) { fields[s.AttrOr("data-field", "")] = textOf(s) })
		require.Equal(t, map[string]string{"Outcome": "backfilled", "Occurrence": "2026-07-06 02:00 EEST", "Overlap policy": "allow all"}, fields)

		p := c.get("/waterline/schedules/h/history?before_sequence=22", hx...)
		require.Equal(t, http.StatusOK, p.Status)
		events = p.Doc.Find(tid("history-event"))
		require.Equal(t, 21, events.Length())
		require.Equal(t, "21", attrOf(t, events.First(), "data-sequence"))
		require.Equal(t, "1", attrOf(t, events.Last(), "data-sequence"))
		require.Zero(t, p.Doc.Find(tid("history-load-more")).Length())

		doc = c.page200("/waterline/schedules/h/history?event_type=ScheduleCreated")
		panel = doc.Find(tid("history-panel"))
		require.Equal(t, "1 ScheduleCreated event", textOf(panel.Find(tid("history-total"))))
		require.Equal(t, []string{"1"}, panel.Find(tid("history-event")).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-sequence", "") }))
		require.Equal(t, "ScheduleCreated", panel.Find(tid("history-event-type")).Find("option[selected]").AttrOr("value", ""))
		require.Equal(t, "/waterline/schedules/h/history?event_type=ScheduleCreated&order=asc", attrOf(t, panel.Find(tid("history-order-toggle")), "href"))

		doc = c.page200("/waterline/schedules/h/history?order=asc&event_type=ScheduleTriggered&limit=50")
		panel = doc.Find(tid("history-panel"))
		require.Equal(t, "120 ScheduleTriggered events", textOf(panel.Find(tid("history-total"))))
		require.Equal(t, "2", attrOf(t, panel.Find(tid("history-event")).First(), "data-sequence"))
		require.Equal(t, "/waterline/schedules/h/history?after_sequence=51&event_type=ScheduleTriggered&limit=50", attrOf(t, panel.Find(tid("history-load-more")), "href"))
		hidden := map[string]string{}
		panel.Find(tid("history-filter")).Find("input[type=hidden]").Each(func(_ int, s *goquery.Selection) { hidden[s.AttrOr("name", "")] = s.AttrOr("value", "") })
		require.Equal(t, map[string]string{"order": "asc", "limit": "50"}, hidden, "the filter keeps the order and the limit")

		for _, q := range []string{"order=sideways", "event_type=Nope", "order=desc&after_sequence=3", "before_sequence=-1"} {
			require.Equal(t, http.StatusUnprocessableEntity, c.get("/waterline/schedules/h/history?"+q).Status, q)
		}
	})
}
