package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"testing"

	"github.com/playwright-community/playwright-go"

	"github.com/tidelinehq/tideline/auth"
)

// rowOrder is the schedule IDs of the registry's rows, top to bottom.
func rowOrder(t *testing.T, page playwright.Page) []string {
	t.Helper()
	raw, err := page.GetByTestId("schedule-row").EvaluateAll(`els => els.map(e => e.getAttribute("data-schedule-id"))`)
	must(t, "read the registry's order", err)
	var out []string
	for _, v := range raw.([]any) {
		out = append(out, v.(string))
	}
	return out
}

// waitOrder waits (expect retries) until the rows read want, then checks.
func waitOrder(t *testing.T, page playwright.Page, what string, want []string) {
	t.Helper()
	must(t, what+": rows", expect.Locator(page.GetByTestId("schedule-row")).ToHaveCount(len(want)))
	must(t, what+": first row", expect.Locator(page.GetByTestId("schedule-row").First()).ToHaveAttribute("data-schedule-id", want[0]))
	if got := rowOrder(t, page); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: rows %v, want %v", what, got, want)
	}
}

// Scenario (issue 21 §2): the registry sorts by next fire, by ID and by
// health through plain links (here without JavaScript), and an order is
// kept when a chip or the filter form changes the filter.
func TestRegistrySortsByNextFireAndID(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "a-yearly", Cron: "0 0 1 1 *"})
		api.createSchedule(sched{ID: "b-hourly", Cron: "0 * * * *"})
		api.createSchedule(sched{ID: "c-daily", Cron: "0 0 * * *"})
		api.createSchedule(sched{ID: "d-paused", Cron: "* * * * *", Paused: true})

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: true})
		gotoOK(t, page, "/waterline/schedules")
		// By health, the default (issue 37): nothing is wrong here, so by ID.
		waitOrder(t, page, "by health (the default)", []string{"a-yearly", "b-hourly", "c-daily", "d-paused"})
		sortLink := func(key string) playwright.Locator {
			return page.Locator(`[data-testid="sort-link"][data-sort="` + key + `"]`)
		}
		must(t, "health is the current order", expect.Locator(sortLink("health")).ToHaveAttribute("aria-current", "true"))
		must(t, "the header says so", expect.Locator(page.Locator(`th[aria-sort="descending"]`)).ToHaveText("Health"))

		must(t, "sort by next fire", sortLink("next_fire").Click())
		waitOrder(t, page, "by next fire", []string{"b-hourly", "c-daily", "a-yearly", "d-paused"})
		must(t, "next fire is current", expect.Locator(sortLink("next_fire")).ToHaveAttribute("aria-current", "true"))
		must(t, "the header says so", expect.Locator(page.Locator(`th[aria-sort="ascending"]`)).ToHaveText("Next fire"))

		// A chip keeps the order…
		must(t, "Paused chip", page.Locator(`[data-testid="health-chip"][data-chip="active"]`).Click())
		waitOrder(t, page, "active, by next fire", []string{"b-hourly", "c-daily", "a-yearly"})
		must(t, "still by next fire", expect.Locator(sortLink("next_fire")).ToHaveAttribute("aria-current", "true"))
		// …and so does the filter form.
		must(t, "search", page.GetByTestId("filter-q").Fill("ly"))
		must(t, "filter", page.GetByTestId("filter-submit").Click())
		waitOrder(t, page, "searched, by next fire", []string{"b-hourly", "c-daily", "a-yearly"})
		must(t, "order kept by the form", expect.Locator(sortLink("next_fire")).ToHaveAttribute("aria-current", "true"))

		must(t, "back to by ID", sortLink("schedule_id").Click())
		waitOrder(t, page, "searched, by ID", []string{"a-yearly", "b-hourly", "c-daily"})
		must(t, "ID is the current order", expect.Locator(sortLink("schedule_id")).ToHaveAttribute("aria-current", "true"))
		must(t, "search kept by the sort link", expect.Locator(page.GetByTestId("filter-q")).ToHaveValue("ly"))
	})
}

