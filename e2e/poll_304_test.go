package e2e

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// Scenario (issue 37 §7): the registry's poll, every 10 s, is answered 304
// with no body while nothing on the page changed, and the page keeps what
// it shows; once something changes (a schedule paused through the API) the
// next poll brings the new page and the row shows it without a reload.
func TestRegistryPollsAre304UntilSomethingChanges(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "yearly-a", Cron: "0 0 1 1 *"})
		api.createSchedule(sched{ID: "yearly-b", Cron: "0 0 1 1 *"})

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		openRegistry(t, page, "")
		// Each poll's status goes into the DOM, where expect can wait for it
		// (WaitForFunction would need eval, which the CSP forbids).
		_, err := page.Evaluate(`() => {
			const seen = [];
			document.addEventListener("htmx:afterRequest", e => {
				if (!e.detail.elt.hasAttribute("data-autorefresh")) return;
				seen.push(e.detail.xhr.status + ":" + e.detail.xhr.responseText.length);
				document.body.dataset.polls = seen.join(",");
			});
		}`)
		must(t, "record the polls", err)
		polls := page.Locator("body")
		wait := playwright.LocatorAssertionsToHaveAttributeOptions{Timeout: playwright.Float(35_000)}
		must(t, "the first poll is answered whole, the second 304 with no body",
			expect.Locator(polls).ToHaveAttribute("data-polls", regexp.MustCompile(`^200:[1-9]\d*,304:0`), wait))
		row := scheduleRow(page, "yearly-a")
		must(t, "the rows are still there after a 304", expectStatus(row, "active"))

		api.must(http.MethodPost, "/schedules/yearly-a/pause", map[string]any{"reason": "poll test"}, http.StatusOK, nil)
		must(t, "the next poll brings the change",
			expect.Locator(polls).ToHaveAttribute("data-polls", regexp.MustCompile(`304:0(,304:0)*,200:[1-9]`), wait))
		must(t, "paused without a reload", expectStatus(row, "paused"))
		must(t, "and the one after it is a 304 again",
			expect.Locator(polls).ToHaveAttribute("data-polls", regexp.MustCompile(`,200:[1-9]\d*,304:0`), wait))
		must(t, "still paused", expectStatus(scheduleRow(page, "yearly-a"), "paused"))
	})
}
