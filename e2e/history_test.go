package e2e

import (
	"testing"
	"time"
)

// historyFixture creates schedule id (paused, so the scheduling loop never
// adds events of its own while the test pages through) and backfills n
// minutely occurrences through the JSON API: n more audit events. It returns
// every sequence as the API reports them, the oracle for the console.
func historyFixture(t *testing.T, api *apiClient, id string, n int) []int64 {
	t.Helper()
	api.createSchedule(sched{ID: id, Cron: "* * * * *", WorkflowType: "ingest.Minutely", Overlap: "allow_all", Paused: true})
	before := len(api.historySequences(id)) // ScheduleCreated, SchedulePaused
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := api.backfill(id, from, from.Add(time.Duration(n)*time.Minute))
	if job.Total != n || job.Started != n {
		t.Fatalf("backfill of %s: %+v, want %d occurrences started", id, job, n)
	}
	seqs := api.historySequences(id)
	if len(seqs) != before+n {
		t.Fatalf("the API lists %d events of %s, want %d", len(seqs), id, before+n)
	}
	checkIncreasing(t, "API history", seqs)
	return seqs
}

// Scenario 5: the History modal of a schedule with 252 events, switched to
// oldest first (it opens newest first: history_order_test.go), shows the
// first 100; each "Load more" appends the next 100 (by cursor) and the
// button is gone after the last page. Sequences strictly increase, none
// repeats, and they are exactly the API's.
func TestHistoryModalLoadMore(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		want := historyFixture(t, api, "minutely-ingest", 250)

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		row := scheduleRow(page, "minutely-ingest")
		must(t, "open History", rowAction(t, row, "action-history").Click())
		modal := page.GetByTestId("modal")
		must(t, "history modal open", expect.Locator(modal).ToBeVisible())
		must(t, "switch to oldest first", modal.GetByTestId("history-order-toggle").Click())
		must(t, "oldest first", expect.Locator(modal.GetByTestId("history-order")).ToHaveText("oldest first"))
		events := modal.GetByTestId("history-event")
		more := modal.GetByTestId("history-load-more")

		if len(want) <= 200 {
			t.Fatalf("the fixture made %d events; the scenario needs more than 200 (three pages)", len(want))
		}
		for i, count := range []int{100, 200, len(want)} {
			must(t, "events shown", expect.Locator(events).ToHaveCount(count))
			got := sequences(t, modal)
			checkIncreasing(t, "history modal", got)
			if !equalInts(got, want[:count]) {
				t.Fatalf("after %d × Load more the modal shows sequences %v…, want the API's %v…", i, got[:min(5, len(got))], want[:5])
			}
			if count == len(want) {
				break
			}
			must(t, "Load more shown", expect.Locator(more).ToBeVisible())
			must(t, "one Load more", expect.Locator(more).ToHaveCount(1))
			must(t, "Load more", more.Click())
		}
		must(t, "no Load more at the end", expect.Locator(more).ToHaveCount(0))
		must(t, "first event", expect.Locator(events.First().GetByTestId("event-type")).ToHaveText("ScheduleCreated"))
		must(t, "last event", expect.Locator(events.Last().GetByTestId("event-type")).ToHaveText("ScheduleTriggered"))
		must(t, "modal still open", expect.Locator(modal).ToBeVisible())
	})
}