// chooseNamespace picks ns in the header's switcher: with JavaScript the
// select submits itself; without, the Switch button does.
func chooseNamespace(t *testing.T, page playwright.Page, ns string, js bool) {
	t.Helper()
	_, err := page.GetByTestId("namespace-select").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice(ns)})
	must(t, "choose namespace "+ns, err)
	if !js {
		must(t, "Switch button without JavaScript", expect.Locator(page.GetByTestId("namespace-submit")).ToBeVisible())
		must(t, "switch", page.GetByTestId("namespace-submit").Click())
	}
	must(t, "switched to "+ns, expect.Locator(page.GetByTestId("namespace")).ToHaveText(ns))
}

// Scenario (issue 21 §4): in local mode the header offers the namespaces
// that exist; switching shows that namespace's schedules and keeps it on
// every page after (with and without JavaScript). A namespace that came in
// the URL is kept by the main links too.
func TestNamespaceSwitcherKeptAcrossPages(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "orders", Cron: "0 * * * *"})
		api.in("team-b").createSchedule(sched{ID: "payroll", Cron: "0 6 * * 1"})
		api.in("zeta").createSchedule(sched{ID: "z1", Cron: "0 6 * * 1"})

		for _, js := range []bool{true, false} {
			page := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: !js})
			gotoOK(t, page, "/waterline/schedules")
			must(t, "default first", expect.Locator(page.GetByTestId("namespace")).ToHaveText("default"))
			opts, err := page.GetByTestId("namespace-select").Locator("option").AllTextContents()
			must(t, "switcher options", err)
			if want := []string{"default", "team-b", "zeta"}; !reflect.DeepEqual(opts, want) {
				t.Fatalf("switcher offers %v, want %v", opts, want)
			}
			chooseNamespace(t, page, "team-b", js)
			must(t, "team-b's schedule", expect.Locator(scheduleRow(page, "payroll")).ToBeVisible())
			must(t, "only team-b's", expect.Locator(page.GetByTestId("schedule-row")).ToHaveCount(1))

			must(t, "open the schedule", scheduleRow(page, "payroll").GetByTestId("schedule-link").Click())
			must(t, "schedule page in team-b", expect.Locator(page.GetByTestId("fact-namespace")).ToHaveText("team-b"))
			must(t, "runs", page.GetByTestId("nav-runs").Click())
			must(t, "runs page", expect.Locator(page.GetByTestId("runs-filters")).ToBeVisible())
			must(t, "still team-b on Runs", expect.Locator(page.GetByTestId("namespace")).ToHaveText("team-b"))
			// Switching from the runs list stays on the runs list.
			chooseNamespace(t, page, "zeta", js)
			must(t, "still on Runs", expect.Locator(page.GetByTestId("runs-filters")).ToBeVisible())
			must(t, "schedules", page.GetByTestId("nav-schedules").Click())
			must(t, "zeta's schedule", expect.Locator(scheduleRow(page, "z1")).ToBeVisible())
		}

		// ?namespace= from a link is carried by the main links.
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		gotoOK(t, page, "/waterline/runs?namespace=team-b")
		must(t, "team-b from the URL", expect.Locator(page.GetByTestId("namespace")).ToHaveText("team-b"))
		must(t, "schedules link", page.GetByTestId("nav-schedules").Click())
		must(t, "team-b kept", expect.Locator(scheduleRow(page, "payroll")).ToBeVisible())
		must(t, "in the URL", expect.Page(page).ToHaveURL(regexp.MustCompile(`namespace=team-b`)))
	})
}

// boundServer starts a server with authentication: nina, a viewer bound
// to team-a and team-b, and root, an unbound admin.
func boundServer(t *testing.T, opts serverOptions) (srv *server, nina, root string) {
	t.Helper()
	var principals []map[string]any
	for _, p := range []struct {
		name, role string
		namespaces []string
		token      *string
	}{{"nina", auth.RoleViewer, []string{"team-a", "team-b"}, &nina}, {"root", auth.RoleAdmin, nil, &root}} {
		token, hash, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		*p.token = token
		principals = append(principals, map[string]any{"name": p.name, "role": p.role, "namespaces": p.namespaces, "token_sha256": hash})
	}
	doc, err := json.Marshal(map[string]any{"principals": principals})
	if err != nil {
		t.Fatal(err)
	}
	opts.Env = map[string]string{"TIDELINE_TOKENS": string(doc), "TIDELINE_SESSION_SECRET": "e2e-session-secret-0123456789abcdef"}
	return startServer(t, opts), nina, root
}

