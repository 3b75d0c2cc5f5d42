package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/tidelinehq/tideline/database"
)

// ageRun moves a run's creation back by d in the server's database: the run
// has waited that long (the server runs on the real clock, which a test
// does not wait on).
func ageRun(t *testing.T, srv *server, runID string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	db, err := database.Open(ctx, srv.DatabaseURL)
	must(t, "open the server's database", err)
	defer db.Close()
	at := time.Now().Add(-d).UTC()
	_, err = db.NewRaw("UPDATE workflow_runs SET created_at = ?, available_at = ? WHERE id = ?", at, at, runID).Exec(ctx)
	must(t, "age the run", err)
}

// moveNextFire sets a schedule's next fire (an overdue one, with no loop).
func moveNextFire(t *testing.T, srv *server, scheduleID string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	db, err := database.Open(ctx, srv.DatabaseURL)
	must(t, "open the server's database", err)
	defer db.Close()
	_, err = db.NewRaw("UPDATE workflow_schedules SET next_fire_at = ? WHERE schedule_id = ?", at.UTC(), scheduleID).Exec(ctx)
	must(t, "move the next fire", err)
}

// triageRegistry seeds a registry with one schedule in every health state,
// long IDs among them: failing (with an error), stuck (a run pending 20 min
// on a queue no worker polls, 20 fires skipped behind it), overdue,
// skipping (behind a run that goes on), paused with a reason and an end,
// and healthy ones.
func triageRegistry(t *testing.T, srv *server) {
	t.Helper()
	api := newAPI(t, srv)
	for _, s := range []sched{
		{ID: "card-auth-ledger-reconcile-nightly", Cron: "0 3 * * *", Timezone: "America/New_York", WorkflowType: "ledger.Reconcile", Overlap: "allow_all",
			Labels: map[string]string{"team": "payments"}},
		{ID: "inventory-sync", Every: "PT12H", Offset: "PT5M", WorkflowType: "inventory.SyncWarehouses", Labels: map[string]string{"team": "supply"}},
		{ID: "search-index-refresh", Cron: "0 5 * * *", WorkflowType: "search.RefreshIndex"},
		{ID: "monthly-ledger-close", Cron: "0 0 1 * *", WorkflowType: "finance.CloseLedger"},
		{ID: "weekday-standup-digest", Cron: "30 9 * * 1-5", Timezone: "Europe/Berlin", WorkflowType: "notify.StandupDigest"},
		{ID: "fraud-model-retrain", Cron: "0 4 * * 0", Timezone: "Asia/Singapore", WorkflowType: "ml.RetrainFraudModel"},
	} {
		api.createSchedule(s)
	}
	api.must(http.MethodPost, "/schedules", map[string]any{"schedule_id": "tenant-00033-nightly-export-legacy",
		"spec": map[string]any{"cron_expressions": []string{"0 1 * * *"}, "timezone": "Europe/London"}, "queue": "legacy",
		"overlap_policy": "skip", "action": map[string]any{"workflow_type": "legacy.NightlyExport"}}, http.StatusCreated, nil)

	// Failing: a run failed with a message an operator must read.
	var tr struct {
		RunID string `json:"run_id"`
	}
	api.must(http.MethodPost, "/schedules/card-auth-ledger-reconcile-nightly/trigger", map[string]any{}, http.StatusOK, &tr)
	api.claim("w1")
	api.fail("w1", tr.RunID, "ledger API answered 503 Service Unavailable: upstream maintenance window until 04:00")
	// Skipping: a run that goes on, a fire skipped behind it.
	api.must(http.MethodPost, "/schedules/search-index-refresh/trigger", map[string]any{}, http.StatusOK, nil)
	api.claim("w1")
	api.must(http.MethodPost, "/schedules/search-index-refresh/trigger", map[string]any{}, http.StatusOK, nil)
	// Healthy: a run that completed.
	api.must(http.MethodPost, "/schedules/fraud-model-retrain/trigger", map[string]any{}, http.StatusOK, &tr)
	api.claim("w1")
	api.must(http.MethodPost, "/worker/runs/"+tr.RunID+"/complete", map[string]any{"worker_id": "w1"}, http.StatusOK, nil)
	// Stuck: nobody polls queue legacy; 20 fires skip behind its run.
	api.must(http.MethodPost, "/schedules/tenant-00033-nightly-export-legacy/trigger", map[string]any{}, http.StatusOK, &tr)
	for range 20 {
		api.must(http.MethodPost, "/schedules/tenant-00033-nightly-export-legacy/trigger", map[string]any{}, http.StatusOK, nil)
	}
	ageRun(t, srv, tr.RunID, 20*time.Minute)
	// Paused, with a reason and an end.
	api.must(http.MethodPost, "/schedules/monthly-ledger-close/pause", map[string]any{"reason": "Waiting for the Q4 audit sign-off (FIN-118)",
		"paused_until": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)}, http.StatusOK, nil)
	// Overdue: its fire time passed with no loop to fire it.
	moveNextFire(t, srv, "weekday-standup-digest", time.Now().Add(-30*time.Second))
}

