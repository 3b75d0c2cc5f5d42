package e2e

import (
	"slices"
	"strconv"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// Issue 21, point 5: the History modal opens newest first with the total;
// "Load more" goes on down by cursor; the toggle turns it oldest first; the
// event-type filter keeps one type, counts it, and survives the toggle.
func TestHistoryNewestFirstToggleAndFilter(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		want := historyFixture(t, api, "order-ingest", 130) // ScheduleCreated, SchedulePaused, 130 × ScheduleTriggered
		newest := slices.Clone(want)
		slices.Reverse(newest)

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		must(t, "open History", rowAction(t, scheduleRow(page, "order-ingest"), "action-history").Click())
		modal := page.GetByTestId("modal")
		must(t, "history modal open", expect.Locator(modal).ToBeVisible())
		events := modal.GetByTestId("history-event")
		total := modal.GetByTestId("history-total")
		order := modal.GetByTestId("history-order")

		// Newest first, by default, with the total.
		must(t, "newest first", expect.Locator(order).ToHaveText("newest first"))
		must(t, "the total", expect.Locator(total).ToHaveText(strconv.Itoa(len(want))+" events"))
		must(t, "first page", expect.Locator(events).ToHaveCount(100))
		if got := sequences(t, modal); !equalInts(got, newest[:100]) {
			t.Fatalf("newest first shows %v…, want %v…", got[:5], newest[:5])
		}
		must(t, "the newest event on top", expect.Locator(events.First().GetByTestId("event-type")).ToHaveText("ScheduleTriggered"))
		must(t, "Load more", modal.GetByTestId("history-load-more").Click())
		must(t, "every event", expect.Locator(events).ToHaveCount(len(want)))
		if got := sequences(t, modal); !equalInts(got, newest) {
			t.Fatalf("after Load more newest first shows %d events ending %v, want the API's %d in reverse", len(got), got[len(got)-3:], len(want))
		}
		must(t, "the oldest event last", expect.Locator(events.Last().GetByTestId("event-type")).ToHaveText("ScheduleCreated"))
		must(t, "no Load more at the end", expect.Locator(modal.GetByTestId("history-load-more")).ToHaveCount(0))

		// The toggle: oldest first, the same total.
		must(t, "toggle the order", modal.GetByTestId("history-order-toggle").Click())
		must(t, "oldest first", expect.Locator(order).ToHaveText("oldest first"))
		must(t, "oldest first page", expect.Locator(events).ToHaveCount(100))
		must(t, "the oldest event on top", expect.Locator(events.First()).ToHaveAttribute("data-sequence", strconv.FormatInt(want[0], 10)))
		must(t, "the total again", expect.Locator(total).ToHaveText(strconv.Itoa(len(want))+" events"))

		// The filter: one type, counted alone, in the order chosen.
		_, err := modal.GetByTestId("history-event-type").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("SchedulePaused")})
		must(t, "choose SchedulePaused", err)
		must(t, "filter", modal.GetByTestId("history-filter-submit").Click())
		must(t, "the filtered total", expect.Locator(total).ToHaveText("1 SchedulePaused event"))
		must(t, "one event", expect.Locator(events).ToHaveCount(1))
		must(t, "the paused event", expect.Locator(events.First().GetByTestId("event-type")).ToHaveText("SchedulePaused"))
		must(t, "still oldest first", expect.Locator(order).ToHaveText("oldest first"))

		// Back to newest first: the filter stays.
		must(t, "toggle back", modal.GetByTestId("history-order-toggle").Click())
		must(t, "newest first again", expect.Locator(order).ToHaveText("newest first"))
		must(t, "filter kept", expect.Locator(modal.GetByTestId("history-event-type")).ToHaveValue("SchedulePaused"))
		must(t, "the filtered total kept", expect.Locator(total).ToHaveText("1 SchedulePaused event"))

		_, err = modal.GetByTestId("history-event-type").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("ScheduleTriggered")})
		must(t, "choose ScheduleTriggered", err)
		must(t, "filter again", modal.GetByTestId("history-filter-submit").Click())
		must(t, "the triggered total", expect.Locator(total).ToHaveText("130 ScheduleTriggered events"))
		must(t, "newest fire on top", expect.Locator(events.First()).ToHaveAttribute("data-sequence", strconv.FormatInt(newest[0], 10)))
		must(t, "a page of them", expect.Locator(events).ToHaveCount(100))
	})
}
