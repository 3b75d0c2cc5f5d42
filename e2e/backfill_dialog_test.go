package e2e

import (
	"strings"
	"sync"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// Issue 37 §4 and §15 in a real Chromium: the backfill dialog, opened from a
// schedule's page as a modal (htmx), previews under a chosen overlap
// policy and starts; no swap of it breaks the Content-Security-Policy (the
// report was an inline style refused on every swap). Screenshots of the
// dry run at 1440×900 and 390×844 (docs/ with TIDELINE_SCREENSHOTS=1).
func TestBackfillDialogKeepsTheCSP(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "nightly-settlement", Cron: "0 2 * * *", Timezone: "America/New_York", WorkflowType: "settlement.Nightly"})
		for _, vp := range []struct {
			name          string
			width, height int
		}{{"phone", 390, 844}, {"desktop", 1440, 900}} { // the desktop pass starts the backfill, last
			page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
			var mu sync.Mutex
			var refused []string
			page.OnConsole(func(m playwright.ConsoleMessage) {
				if text := m.Text(); strings.Contains(text, "Content Security Policy") || strings.Contains(text, "Refused to") {
					mu.Lock()
					refused = append(refused, text)
					mu.Unlock()
				}
			})
			must(t, "viewport", page.SetViewportSize(vp.width, vp.height))
			gotoOK(t, page, "/waterline/schedules/nightly-settlement")
			must(t, "open Backfill", page.GetByTestId("action-backfill").Click())
			panel := page.GetByTestId("backfill-panel")
			must(t, "the dialog", expect.Locator(panel).ToBeVisible())
			must(t, "from", panel.GetByTestId("input-from").Fill("2026-01-01T00:00"))
			must(t, "to", panel.GetByTestId("input-to").Fill("2026-01-11T00:00"))
			_, err := panel.GetByTestId("input-overlap_policy").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("allow_all")})
			must(t, "policy", err)
			must(t, "reason", panel.GetByTestId("input-reason").Fill("re-run after the ledger fix"))
			must(t, "preview", panel.GetByTestId("backfill-preview").Click())
			must(t, "ten nights", expect.Locator(panel.GetByTestId("backfill-summary")).ToHaveText("would start 10 · skipped 0"))
			shootJob(t, page, "console-backfill-dialog-"+vp.name+".png")
			if vp.name == "desktop" {
				must(t, "start", panel.GetByTestId("backfill-confirm").Click())
				must(t, "started", expect.Locator(page.GetByTestId("backfill-result")).ToContainText("Backfill started"))
			}
			mu.Lock()
			got := refused
			mu.Unlock()
			if len(got) > 0 {
				t.Errorf("%s: the dialog's swaps broke the CSP:\n%s", vp.name, strings.Join(got, "\n"))
			}
		}
	})
}
