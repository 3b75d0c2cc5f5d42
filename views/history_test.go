package views

import (
	"strconv"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
)

func historyEvents(from, n int) []HistoryEventView {
	types := []string{"ScheduleCreated", "ScheduleTriggered", "SchedulePaused"}
	out := make([]HistoryEventView, 0, n)
	for i := range n {
		seq := int64(from + i)
		e := HistoryEventView{
			Sequence:   seq,
			EventType:  types[i%len(types)],
			RecordedAt: Moment{Text: "2026-07-16 02:00 EDT", ISO: "2026-07-16T06:00:00.000000Z"},
			Payload:    "{\n  \"n\": " + strconv.FormatInt(seq, 10) + "\n}",
		}
		if e.EventType == "ScheduleTriggered" {
			e.InstanceID = "schedule:s1:1784181600"
			e.RunID = "01RUN" + strconv.FormatInt(seq, 10)
			e.RunURL = "/waterline/runs/" + e.RunID
			e.InstanceURL = "/waterline/runs?instance_id=" + e.InstanceID
		}
		if e.EventType == "SchedulePaused" {
			e.Actor = "ui · alice"
			e.Summary = "reason: upstream outage"
		}
		out = append(out, e)
	}
	return out
}

func sequences(t *testing.T, s *goquery.Selection) []int64 {
	t.Helper()
	var out []int64
	s.Each(func(_ int, e *goquery.Selection) {
		n, err := strconv.ParseInt(attr(t, e, "data-sequence"), 10, 64)
		require.NoError(t, err)
		out = append(out, n)
	})
	return out
}

func TestHistoryPageListsEventsOldestFirstWithLoadMore(t *testing.T) {
	t.Parallel()
	v := HistoryView{
		ScheduleID: "s1", ScheduleURL: "/waterline/schedules/s1", PageURL: "/waterline/schedules/s1/history",
		Events: historyEvents(1, 5), HasMore: true,
		MoreURL: "/waterline/schedules/s1/history?after_sequence=5&limit=5",
	}
	doc := render(t, HistoryPage(testLayout, v))

	events := doc.Find(testid("history-event"))
	require.Equal(t, []int64{1, 2, 3, 4, 5}, sequences(t, events))
	require.Equal(t, "#1", text(events.Eq(0).Find(testid("event-sequence"))))
	require.Equal(t, "ScheduleCreated", text(events.Eq(0).Find(testid("event-type"))))
	require.Equal(t, "2026-07-16T06:00:00.000000Z", attr(t, events.Eq(0).Find(testid("event-recorded-at")).Find("time"), "datetime"))

	triggered := events.Eq(1)
	require.Equal(t, "schedule:s1:1784181600", text(triggered.Find(testid("event-instance"))))
	require.Equal(t, "/waterline/runs?instance_id=schedule:s1:1784181600", attr(t, triggered.Find(testid("event-instance")), "href"))
	require.Equal(t, "/waterline/runs/01RUN2", attr(t, triggered.Find(testid("event-run-link")), "href"))

	paused := events.Eq(2)
	require.Equal(t, "by ui · alice", text(paused.Find(testid("event-actor"))))
	require.Equal(t, "reason: upstream outage", text(paused.Find(testid("event-summary"))))
	payload := paused.Find(testid("event-payload"))
	require.Equal(t, "{\n  \"n\": 3\n}", payload.Text(), "the payload keeps its formatting")
	require.Equal(t, "details", goquery.NodeName(payload.Parent()), "the payload is collapsible")

	more := doc.Find(testid("history-load-more"))
	require.Equal(t, v.MoreURL, attr(t, more, "href"), "Load more works without JS as a link")
	require.Equal(t, v.MoreURL, attr(t, more, "hx-get"))
	require.Equal(t, "closest li", attr(t, more, "hx-target"))
	require.Equal(t, "outerHTML", attr(t, more, "hx-swap"))
	require.True(t, doc.Find(testid("history-list")).Children().Last().Is(testid("history-more")),
		"Load more comes after the last event")
	require.Equal(t, "history-panel", attr(t, doc.Find(testid("history-panel")), "id"))

	v.HasMore, v.MoreURL = false, ""
	doc = render(t, HistoryPage(testLayout, v))
	require.Zero(t, doc.Find(testid("history-load-more")).Length(), "no Load more when has_more is false")
	require.Equal(t, 5, doc.Find(testid("history-event")).Length())
}

func TestHistoryLoadMoreFragmentAppendsInOrder(t *testing.T) {
	t.Parallel()
	page1 := HistoryView{ScheduleID: "s1", Events: historyEvents(1, 3), HasMore: true, MoreURL: "/h?after_sequence=3"}
	page2 := HistoryView{ScheduleID: "s1", Events: historyEvents(4, 3), HasMore: true, MoreURL: "/h?after_sequence=6"}
	page3 := HistoryView{ScheduleID: "s1", Events: historyEvents(7, 1)}

	// Simulate htmx: each fragment replaces the current Load more item.
	first, _ := renderIn(t, "<ol>", "</ol>", HistoryRows(page1))
	_, raw2 := renderIn(t, "<ol>", "</ol>", HistoryRows(page2))
	_, raw3 := renderIn(t, "<ol>", "</ol>", HistoryRows(page3))
	require.NotContains(t, raw2, "<ol", "the HX fragment has no wrapper")
	require.NotContains(t, raw2, "<html", "the HX fragment has no layout")

	list := first.Find("ol")
	list.Find(testid("history-more")).ReplaceWithHtml(raw2)
	require.Equal(t, "/h?after_sequence=6", attr(t, list.Find(testid("history-load-more")), "hx-get"))
	list.Find(testid("history-more")).ReplaceWithHtml(raw3)

	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7}, sequences(t, list.Find(testid("history-event"))))
	require.Zero(t, list.Find(testid("history-load-more")).Length(), "the last page removes the button")
}

func TestHistoryEmptyAndFromStart(t *testing.T) {
	t.Parallel()
	doc := render(t, HistoryPanel(HistoryView{ScheduleID: "s1", FromStartURL: "/waterline/schedules/s1/history"}))
	require.Equal(t, "No events.", text(doc.Find(testid("history-empty"))))
	require.Equal(t, "/waterline/schedules/s1/history", attr(t, doc.Find(testid("history-from-start")), "href"))
	require.Zero(t, doc.Find(testid("history-load-more")).Length())
}
