package e2e

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// downReceiver is a receiver on 127.0.0.1 that answers 503 until up is
// set: a webhook endpoint that is down, then repaired.
func downReceiver(t *testing.T) (url string, up *atomic.Bool) {
	t.Helper()
	up = new(atomic.Bool)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hooks/pager", up
}

// Issue 37, major 5, in a real Chromium: a notifier whose receiver is down
// reads "failing since …" with its last error and pending and dead counts
// on the Notifiers list and its own page, the registry warns that alerts
// are not being delivered, and the notifier's dead deliveries go back with
// one click and arrive once the receiver is back. Screenshots of the failing notifier at 1440×900 and 390×844
// (docs/ with TIDELINE_SCREENSHOTS=1).
func TestDeadNotifierInTheConsole(t *testing.T) {
	forEachDatabase(t, allowPrivateNotifiers, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		target, up := downReceiver(t)
		api.must(http.MethodPost, "/notifiers", map[string]any{"name": "pager", "url": target, "events": []string{"run_failed"}}, http.StatusCreated, nil)
		api.createSchedule(sched{ID: "nightly-ledger-export", Cron: "0 2 * * *", WorkflowType: "ledger.Export", Overlap: "allow_all"})
		var tr struct {
			RunID string `json:"run_id"`
		}
		api.must(http.MethodPost, "/schedules/nightly-ledger-export/trigger", map[string]any{}, http.StatusOK, &tr)
		api.claim("w1")
		api.fail("w1", tr.RunID, "upload refused: 403 AccessDenied") // a run_failed for pager, retried in the background

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		gotoOK(t, page, "/waterline/notifiers/pager")
		for range 2 {
			must(t, "send test", page.GetByTestId("send-test").First().Click())
			must(t, "the test failed", expect.Locator(page.GetByTestId("flash")).ToContainText("receiver answered 503"))
		}
		panel := page.GetByTestId("notifier-health-panel")
		must(t, "failing", expect.Locator(panel).ToHaveAttribute("data-state", "failing"))
		must(t, "since", expect.Locator(panel.GetByTestId("notifier-state")).ToHaveText("failing"))
		must(t, "last error", expect.Locator(panel.GetByTestId("notifier-last-error")).ToContainText("receiver answered 503"))
		must(t, "two dead", expect.Locator(panel.GetByTestId("notifier-dead")).ToHaveText("2"))
		must(t, "the run_failed waits", expect.Locator(panel.GetByTestId("notifier-pending")).ToHaveText("1"))

		gotoOK(t, page, "/waterline/schedules")
		banner := page.GetByTestId("alerts-warning")
		must(t, "the registry warns", expect.Locator(banner).ToContainText("Alerts are not being delivered: notifier pager is failing since"))
		must(t, "with the counts", expect.Locator(banner).ToContainText("1 pending, 2 dead"))
		must(t, "to the notifiers", banner.GetByTestId("alerts-warning-link").Click())
		row := page.Locator(`[data-testid="notifier-row"][data-name="pager"]`)
		must(t, "failing in the list", expect.Locator(row.GetByTestId("notifier-health")).ToHaveAttribute("data-state", "failing"))
		must(t, "dead in the list", expect.Locator(row.GetByTestId("notifier-dead")).ToHaveText("2"))
		must(t, "error in the list", expect.Locator(row.GetByTestId("notifier-last-error")).ToContainText("receiver answered 503"))
		noHorizontalScroll(t, page, "the notifiers page")

		for _, vp := range []struct {
			name          string
			width, height int
		}{{"desktop", 1440, 900}, {"phone", 390, 844}} {
			shot := newPage(t, pageOptions{BaseURL: srv.BaseURL})
			must(t, "viewport", shot.SetViewportSize(vp.width, vp.height))
			gotoOK(t, shot, "/waterline/notifiers")
			noHorizontalScroll(t, shot, "the notifiers page at "+vp.name)
			shootJob(t, shot, "console-notifiers-failing-"+vp.name+".png")
			gotoOK(t, shot, "/waterline/notifiers/pager")
			noHorizontalScroll(t, shot, "the notifier's page at "+vp.name)
			shootJob(t, shot, "console-notifier-dead-"+vp.name+".png")
			must(t, "the delivery log", shot.GetByTestId("deliveries-table").ScrollIntoViewIfNeeded())
			shootJob(t, shot, "console-notifier-log-"+vp.name+".png")
		}

		// The receiver is repaired; the dead deliveries go back and arrive.
		up.Store(true)
		gotoOK(t, page, "/waterline/notifiers/pager")
		must(t, "redeliver all", page.GetByTestId("redeliver-all").Click())
		must(t, "said", expect.Locator(page.GetByTestId("flash")).ToHaveText("2 dead deliveries are pending again."))
		// Both redelivered tests arrive, one after the other, and the health
		// turns ok after the first; a page reads its rows and the health in
		// separate statements, so one load can show either ahead of the
		// other. Reload until one load shows the end state whole.
		reloadUntil(t, page, "the notifier delivering again", func(opt playwright.LocatorAssertionsToBeVisibleOptions) error {
			if err := expect.Locator(page.Locator(`[data-testid="notifier-health-panel"][data-state="ok"]`)).ToBeVisible(opt); err != nil {
				return err
			}
			return expect.Locator(page.Locator(`[data-testid="delivery-row"][data-status="delivered"]`)).ToHaveCount(2, playwright.LocatorAssertionsToHaveCountOptions{Timeout: opt.Timeout})
		})
		must(t, "none dead", expect.Locator(page.GetByTestId("notifier-dead")).ToHaveText("0"))
		gotoOK(t, page, "/waterline/schedules")
		must(t, "no more warning", expect.Locator(page.GetByTestId("alerts-warning")).ToHaveCount(0))
	})
}