// Scenario (issue 21 §4, §10): a viewer bound to two namespaces switches
// between them; an unbound admin is offered the namespaces that exist.
// Error pages keep the layout (user, namespace, navigation); a schedule's
// 404 points to the other namespaces this viewer can see that hold it,
// never to one they cannot; a viewer's registry has no checkbox column; a
// 403 says which role is needed, inside the layout.
func TestBoundViewerSwitchesAndErrorPagesKeepTheLayout(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		srv, nina, root := boundServer(t, serverOptions{Database: srv.Database, Args: []string{"--no-loop"}})
		api := newAPI(t, srv)
		api.Token = root
		api.in("team-a").createSchedule(sched{ID: "a-only", Cron: "0 * * * *"})
		api.in("team-b").createSchedule(sched{ID: "shared", Cron: "0 * * * *"})
		api.in("secret").createSchedule(sched{ID: "shared", Cron: "0 * * * *"})

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		gotoOK(t, page, "/waterline/schedules")
		must(t, "sign-in title", expect.Page(page).ToHaveTitle("Sign-in · Tideline"))
		signIn(t, page, nina)
		must(t, "signed in as nina", expect.Locator(page.GetByTestId("user")).ToHaveText("nina"))
		must(t, "first namespace", expect.Locator(page.GetByTestId("namespace")).ToHaveText("team-a"))
		opts, err := page.GetByTestId("namespace-select").Locator("option").AllTextContents()
		must(t, "options", err)
		if want := []string{"team-a", "team-b"}; !reflect.DeepEqual(opts, want) {
			t.Fatalf("nina is offered %v, want %v (never secret)", opts, want)
		}
		must(t, "a viewer's registry", expect.Locator(scheduleRow(page, "a-only")).ToBeVisible())
		must(t, "no checkbox column", expect.Locator(page.Locator("table.registry th.select, table.registry td.select")).ToHaveCount(0))
		must(t, "the schedule is the first column", expect.Locator(page.Locator("table.registry thead th").First()).ToHaveText("Schedule"))

		// A 404 for a schedule held by another namespace nina can see.
		resp, err := page.Goto("/waterline/schedules/shared")
		must(t, "open shared in team-a", err)
		if resp.Status() != http.StatusNotFound {
			t.Fatalf("shared in team-a: status %d, want 404", resp.Status())
		}
		must(t, "error title", expect.Locator(page.GetByTestId("error-title")).ToHaveText("Not Found"))
		must(t, "layout: user", expect.Locator(page.GetByTestId("user")).ToHaveText("nina"))
		must(t, "layout: namespace", expect.Locator(page.GetByTestId("namespace")).ToHaveText("team-a"))
		must(t, "layout: navigation", expect.Locator(page.GetByTestId("nav-runs")).ToBeVisible())
		must(t, "one-word title", expect.Page(page).ToHaveTitle("Error · Tideline"))
		hints := page.GetByTestId("error-elsewhere-link")
		must(t, "hint: team-b only (not secret)", expect.Locator(hints).ToHaveText([]string{"team-b"}))
		must(t, "follow the hint", hints.First().Click())
		must(t, "shared in team-b", expect.Locator(page.GetByTestId("fact-namespace")).ToHaveText("team-b"))

		// A 403 keeps the layout and names the role.
		resp, err = page.Goto("/waterline/schedules/new")
		must(t, "open the create form as a viewer", err)
		if resp.Status() != http.StatusForbidden {
			t.Fatalf("create form as a viewer: status %d, want 403", resp.Status())
		}
		must(t, "403 title", expect.Locator(page.GetByTestId("error-title")).ToHaveText("Forbidden"))
		must(t, "403 names the role", expect.Locator(page.GetByTestId("error-message")).ToContainText("admin"))
		must(t, "403 layout: user", expect.Locator(page.GetByTestId("user")).ToHaveText("nina"))
		must(t, "403 layout: sign out", expect.Locator(page.GetByTestId("logout")).ToBeVisible())

		// The switcher works for her, and an unknown page is a 404 in the layout.
		gotoOK(t, page, "/waterline/schedules")
		chooseNamespace(t, page, "team-b", true)
		must(t, "team-b's schedule", expect.Locator(scheduleRow(page, "shared")).ToBeVisible())
		resp, err = page.Goto("/waterline/nowhere")
		must(t, "open an unknown page", err)
		if resp.Status() != http.StatusNotFound {
			t.Fatalf("unknown page: status %d, want 404", resp.Status())
		}
		must(t, "unknown page keeps the namespace", expect.Locator(page.GetByTestId("namespace")).ToHaveText("team-b"))

		// An unbound admin is offered every namespace that exists.
		admin := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		gotoOK(t, admin, "/waterline/schedules")
		signIn(t, admin, root)
		opts, err = admin.GetByTestId("namespace-select").Locator("option").AllTextContents()
		must(t, "admin options", err)
		if want := []string{"default", "secret", "team-a", "team-b"}; !reflect.DeepEqual(opts, want) {
			t.Fatalf("root is offered %v, want %v", opts, want)
		}
		chooseNamespace(t, admin, "secret", true)
		must(t, "secret's schedule", expect.Locator(scheduleRow(admin, "shared")).ToBeVisible())
		must(t, "an admin's registry has the checkbox column", expect.Locator(admin.Locator("table.registry th.select")).ToHaveCount(1))
	})
}

