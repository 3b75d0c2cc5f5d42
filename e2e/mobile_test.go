package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// phoneWidth × phoneHeight is the phone the console is checked on.
const phoneWidth, phoneHeight = 390, 844

// noHorizontalScroll waits until the page is no wider than the screen
// (scrollWidth <= clientWidth; the root's scrollWidth is never less): what a
// phone user sees as a page that does not slide sideways. Tables may still
// scroll inside their own frame. (An expect assertion, not WaitForFunction:
// the console's CSP forbids the eval that WaitForFunction polls with.)
func noHorizontalScroll(t *testing.T, page playwright.Page, what string) {
	t.Helper()
	width, err := page.Evaluate(`() => document.documentElement.clientWidth`, nil)
	must(t, what+": client width", err)
	err = expect.Locator(page.Locator("html")).ToHaveJSProperty("scrollWidth", width)
	if err != nil {
		t.Fatalf("%s scrolls sideways on a %d px screen (client width %v): %v", what, phoneWidth, width, err)
	}
}

// Issue 21, point 9 (and 6 on a phone): at 390×844 the schedule page does
// not scroll sideways, even with long IDs, labels, a note and runs; its
// backfill's Start button is on screen after the dry run; and the create
// form shows the preview right after the cron field, not below the whole
// form.
func TestPhoneSchedulePageAndCreateForm(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		id := "nightly-billing-export-to-the-general-ledger"
		api.createSchedule(sched{ID: id, Cron: "0 2 * * *", Timezone: "America/Argentina/Buenos_Aires", WorkflowType: "billing.ExportInvoicesToTheGeneralLedger",
			Labels: map[string]string{"team": "billing", "cost-center": "finance-operations-emea"},
			Note:   "Exports the invoices of the day to the ledger; owner: billing on-call (PagerDuty: billing-primary)"})
		day := time.Now().UTC().Truncate(24 * time.Hour)
		api.backfill(id, day.Add(-72*time.Hour), day.Add(-24*time.Hour))
		api.must(http.MethodPost, "/schedules/"+id+"/trigger", map[string]any{}, http.StatusOK, nil)

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "phone viewport", page.SetViewportSize(phoneWidth, phoneHeight))
		gotoOK(t, page, "/waterline/schedules/"+id)
		must(t, "detail page", expect.Locator(page.GetByTestId("schedule-id")).ToHaveText(id))
		noHorizontalScroll(t, page, "the schedule page")

		// Backfill from the schedule page: after the dry run, Start is on
		// screen without scrolling.
		must(t, "open Backfill", page.GetByTestId("action-backfill").Click())
		panel := page.GetByTestId("backfill-panel")
		must(t, "backfill panel", expect.Locator(panel).ToBeVisible())
		must(t, "from", panel.GetByTestId("input-from").Fill("2026-01-01T00:00"))
		must(t, "to", panel.GetByTestId("input-to").Fill("2026-01-31T00:00"))
		// The schedule's skip policy would skip every night behind the
		// runs started above; allow_all starts them all.
		_, err := panel.GetByTestId("input-overlap_policy").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("allow_all")})
		must(t, "overlap policy", err)
		must(t, "preview", panel.GetByTestId("backfill-preview").Click())
		must(t, "thirty nights", expect.Locator(panel.GetByTestId("backfill-summary")).ToHaveText("would start 30 · skipped 0"))
		must(t, "Start on a phone's screen", expect.Locator(panel.GetByTestId("backfill-confirm")).ToBeInViewport())
		must(t, "close the modal", page.GetByTestId("modal-close").Click())

		// The create form: the preview follows the cron field.
		gotoOK(t, page, "/waterline/schedules/new")
		fill(t, page, "cron_expressions", "30 6 * * 1-5")
		preview := page.GetByTestId("spec-preview")
		must(t, "live description", expect.Locator(preview.GetByTestId("spec-description")).ToContainText("At 06:30 on Monday through Friday"))
		cron, err := page.GetByTestId("input-cron_expressions").BoundingBox()
		must(t, "cron field box", err)
		when, err := page.Locator(`fieldset:has([data-testid="input-cron_expressions"])`).BoundingBox()
		must(t, "When fieldset box", err)
		next, err := page.Locator(`fieldset:has([data-testid="input-workflow_type"])`).BoundingBox()
		must(t, "next fieldset box", err)
		box, err := preview.BoundingBox()
		must(t, "preview box", err)
		// Right after the fields it previews (cron, intervals, zone), before
		// the rest of the form, and within half a screen of the cron field.
		if gap := box.Y - (when.Y + when.Height); gap < 0 || gap > 32 {
			t.Fatalf("the preview starts %.0f px after the When fields, want right after them (0–32 px)", gap)
		}
		if next.Y < box.Y+box.Height {
			t.Fatalf("the preview (y %.0f–%.0f) is not above the rest of the form (y %.0f)", box.Y, box.Y+box.Height, next.Y)
		}
		if gap := box.Y - (cron.Y + cron.Height); gap > phoneHeight/2 {
			t.Fatalf("the preview starts %.0f px below the cron field, more than half a screen", gap)
		}
		if box.X < 0 || box.X+box.Width > phoneWidth {
			t.Fatalf("the preview spans x %.0f–%.0f, outside the %d px screen", box.X, box.X+box.Width, phoneWidth)
		}
		noHorizontalScroll(t, page, "the create form")
	})
}

// Issue 37 §14: on a phone the registry starts close to its first card —
// the filters show their placeholders, not separate labels, and the bulk
// bar appears only once a row is selected (CSS, so also without
// JavaScript).
func TestPhoneRegistryStartsNearItsFirstCard(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		for _, id := range []string{"alpha-report", "beta-report", "gamma-report"} {
			api.createSchedule(sched{ID: id, Cron: "0 2 * * *", WorkflowType: "reports.Daily"})
		}
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "phone viewport", page.SetViewportSize(phoneWidth, phoneHeight))
		gotoOK(t, page, "/waterline/schedules")
		bulk := page.GetByTestId("bulk-form")
		must(t, "no bulk bar before a selection", expect.Locator(bulk).ToBeHidden())
		must(t, "the search field keeps its accessible name", expect.Locator(page.GetByLabel("Search")).ToBeVisible())
		label, err := page.Locator(`label[for="filter-q"]`).BoundingBox()
		must(t, "the search label's box", err)
		if label.Height > 1 {
			t.Errorf("the search field's label takes %.0f px on a phone; its placeholder says what it is", label.Height)
		}
		first, err := page.GetByTestId("bulk-select").First().BoundingBox()
		must(t, "first card's checkbox", err)
		// Before: ~600 px of controls (filters with labels, the bulk bar,
		// chips, sorts) above the first card.
		if first.Y > 540 {
			t.Errorf("the first card starts %.0f px down the phone's screen, want within 540 px", first.Y)
		}
		must(t, "select a row", page.GetByTestId("bulk-select").First().Check())
		must(t, "the bulk bar appears", expect.Locator(bulk).ToBeVisible())
		must(t, "unselect", page.GetByTestId("bulk-select").First().Uncheck())
		must(t, "and goes", expect.Locator(bulk).ToBeHidden())
		noHorizontalScroll(t, page, "the registry")
	})
}