// noCutOff fails when any line of a registry row or header is cut: wider
// (or taller, for the clamped detail) than its box.
func noCutOff(t *testing.T, page playwright.Page, what string) {
	t.Helper()
	cut, err := page.Evaluate(`() => [...document.querySelectorAll('[data-testid="schedules-table"] th, [data-testid="schedule-row"] .line-main, [data-testid="schedule-row"] .line-sub, [data-testid="row-detail"]')]
		.filter(el => el.offsetParent !== null && (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1))
		.map(el => (el.closest('tr')?.dataset.scheduleId || 'header') + ': ' + el.textContent.trim())`)
	must(t, "measure the cells", err)
	if list, _ := cut.([]any); len(list) > 0 {
		t.Fatalf("%s: cut off: %v", what, list)
	}
}

// Issue 37, majors 1–3, in a real Chromium on both databases: the registry
// opens most urgent first; each row says its health state and, on a second
// line, what tells it apart (the latest error, the run nobody claims, the
// pause); IDs are whole; each chip lists exactly the rows labelled with its
// state; nothing is cut off at 1440×900 and nothing scrolls sideways at
// 390×844. Screenshots of all, failing and stuck at both sizes (docs/ with
// TIDELINE_SCREENSHOTS=1).
func TestRegistryTriage(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		triageRegistry(t, srv)
		want := []string{"card-auth-ledger-reconcile-nightly", "tenant-00033-nightly-export-legacy", "weekday-standup-digest",
			"search-index-refresh", "fraud-model-retrain", "inventory-sync", "monthly-ledger-close"}
		states := map[string]string{"card-auth-ledger-reconcile-nightly": "failing", "tenant-00033-nightly-export-legacy": "stuck",
			"weekday-standup-digest": "overdue", "search-index-refresh": "skipping", "fraud-model-retrain": "ok",
			"inventory-sync": "no runs", "monthly-ledger-close": "no runs"}

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		rows := page.GetByTestId("schedule-row")
		must(t, "rows", expect.Locator(rows).ToHaveCount(len(want)))
		ids, err := rows.EvaluateAll(`rows => rows.map(r => r.dataset.scheduleId)`)
		must(t, "row order", err)
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Fatalf("default order: got %v, want %v (failing, stuck, overdue, skipping, then by ID)", ids, want)
		}
		for id, state := range states {
			must(t, id+" label", expect.Locator(scheduleRow(page, id).GetByTestId("health-state")).ToHaveText(state))
		}
		stuck := scheduleRow(page, "tenant-00033-nightly-export-legacy")
		must(t, "stuck detail", expect.Locator(stuck.GetByTestId("row-detail")).ToHaveText("pending 20 min — unclaimed on queue legacy"))
		must(t, "the whole ID", expect.Locator(stuck.GetByTestId("schedule-link")).ToHaveText("tenant-00033-nightly-export-legacy"))
		must(t, "20 skips", expect.Locator(stuck.GetByTestId("skips-count")).ToHaveText("20"))
		failing := scheduleRow(page, "card-auth-ledger-reconcile-nightly")
		must(t, "the error on the row", expect.Locator(failing.GetByTestId("row-detail")).ToHaveText(
			"ledger API answered 503 Service Unavailable: upstream maintenance window until 04:00"))
		must(t, "visible, not a tooltip", expect.Locator(failing.GetByTestId("row-detail")).ToBeVisible())
		must(t, "pause reason", expect.Locator(scheduleRow(page, "monthly-ledger-close").GetByTestId("row-detail")).ToContainText("Waiting for the Q4 audit sign-off (FIN-118)"))
		must(t, "pause end", expect.Locator(scheduleRow(page, "monthly-ledger-close").GetByTestId("paused-until")).ToBeVisible())
		must(t, "the zone under the spec", expect.Locator(failing.GetByTestId("timezone")).ToHaveText("America/New_York"))
		must(t, "overdue label", expect.Locator(scheduleRow(page, "weekday-standup-digest").GetByTestId("overdue")).ToHaveText("overdue"))
		noCutOff(t, page, "1440×900, all")
		checkA11y(t, page, "the triage registry at 1440×900")
		shootJob(t, page, "console-registry-triage.png")

		// A laptop: the same, the counts left to the schedule's page.
		must(t, "laptop viewport", page.SetViewportSize(1280, 800))
		noCutOff(t, page, "1280×800, all")
		must(t, "no counts at 1280", expect.Locator(failing.GetByTestId("counts")).ToBeHidden())
		must(t, "back to 1440", page.SetViewportSize(1440, 900))

		// Each chip's count is its list's length, and every row it lists
		// carries its label.
		for _, chip := range []string{"failing", "stuck", "overdue", "skipping"} {
			link := page.GetByTestId("health-chips").Locator(fmt.Sprintf(`[data-chip=%q]`, chip))
			count, err := link.GetByTestId("chip-count").TextContent()
			must(t, chip+" count", err)
			must(t, "open "+chip, link.Click())
			must(t, chip+" current", expect.Locator(link).ToHaveAttribute("aria-current", "true"))
			must(t, chip+" rows", expect.Locator(rows).ToHaveCount(atoi(t, count)))
			labels, err := rows.GetByTestId("health-state").AllTextContents()
			must(t, chip+" labels", err)
			for _, l := range labels {
				if l != chip {
					t.Fatalf("the %s chip lists a row labelled %q", chip, l)
				}
			}
			switch chip {
			case "failing":
				must(t, "Failing shows the error", expect.Locator(page.GetByTestId("row-detail")).ToContainText("ledger API answered 503"))
				noCutOff(t, page, "1440×900, failing")
				shootJob(t, page, "console-registry-failing.png")
			case "stuck":
				must(t, "Stuck shows why", expect.Locator(page.GetByTestId("row-detail")).ToContainText("unclaimed on queue legacy"))
				noCutOff(t, page, "1440×900, stuck")
				shootJob(t, page, "console-registry-stuck.png")
			}
		}

		// The runs list: each start on one line, the attempt and the error.
		gotoOK(t, page, "/waterline/runs")
		runRows := page.GetByTestId("run-row")
		must(t, "runs", expect.Locator(runRows.First()).ToBeVisible())
		must(t, "the error in the list", expect.Locator(page.GetByTestId("run-error").Filter(playwright.LocatorFilterOptions{HasText: "ledger API answered 503"})).ToBeVisible())
		tall, err := page.Locator(`[data-testid="run-started"] time`).EvaluateAll(`ts => ts.filter(t => t.getClientRects().length > 1).map(t => t.textContent)`)
		must(t, "start times", err)
		if list, _ := tall.([]any); len(list) > 0 {
			t.Fatalf("start times wrap: %v", list)
		}
		shootJob(t, page, "console-runs.png")

		// A phone: cards, the detail on each, nothing sideways.
		phone := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "phone viewport", phone.SetViewportSize(390, 844))
		holdAutoRefresh(t, phone)
		for _, v := range []struct{ query, name string }{{"", "console-registry-triage-phone.png"},
			{"?health=failing", "console-registry-failing-phone.png"}, {"?health=stuck", "console-registry-stuck-phone.png"}} {
			openRegistry(t, phone, v.query)
			must(t, "cards", expect.Locator(phone.GetByTestId("schedule-row").First()).ToHaveCSS("display", "grid"))
			must(t, "detail on the card", expect.Locator(phone.GetByTestId("row-detail").First()).ToBeVisible())
			wide, err := phone.Evaluate(`() => document.documentElement.scrollWidth`)
			must(t, "page width", err)
			if w, _ := wide.(int); w > 390 {
				t.Fatalf("%s: the page is %d px wide at 390", v.query, w)
			}
			// The shot starts at the chips, so that it shows the cards.
			_, err = phone.Evaluate(`() => document.querySelector('[data-testid="health-chips"]').scrollIntoView()`)
			must(t, "scroll to the cards", err)
			if v.query == "" {
				checkA11y(t, phone, "the triage registry at 390×844")
			}
			shootJob(t, phone, v.name)
		}
	})
}

