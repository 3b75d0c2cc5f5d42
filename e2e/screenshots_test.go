package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// screenshotsEnv, set to 1, makes TestConsoleScreenshots (re)write the
// console screenshots the README links to.
const screenshotsEnv = "TIDELINE_SCREENSHOTS"

// TestConsoleScreenshots writes docs/console-registry.png (the registry at
// 1440×900 with a failing schedule), docs/console-schedule.png (a schedule
// page, whole), docs/console-registry-phone.png (390×844),
// docs/console-registry-history.png (the History modal) and
// docs/console-create-form.png (the create form with its live preview, both
// at 1280×800), signed in as an admin. Run it after visible console changes:
//
//	TIDELINE_SCREENSHOTS=1 go test ./e2e/ -run TestConsoleScreenshots
func TestConsoleScreenshots(t *testing.T) {
	if os.Getenv(screenshotsEnv) != "1" {
		t.Skipf("set %s=1 to write docs/console-registry-history.png and docs/console-create-form.png", screenshotsEnv)
	}
	srv, toks := authServer(t, serverOptions{})
	api := newAPI(t, srv)
	api.Token = toks.Admin

	// A small but lived-in registry.
	for _, s := range []sched{
		{ID: "nightly-billing-export", Cron: "0 2 * * *", Timezone: "America/New_York", WorkflowType: "billing.ExportInvoices",
			Labels: map[string]string{"team": "billing"}},
		{ID: "hourly-inventory-sync", Every: "PT1H", Offset: "PT5M", WorkflowType: "inventory.SyncWarehouses",
			Overlap: "buffer_one", Labels: map[string]string{"team": "supply"}},
		{ID: "weekday-standup-digest", Cron: "30 9 * * 1-5", Timezone: "Europe/Berlin", WorkflowType: "notify.StandupDigest"},
		{ID: "monthly-ledger-close", Cron: "0 0 1 * *", WorkflowType: "finance.CloseLedger", Labels: map[string]string{"team": "finance"}},
		{ID: "search-index-refresh", Cron: "*/30 * * * *", WorkflowType: "search.RefreshIndex", Overlap: "allow_all"},
		{ID: "fraud-model-retrain", Cron: "0 4 * * 0", Timezone: "Asia/Singapore", WorkflowType: "ml.RetrainFraudModel",
			Labels: map[string]string{"team": "risk"}},
	} {
		api.createSchedule(s)
	}
	post := func(path string, body any) {
		t.Helper()
		api.must(http.MethodPost, path, body, http.StatusOK, nil)
	}
	// nightly-billing-export: a manual run still going, a skipped second
	// try, a pause for a change and the resume; its History is the modal.
	post("/schedules/nightly-billing-export/trigger", map[string]any{})
	post("/schedules/nightly-billing-export/trigger", map[string]any{"overlap_policy": "skip"})
	post("/schedules/nightly-billing-export/pause", map[string]any{"reason": "Invoice template migration (CHG-2291)"})
	post("/schedules/nightly-billing-export/resume", map[string]any{})
	post("/schedules/monthly-ledger-close/pause", map[string]any{"reason": "Waiting for the Q4 audit sign-off"})
	day := time.Now().UTC().Truncate(24 * time.Hour)
	api.backfill("search-index-refresh", day.Add(-3*time.Hour), day.Add(-time.Hour))
	post("/schedules/hourly-inventory-sync/trigger", map[string]any{})

	// fraud-model-retrain: one good run, then two failures in a row, so
	// the registry's health column has something to say.
	for i, outcome := range []string{"complete", "fail", "fail"} {
		var tr struct {
			RunID string `json:"run_id"`
		}
		api.must(http.MethodPost, "/schedules/fraud-model-retrain/trigger", map[string]any{}, http.StatusOK, &tr)
		api.must(http.MethodPost, "/worker/poll", map[string]any{"worker_id": "shots", "limit": 10}, http.StatusOK, nil)
		body := map[string]any{"worker_id": "shots"}
		if outcome == "fail" {
			body["message"] = fmt.Sprintf("feature store timeout after 30 s (attempt %d)", i)
			body["type"] = "timeout"
		}
		api.must(http.MethodPost, "/worker/runs/"+tr.RunID+"/"+outcome, body, http.StatusOK, nil)
	}

	page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
	must(t, "viewport", page.SetViewportSize(1440, 900))
	holdAutoRefresh(t, page)
	gotoOK(t, page, "/waterline/login")
	signIn(t, page, toks.Admin)
	must(t, "registry", expect.Locator(page.GetByTestId("schedule-row")).ToHaveCount(6))
	must(t, "failing", expect.Locator(scheduleRow(page, "fraud-model-retrain").GetByTestId("consecutive-failures")).ToHaveText("2 failures in a row"))
	noCutOff(t, page, "the registry at 1440×900")
	shoot(t, page, "console-registry.png")

	// The schedule page: health facts, the ledger heatmap, runs (whole page).
	gotoOK(t, page, "/waterline/schedules/search-index-refresh")
	must(t, "ledger", expect.Locator(page.GetByTestId("ledger").First()).ToBeVisible())
	shootFull(t, page, "console-schedule.png")

	// The registry on a phone: cards.
	must(t, "phone viewport", page.SetViewportSize(390, 844))
	gotoOK(t, page, "/waterline/schedules")
	must(t, "cards", expect.Locator(page.GetByTestId("schedule-row").First()).ToHaveCSS("display", "grid"))
	must(t, "scroll to the cards", page.GetByTestId("health-chips").ScrollIntoViewIfNeeded())
	shoot(t, page, "console-registry-phone.png")
	must(t, "laptop viewport", page.SetViewportSize(1280, 800))
	gotoOK(t, page, "/waterline/schedules")

	row := scheduleRow(page, "nightly-billing-export")
	must(t, "open History", rowAction(t, row, "action-history").Click())
	modal := page.GetByTestId("modal")
	must(t, "history modal", expect.Locator(modal).ToBeVisible())
	must(t, "oldest first", modal.GetByTestId("history-order-toggle").Click())
	must(t, "oldest first shown", expect.Locator(modal.GetByTestId("history-order")).ToHaveText("oldest first"))
	must(t, "history events", expect.Locator(modal.GetByTestId("history-event")).ToHaveCount(5))
	must(t, "last event", expect.Locator(modal.GetByTestId("history-event").Last().GetByTestId("event-type")).ToHaveText("ScheduleResumed"))
	shoot(t, page, "console-registry-history.png")

	must(t, "close the modal", modal.GetByTestId("modal-close").Click())
	must(t, "New schedule", page.GetByTestId("new-schedule").Click())
	must(t, "create form", expect.Locator(page.GetByTestId("schedule-form")).ToBeVisible())
	fill(t, page, "schedule_id", "quarterly-tax-report")
	fill(t, page, "cron_expressions", "0 6 1 1,4,7,10 *")
	fill(t, page, "timezone", "Europe/London")
	fill(t, page, "workflow_type", "finance.QuarterlyTaxReport")
	fill(t, page, "input", `{"format": "pdf", "notify": ["tax@example.com"]}`)
	fill(t, page, "labels", "team=finance\ntier=critical")
	fill(t, page, "note", "Owned by the finance platform team")
	preview := page.GetByTestId("spec-preview")
	must(t, "live preview", expect.Locator(preview.GetByTestId("preview-fire-time")).ToHaveCount(10))
	must(t, "live description", expect.Locator(preview.GetByTestId("spec-description")).ToContainText("Europe/London"))
	// The preview sits beside the form's top; the caret leaves the last field.
	must(t, "scroll to the top", page.Locator("h1").ScrollIntoViewIfNeeded())
	must(t, "blur", page.Locator("h1").Click())
	shoot(t, page, "console-create-form.png")
}

// shootFull saves the whole page as docs/name.
func shootFull(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	path := filepath.Join(repoRoot, "docs", name)
	_, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(path), FullPage: playwright.Bool(true),
		Animations: playwright.ScreenshotAnimationsDisabled})
	must(t, "screenshot "+name, err)
	t.Logf("wrote %s", path)
}

// shoot saves the viewport as docs/name.
func shoot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	path := filepath.Join(repoRoot, "docs", name)
	_, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(path), Animations: playwright.ScreenshotAnimationsDisabled})
	must(t, "screenshot "+name, err)
	t.Logf("wrote %s", path)
}
