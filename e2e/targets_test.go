package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// An HTTP target through the real binary and a real browser: the server's
// executor calls a receiver here (a 503 first, then 200), the run page
// lists both attempts with the receiver's status, the schedule page names
// the target by kind and host, and the form keeps the secret write-only.
// Screenshots at 1440×900 and 390×844 go to the test's artefacts folder.
func TestHTTPTargetInTheConsole(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if calls.Add(1) == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"rows": 42}`)
	}))
	t.Cleanup(rx.Close)
	srv := startServer(t, serverOptions{Args: []string{"--allow-private-targets", "--loop-period", "100ms"}})
	api := newAPI(t, srv)
	api.must(http.MethodPost, "/schedules", map[string]any{
		"schedule_id": "close-ledger", "spec": map[string]any{"cron_expressions": []string{"0 2 * * *"}, "timezone": "Europe/Berlin"},
		"action": map[string]any{"workflow_type": "finance.CloseLedger", "input": map[string]any{"month": "2026-11"},
			"retry_policy": map[string]any{"max_attempts": 3, "initial_interval_seconds": 1},
			"target": map[string]any{"kind": "http", "url": rx.URL + "/jobs/close?key=k1", "secret": "e2e-secret-0123456789",
				"headers": map[string]any{"X-Team": "finance"}, "timeout_seconds": 20}},
	}, http.StatusCreated, nil)
	var tr struct {
		RunID string `json:"run_id"`
	}
	api.must(http.MethodPost, "/schedules/close-ledger/trigger", map[string]any{}, http.StatusOK, &tr)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var run struct {
			Status string `json:"status"`
		}
		api.must(http.MethodGet, "/runs/"+tr.RunID, nil, http.StatusOK, &run)
		if run.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is still %s", tr.RunID, run.Status)
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}

	page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
	expect := playwright.NewPlaywrightAssertions()
	shots := artifactDir(t)
	for _, vp := range []struct {
		name string
		w, h int
	}{{"desktop", 1440, 900}, {"phone", 390, 844}} {
		must(t, "viewport", page.SetViewportSize(vp.w, vp.h))
		gotoOK(t, page, "/waterline/runs/"+tr.RunID)
		attempts := page.Locator(`[data-testid="attempt"]`)
		must(t, "two attempts", expect.Locator(attempts).ToHaveCount(2))
		must(t, "first answer", expect.Locator(attempts.Nth(0).Locator(`[data-testid="attempt-http-status"]`)).ToHaveText("503"))
		must(t, "second answer", expect.Locator(attempts.Nth(1).Locator(`[data-testid="attempt-http-status"]`)).ToHaveText("200"))
		shot(t, page, filepath.Join(shots, "run-"+vp.name+".png"))

		gotoOK(t, page, "/waterline/schedules/close-ledger")
		must(t, "target", expect.Locator(page.Locator(`[data-testid="fact-target"]`)).ToContainText("HTTP POST to 127.0.0.1:"))
		must(t, "no path", expect.Locator(page.Locator(`[data-testid="fact-target"]`)).Not().ToContainText("key=k1"))
		shot(t, page, filepath.Join(shots, "schedule-"+vp.name+".png"))

		gotoOK(t, page, "/waterline/schedules/close-ledger/edit")
		must(t, "secret empty", expect.Locator(page.Locator(`[data-testid="input-target.secret"]`)).ToHaveValue(""))
		must(t, "secret set", expect.Locator(page.Locator(`[data-testid="target-secret-set"]`)).ToBeVisible())
		must(t, "http fields", expect.Locator(page.Locator(`[data-testid="http-target-fields"]`)).ToBeVisible())
		_, err := page.Locator(`[data-testid="input-target.kind"]`).SelectOption(playwright.SelectOptionValues{Values: &[]string{"worker"}})
		must(t, "choose worker", err)
		must(t, "http fields hidden", expect.Locator(page.Locator(`[data-testid="http-target-fields"]`)).ToBeHidden())
		_, err = page.Locator(`[data-testid="input-target.kind"]`).SelectOption(playwright.SelectOptionValues{Values: &[]string{"http"}})
		must(t, "choose http", err)
		shot(t, page, filepath.Join(shots, "form-"+vp.name+".png"))
	}
}

func shot(t *testing.T, page playwright.Page, path string) {
	t.Helper()
	if _, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(path), FullPage: playwright.Bool(true)}); err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if os.Getenv("TIDELINE_SHOTS_DIR") != "" {
		b, err := os.ReadFile(path)
		if err == nil {
			_ = os.WriteFile(filepath.Join(os.Getenv("TIDELINE_SHOTS_DIR"), filepath.Base(path)), b, 0o644)
		}
	}
}