// The triage board needs no JavaScript: the chips and the orders are links,
// the detail is in the HTML.
func TestRegistryTriageWithoutJavaScript(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		triageRegistry(t, srv)
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: true})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		gotoOK(t, page, "/waterline/")
		must(t, "on the registry", expect.Page(page).ToHaveURL("/waterline/schedules"))
		must(t, "stuck chip", page.GetByTestId("health-chips").Locator(`[data-chip="stuck"]`).Click())
		rows := page.GetByTestId("schedule-row")
		must(t, "one stuck", expect.Locator(rows).ToHaveCount(1))
		must(t, "its detail", expect.Locator(rows.GetByTestId("row-detail")).ToContainText("unclaimed on queue legacy"))
		must(t, "ID order", page.GetByTestId("sort-links").Locator(`[data-sort="schedule_id"]`).Click())
		must(t, "filter kept", expect.Locator(rows).ToHaveCount(1))
		must(t, "all", page.GetByTestId("health-chips").Locator(`[data-chip="all"]`).Click())
		first, err := rows.First().GetAttribute("data-schedule-id")
		must(t, "first row", err)
		if first != "card-auth-ledger-reconcile-nightly" {
			t.Fatalf("by ID, first: %s", first)
		}
	})
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// Issue 37, minor 15: a schedule's and a run's page titles name them, and
// the registry's title comes back when the History modal (which brings the
// History page's title with it) closes, by × or by Esc.
func TestPageTitlesNameTheirObject(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "nightly-x", Cron: "0 2 * * *"})
		var tr struct {
			RunID string `json:"run_id"`
		}
		api.must(http.MethodPost, "/schedules/nightly-x/trigger", map[string]any{}, http.StatusOK, &tr)

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		gotoOK(t, page, "/waterline/schedules/nightly-x")
		must(t, "schedule title", expect.Page(page).ToHaveTitle("Schedule nightly-x · Tideline"))
		gotoOK(t, page, "/waterline/runs/"+tr.RunID)
		must(t, "run title", expect.Page(page).ToHaveTitle("Run "+tr.RunID+" · Tideline"))

		openRegistry(t, page, "")
		must(t, "registry title", expect.Page(page).ToHaveTitle("Schedules · Tideline"))
		row := scheduleRow(page, "nightly-x")
		modal := page.GetByTestId("modal")
		for _, closeBy := range []string{"×", "Esc"} {
			must(t, "open History", rowAction(t, row, "action-history").Click())
			must(t, "history modal", expect.Locator(modal).ToBeVisible())
			must(t, "its events", expect.Locator(modal.GetByTestId("history-event").First()).ToBeVisible())
			if closeBy == "×" {
				must(t, "close by ×", modal.GetByTestId("modal-close").Click())
			} else {
				must(t, "close by Esc", page.Keyboard().Press("Escape"))
			}
			must(t, "modal closed", expect.Locator(modal).ToBeHidden())
			must(t, "title back after closing by "+closeBy, expect.Page(page).ToHaveTitle("Schedules · Tideline"))
		}
	})
}
