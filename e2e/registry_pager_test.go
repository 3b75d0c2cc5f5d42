package e2e

import (
	"fmt"
	"net/http"
	"testing"
)

// Scenario (issue 37 §7): the registry's pager says where the page is in
// the whole ("3–4 of 5") and goes back with Previous as well as forward;
// "Select all N matching" pauses the filter's whole result — every page —
// after saying how many, without JavaScript too.
func TestRegistryPagerPreviousTotalAndSelectAll(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		for i := 1; i <= 5; i++ {
			api.createSchedule(sched{ID: fmt.Sprintf("batch-%d", i), Cron: "0 * * * *"})
		}
		api.createSchedule(sched{ID: "unrelated", Cron: "0 * * * *"})

		for _, js := range []bool{true, false} {
			page := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: !js})
			holdAutoRefresh(t, page)
			openRegistry(t, page, "?q=batch&sort=schedule_id&limit=2")
			pager := page.GetByTestId("pager")
			rows := page.GetByTestId("schedule-row")
			must(t, "page 1", expect.Locator(pager.GetByTestId("pager-range")).ToHaveText("1–2 of 5"))
			must(t, "no Previous on page 1", expect.Locator(pager.GetByTestId("prev-page")).ToHaveCount(0))
			must(t, "next", pager.GetByTestId("next-page").Click())
			must(t, "page 2", expect.Locator(pager.GetByTestId("pager-range")).ToHaveText("3–4 of 5"))
			must(t, "page 2 rows", expect.Locator(rows.First()).ToHaveAttribute("data-schedule-id", "batch-3"))
			must(t, "next", pager.GetByTestId("next-page").Click())
			must(t, "page 3", expect.Locator(pager.GetByTestId("pager-range")).ToHaveText("5 of 5"))
			must(t, "previous", pager.GetByTestId("prev-page").Click())
			must(t, "back on page 2", expect.Locator(pager.GetByTestId("pager-range")).ToHaveText("3–4 of 5"))
			must(t, "page 2 rows again", expect.Locator(rows.First()).ToHaveAttribute("data-schedule-id", "batch-3"))
			must(t, "previous", pager.GetByTestId("prev-page").Click())
			must(t, "back on page 1", expect.Locator(pager.GetByTestId("pager-range")).ToHaveText("1–2 of 5"))
			must(t, "page 1 rows", expect.Locator(rows.First()).ToHaveAttribute("data-schedule-id", "batch-1"))

			// Select all 5 matching, from a page that shows two.
			all := page.GetByTestId("bulk-all")
			must(t, "offer", expect.Locator(all.GetByTestId("bulk-all-open")).ToHaveText("Select all 5 matching…"))
			action, verb := "pause", "Paused"
			if !js {
				action, verb = "resume", "Resumed"
			}
			must(t, "open", all.GetByTestId("bulk-all-open").Click())
			must(t, "the count", expect.Locator(all.GetByTestId("bulk-all-count")).ToContainText("all 5 schedules"))
			must(t, "reason", all.GetByTestId("bulk-all-reason").Fill("maintenance window"))
			must(t, action, all.GetByTestId("bulk-all-"+action).Click())
			must(t, "flash", expect.Locator(page.GetByTestId("flash")).ToContainText(verb+" 5 schedules."))
			for i := 1; i <= 5; i++ {
				var s struct {
					Status string `json:"status"`
				}
				api.must(http.MethodGet, fmt.Sprintf("/schedules/batch-%d", i), nil, http.StatusOK, &s)
				if want := map[bool]string{true: "paused", false: "active"}[js]; s.Status != want {
					t.Fatalf("batch-%d is %s after %s all matching, want %s", i, s.Status, action, want)
				}
			}
			var other struct {
				Status string `json:"status"`
			}
			api.must(http.MethodGet, "/schedules/unrelated", nil, http.StatusOK, &other)
			if other.Status != "active" {
				t.Fatalf("a schedule outside the filter is %s", other.Status)
			}
		}

		// On a phone it comes with the bulk bar, once a row is selected.
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		holdAutoRefresh(t, page)
		must(t, "phone", page.SetViewportSize(390, 844))
		openRegistry(t, page, "?q=batch&sort=schedule_id&limit=2")
		offer := page.GetByTestId("bulk-all-open")
		must(t, "hidden before a selection", expect.Locator(offer).ToBeHidden())
		must(t, "select a row", scheduleRow(page, "batch-1").GetByTestId("bulk-select").Check())
		must(t, "shown with the bulk bar", expect.Locator(offer).ToBeVisible())
		must(t, "the total on a phone", expect.Locator(page.GetByTestId("pager-range")).ToHaveText("1–2 of 5"))
	})
}
