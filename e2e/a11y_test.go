package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// The accessibility check runs axe-core (Deque's engine, the one behind
// axe DevTools and Lighthouse's accessibility audit), version-pinned and
// fetched from npm by e2e/setup.sh into .cache/axe-core. It is evaluated in
// the page through the DevTools protocol (page.Evaluate), which the
// console's Content-Security-Policy does not govern — an injected <script>
// tag would be refused by script-src 'self', rightly. Violations of impact
// "serious" or "critical" fail the test; "moderate" and "minor" are logged.

var axeSource struct {
	once sync.Once
	text string
	err  error
}

func loadAxe(t *testing.T) string {
	t.Helper()
	axeSource.once.Do(func() {
		var b []byte
		b, axeSource.err = os.ReadFile(filepath.Join("..", ".cache", "axe-core", "package", "axe.min.js"))
		axeSource.text = string(b)
	})
	if axeSource.err != nil {
		t.Fatalf("e2e: axe-core is missing (%v); run e2e/setup.sh", axeSource.err)
	}
	return axeSource.text
}

type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// checkA11y runs axe on the page as it is (WCAG 2.x A and AA rules and
// axe's best practices) and fails on serious or critical violations.
func checkA11y(t *testing.T, page playwright.Page, what string) {
	t.Helper()
	if serious := seriousViolations(t, page, what); len(serious) > 0 {
		t.Errorf("%s (%s): %d serious or critical accessibility violations:\n  %s", what, page.URL(), len(serious), strings.Join(serious, "\n  "))
	}
}

// checkA11yWithin is checkA11y for the part of the page that selector
// (a CSS selector) matches: what a test of one component answers for.
func checkA11yWithin(t *testing.T, page playwright.Page, selector, what string) {
	t.Helper()
	if serious := seriousViolationsIn(t, page, selector, what); len(serious) > 0 {
		t.Errorf("%s (%s, %s): %d serious or critical accessibility violations:\n  %s", what, page.URL(), selector, len(serious), strings.Join(serious, "\n  "))
	}
}

// seriousViolations returns axe's serious and critical violations, one
// line each with up to three offending nodes, and logs the milder ones.
func seriousViolations(t *testing.T, page playwright.Page, what string) []string {
	t.Helper()
	return seriousViolationsIn(t, page, "", what)
}

// seriousViolationsIn is seriousViolations within selector ("" for the
// whole document).
func seriousViolationsIn(t *testing.T, page playwright.Page, selector, what string) []string {
	t.Helper()
	if loaded, err := page.Evaluate(`() => typeof window.axe === "object"`); err != nil || loaded != true {
		if _, err := page.Evaluate(loadAxe(t)); err != nil {
			t.Fatalf("%s: load axe-core: %v", what, err)
		}
	}
	raw, err := page.Evaluate(`async (selector) => {
		const r = await axe.run(selector ? document.querySelector(selector) : document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"] }, resultTypes: ["violations"] });
		return JSON.stringify(r.violations);
	}`, selector)
	if err != nil {
		t.Fatalf("%s: axe.run: %v", what, err)
	}
	var violations []axeViolation
	if err := json.Unmarshal([]byte(raw.(string)), &violations); err != nil {
		t.Fatalf("%s: decode axe's answer: %v", what, err)
	}
	var serious []string
	for _, v := range violations {
		var nodes []string
		for i, n := range v.Nodes {
			if i == 3 {
				nodes = append(nodes, fmt.Sprintf("… %d more", len(v.Nodes)-3))
				break
			}
			nodes = append(nodes, fmt.Sprintf("%v %s", n.Target, n.HTML))
		}
		line := fmt.Sprintf("%s [%s] %s:\n      %s", v.ID, v.Impact, v.Help, strings.Join(nodes, "\n      "))
		if v.Impact == "serious" || v.Impact == "critical" {
			serious = append(serious, line)
		} else {
			t.Logf("%s: axe (%s, not failing): %s", what, v.Impact, line)
		}
	}
	return serious
}

// The check can fail: a page with an unlabelled button and an image
// without alt text is reported.
func TestA11yCheckReportsViolations(t *testing.T) {
	page := newPage(t)
	must(t, "set content", page.SetContent(`<!DOCTYPE html><html lang="en"><head><title>x</title></head><body><main><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><button></button></main></body></html>`))
	got := strings.Join(seriousViolations(t, page, "bad page"), "\n")
	for _, rule := range []string{"image-alt", "button-name"} {
		if !strings.Contains(got, rule) {
			t.Errorf("axe did not report %s; it reported:\n%s", rule, got)
		}
	}
}

// Scenario (issue 21, acceptance): the console's main pages — registry
// (with its ⋯ menu open, and on a phone), schedule page, run, runs list,
// history, create form, backfill form and sign-in — have no serious or
// critical accessibility violations.
func TestMainPagesAreAccessible(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "invoice-sync", Cron: "30 2 * * *", Timezone: "America/New_York", WorkflowType: "billing.InvoiceSync",
			Labels: map[string]string{"team": "billing"}, Note: "nightly invoices"})
		api.createSchedule(sched{ID: "paused-report", Cron: "0 6 * * 1", Paused: true})
		var run struct {
			RunID string `json:"run_id"`
		}
		api.must(http.MethodPost, "/schedules/invoice-sync/trigger", map[string]any{}, http.StatusOK, &run)
		claimed := api.claim("a11y")
		if len(claimed) != 1 {
			t.Fatalf("claimed %v", claimed)
		}
		api.must(http.MethodPost, "/worker/runs/"+run.RunID+"/fail", map[string]any{"worker_id": "a11y", "message": "upstream 503", "type": "http"}, http.StatusOK, nil)
		// Two more finished runs: the health strips hold several dots side
		// by side, where a target-size problem shows (issue 37 §8).
		for range 2 {
			var again struct {
				RunID string `json:"run_id"`
			}
			api.must(http.MethodPost, "/schedules/invoice-sync/trigger", map[string]any{}, http.StatusOK, &again)
			if got := api.claim("a11y"); len(got) != 1 {
				t.Fatalf("claimed %v", got)
			}
			api.must(http.MethodPost, "/worker/runs/"+again.RunID+"/complete", map[string]any{"worker_id": "a11y"}, http.StatusOK, nil)
		}

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		holdAutoRefresh(t, page)
		for _, p := range []struct{ path, what string }{
			{"/waterline/schedules", "registry"},
			{"/waterline/schedules/invoice-sync", "schedule page"},
			{"/waterline/runs/" + run.RunID, "run page"},
			{"/waterline/runs", "runs list"},
			{"/waterline/schedules/invoice-sync/history", "history"},
			{"/waterline/schedules/new", "create form"},
			{"/waterline/schedules/invoice-sync/backfill", "backfill form"},
		} {
			gotoOK(t, page, p.path)
			checkA11y(t, page, p.what)
		}

		openRegistry(t, page, "")
		rowAction(t, scheduleRow(page, "invoice-sync"), "action-trigger")
		checkA11y(t, page, "registry with a ⋯ menu open")
		must(t, "phone viewport", page.SetViewportSize(390, 844))
		gotoOK(t, page, "/waterline/schedules")
		checkA11y(t, page, "registry on a phone")

		authed, _ := authServer(t, serverOptions{Database: srv.Database, Args: []string{"--no-loop"}})
		login := newPage(t, pageOptions{BaseURL: authed.BaseURL})
		gotoOK(t, login, "/waterline/login")
		checkA11y(t, login, "sign-in")
	})
}