// Scenario (issue 21 §10, issue 37 §15): every page is titled "X ·
// Tideline", X one word and the ID of the schedule or run it shows, so two
// tabs tell apart; /waterline opens the registry; a 404 in local mode
// keeps the banner.
func TestPageTitlesAndErrorBanner(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "nightly", Cron: "0 2 * * *"})
		var run struct {
			RunID string `json:"run_id"`
		}
		api.must(http.MethodPost, "/schedules/nightly/trigger", map[string]any{}, http.StatusOK, &run)

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		gotoOK(t, page, "/waterline")
		must(t, "/waterline opens the registry", expect.Page(page).ToHaveURL(regexp.MustCompile(`/waterline/schedules$`)))
		for path, want := range map[string]string{
			"/waterline/schedules":                  "Schedules",
			"/waterline/schedules/nightly":          "Schedule nightly",
			"/waterline/schedules/nightly/history":  "History nightly",
			"/waterline/schedules/nightly/edit":     "Edit nightly",
			"/waterline/schedules/nightly/backfill": "Backfill nightly",
			"/waterline/schedules/nightly/delete":   "Delete nightly",
			"/waterline/schedules/new":              "Create",
			"/waterline/runs":                       "Runs",
			"/waterline/runs/" + run.RunID:          "Run " + run.RunID,
			"/waterline/notifiers":                  "Notifiers",
		} {
			gotoOK(t, page, path)
			must(t, path+" title", expect.Page(page).ToHaveTitle(want+" · Tideline"))
		}

		resp, err := page.Goto("/waterline/schedules/nope")
		must(t, "open a missing schedule", err)
		if resp.Status() != http.StatusNotFound {
			t.Fatalf("missing schedule: status %d, want 404", resp.Status())
		}
		must(t, "banner on the error page", expect.Locator(page.GetByTestId("banner")).ToContainText("Local mode"))
		must(t, "namespace on the error page", expect.Locator(page.GetByTestId("namespace")).ToContainText("default"))
		must(t, "no hint when no other namespace holds it", expect.Locator(page.GetByTestId("error-elsewhere")).ToHaveCount(0))
		must(t, "a way back", page.GetByTestId("error-back").Click())
		must(t, "back on the registry", expect.Locator(scheduleRow(page, "nightly")).ToBeVisible())
	})
}
