package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"

	"github.com/tidelinehq/tideline/auth"
)

// tokens are the bearer tokens of authServer's principals.
type tokens struct {
	Admin    string // alice
	Operator string // olga
	Viewer   string // victor
}

// authServer starts a server with authentication on: principals alice
// (admin), olga (operator) and victor (viewer), configured inline in
// TIDELINE_TOKENS with token hashes from auth.NewToken, the way
// docs/SECURITY.md describes, and a fixed session secret.
func authServer(t *testing.T, opts serverOptions) (*server, tokens) {
	t.Helper()
	var toks tokens
	var principals []map[string]any
	for _, p := range []struct {
		name, role string
		token      *string
	}{{"alice", auth.RoleAdmin, &toks.Admin}, {"olga", auth.RoleOperator, &toks.Operator}, {"victor", auth.RoleViewer, &toks.Viewer}} {
		token, hash, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		*p.token = token
		principals = append(principals, map[string]any{"name": p.name, "role": p.role, "token_sha256": hash})
	}
	doc, err := json.Marshal(map[string]any{"principals": principals})
	if err != nil {
		t.Fatal(err)
	}
	opts.Env = map[string]string{"TIDELINE_TOKENS": string(doc), "TIDELINE_SESSION_SECRET": "e2e-session-secret-0123456789abcdef"}
	return startServer(t, opts), toks
}

// signIn submits token on the login page the browser is on.
func signIn(t *testing.T, page playwright.Page, token string) {
	t.Helper()
	must(t, "login form", expect.Locator(page.GetByTestId("login-form")).ToBeVisible())
	must(t, "type the token", page.GetByTestId("login-token").Fill(token))
	must(t, "sign in", page.GetByTestId("login-submit").Click())
}

// Scenario 8: with authentication on, the console asks for a token; an
// admin signs in and a CSRF-protected action works, while a forged
// cross-site post is refused; a viewer sees no action buttons and cannot
// act anyway, an operator sees all but Edit and Delete; signing out ends the
// session. Authentication does not touch the database, so this runs on
// SQLite only.
func TestAuthenticatedConsole(t *testing.T) {
	srv, toks := authServer(t, noLoop)
	api := newAPI(t, srv)
	if status, _ := api.do(http.MethodGet, "/schedules", nil); status != http.StatusUnauthorized {
		t.Fatalf("API without a token: status %d, want 401", status)
	}
	api.Token = toks.Admin
	api.createSchedule(sched{ID: "payroll-run", Cron: "0 6 * * 1", Timezone: "Europe/London", WorkflowType: "payroll.Run"})

	// Anonymous: sent to the login page, which remembers where to go next.
	admin := newPage(t, pageOptions{BaseURL: srv.BaseURL})
	holdAutoRefresh(t, admin)
	gotoOK(t, admin, "/waterline/schedules")
	must(t, "redirected to login", expect.Page(admin).ToHaveURL(regexp.MustCompile(`/waterline/login\?next=%2Fwaterline%2Fschedules$`)))
	must(t, "no local-mode banner", expect.Locator(admin.GetByTestId("banner")).ToHaveCount(0))
	signIn(t, admin, "tl_not-a-real-token")
	must(t, "wrong token refused", expect.Locator(admin.GetByTestId("login-error")).ToHaveText("That token is not valid."))

	signIn(t, admin, toks.Admin)
	must(t, "signed in as alice", expect.Locator(admin.GetByTestId("user")).ToHaveText("alice"))
	must(t, "back on the registry", expect.Page(admin).ToHaveURL(regexp.MustCompile(`/waterline/schedules$`)))
	row := scheduleRow(admin, "payroll-run")
	must(t, "row listed", expect.Locator(row).ToBeVisible())
	must(t, "admin may create", expect.Locator(admin.GetByTestId("new-schedule")).ToBeVisible())

	// A forged cross-site post, the attack CSRF protection exists for: a page
	// on another origin submits a form to the console in alice's browser.
	// (echo's CSRF middleware sees Sec-Fetch-Site: cross-site and refuses it.)
	attacker := "http://attacker.example/"
	must(t, "serve the attacker's page", admin.Route(attacker, func(r playwright.Route) {
		_ = r.Fulfill(playwright.RouteFulfillOptions{Status: playwright.Int(http.StatusOK), ContentType: playwright.String("text/html"),
			Body: `<form method="post" action="` + srv.URL("/waterline/schedules/payroll-run/pause") + `">` +
				`<input name="reason" value="forged"><button id="go" type="submit">Win a prize</button></form>`})
	}))
	gotoOK(t, admin, attacker)
	forged, err := admin.ExpectResponse(srv.URL("/waterline/schedules/payroll-run/pause"), func() error {
		return admin.Locator("#go").Click()
	})
	must(t, "submit the forged form", err)
	if forged.Status() != http.StatusForbidden {
		t.Fatalf("cross-site pause: status %d, want 403", forged.Status())
	}
	var got struct {
		Status string `json:"status"`
	}
	api.must(http.MethodGet, "/schedules/payroll-run", nil, http.StatusOK, &got)
	if got.Status != "active" {
		t.Fatalf("after the forged pause the schedule is %q, want active", got.Status)
	}

	// The console's own form, same-origin, is accepted.
	openRegistry(t, admin, "")
	pause := openDetails(t, row, "action-pause")
	must(t, "pause reason", pause.GetByTestId("pause-reason").Fill("quarter close"))
	must(t, "pause", pause.GetByTestId("pause-submit").Click())
	must(t, "paused", expect.Locator(row.GetByTestId("status-badge")).ToHaveAttribute("data-status", "paused"))

	// A client that sends no Fetch-Metadata (not a browser) must present
	// the token: with alice's session cookie but without _csrf, 403.
	resp, err := admin.Request().Post(srv.URL("/waterline/schedules/payroll-run/resume"), playwright.APIRequestContextPostOptions{
		Form: map[string]any{"return_to": "/waterline/schedules"}, MaxRedirects: playwright.Int(0)})
	must(t, "post without a CSRF token", err)
	if resp.Status() != http.StatusForbidden {
		t.Fatalf("resume without a CSRF token: status %d, want 403", resp.Status())
	}
	if body, _ := resp.Text(); !strings.Contains(body, "CSRF") {
		t.Fatalf("resume without a CSRF token: refused, but not for CSRF: %s", body)
	}
	openRegistry(t, admin, "")
	must(t, "still paused", expect.Locator(row.GetByTestId("status-badge")).ToHaveAttribute("data-status", "paused"))

	// The console's own Resume works too, and the history names alice.
	must(t, "resume", row.GetByTestId("resume-submit").Click())
	must(t, "resumed", expect.Locator(row.GetByTestId("status-badge")).ToHaveAttribute("data-status", "active"))
	must(t, "open History", rowAction(t, row, "action-history").Click())
	modal := admin.GetByTestId("modal")
	must(t, "oldest first", modal.GetByTestId("history-order-toggle").Click())
	must(t, "oldest first shown", expect.Locator(modal.GetByTestId("history-order")).ToHaveText("oldest first"))
	must(t, "history actors", expect.Locator(modal.GetByTestId("history-event").GetByTestId("event-actor")).ToHaveText(
		[]string{"by api · alice", "by ui · alice", "by ui · alice"}))
	must(t, "close the modal", modal.GetByTestId("modal-close").Click())

	// The viewer, in a browser context of its own.
	viewer := newPage(t, pageOptions{BaseURL: srv.BaseURL})
	holdAutoRefresh(t, viewer)
	gotoOK(t, viewer, "/waterline/login")
	signIn(t, viewer, toks.Viewer)
	must(t, "signed in as victor", expect.Locator(viewer.GetByTestId("user")).ToHaveText("victor"))
	vrow := scheduleRow(viewer, "payroll-run")
	must(t, "viewer sees the schedule", expect.Locator(vrow).ToBeVisible())
	noActions := func(where string, scope playwright.Locator) {
		t.Helper()
		for _, action := range []string{"action-pause", "action-resume", "action-trigger", "action-backfill", "action-edit", "action-delete"} {
			must(t, where+": no "+action, expect.Locator(scope.GetByTestId(action)).ToHaveCount(0))
		}
		must(t, where+": History stays", expect.Locator(scope.GetByTestId("action-history")).ToBeVisible())
		must(t, where+": no buttons", expect.Locator(scope.GetByTestId("schedule-actions").Locator("button, form")).ToHaveCount(0))
	}
	noActions("registry row", vrow)
	must(t, "viewer: no New schedule", expect.Locator(viewer.GetByTestId("new-schedule")).ToHaveCount(0))
	must(t, "viewer: no bulk actions", expect.Locator(viewer.GetByTestId("bulk-form")).ToHaveCount(0))
	must(t, "viewer: no row checkboxes", expect.Locator(viewer.GetByTestId("bulk-select")).ToHaveCount(0))
	must(t, "open the detail page", vrow.GetByTestId("schedule-link").Click())
	must(t, "detail page", expect.Locator(viewer.GetByTestId("schedule-id")).ToHaveText("payroll-run"))
	noActions("detail page", viewer.Locator("main"))

	// Hidden is not all: a Pause form the viewer forges into the page (same
	// origin, carrying the page's CSRF token of the viewer's own session, so
	// it passes the CSRF check) is refused for the role.
	_, err = viewer.Evaluate(`action => {
		const f = document.createElement("form");
		f.method = "post";
		f.action = action;
		const csrf = document.createElement("input");
		csrf.type = "hidden";
		csrf.name = "_csrf";
		csrf.value = JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRF-Token"];
		f.append(csrf);
		const reason = document.createElement("input");
		reason.name = "reason";
		reason.value = "viewer try";
		const go = document.createElement("button");
		go.type = "submit";
		go.id = "forged-pause";
		go.textContent = "Pause";
		f.append(reason, go);
		document.querySelector("main").append(f);
	}`, "/waterline/schedules/payroll-run/pause")
	must(t, "forge a pause form", err)
	refused, err := viewer.ExpectResponse(srv.URL("/waterline/schedules/payroll-run/pause"), func() error {
		return viewer.Locator("#forged-pause").Click()
	})
	must(t, "submit the forged pause", err)
	if refused.Status() != http.StatusForbidden {
		t.Fatalf("viewer pause: status %d, want 403", refused.Status())
	}
	must(t, "refused for the role", expect.Locator(viewer.GetByTestId("error-message")).ToContainText("Your role (viewer) cannot do this: this needs the operator or admin role"))
	doc, err := viewer.Goto("/waterline/schedules/new")
	must(t, "viewer opens the create form", err)
	if doc.Status() != http.StatusForbidden {
		t.Fatalf("viewer GET /waterline/schedules/new: status %d, want 403", doc.Status())
	}

	// The operator may operate but not administer.
	operator := newPage(t, pageOptions{BaseURL: srv.BaseURL})
	holdAutoRefresh(t, operator)
	gotoOK(t, operator, "/waterline/login")
	signIn(t, operator, toks.Operator)
	must(t, "signed in as olga", expect.Locator(operator.GetByTestId("user")).ToHaveText("olga"))
	orow := scheduleRow(operator, "payroll-run")
	for _, action := range []string{"action-pause", "action-trigger", "action-backfill", "action-history"} {
		must(t, "operator: "+action, expect.Locator(rowAction(t, orow, action)).ToBeVisible())
	}
	for _, action := range []string{"action-edit", "action-delete"} {
		must(t, "operator: no "+action, expect.Locator(orow.GetByTestId(action)).ToHaveCount(0))
	}
	must(t, "operator: no New schedule", expect.Locator(operator.GetByTestId("new-schedule")).ToHaveCount(0))
	must(t, "operator: bulk actions", expect.Locator(operator.GetByTestId("bulk-form")).ToBeVisible())

	// Sign out: back to the login page, and the console asks again.
	must(t, "sign out", admin.GetByTestId("logout").Click())
	must(t, "login page after sign-out", expect.Locator(admin.GetByTestId("login-form")).ToBeVisible())
	must(t, "no user after sign-out", expect.Locator(admin.GetByTestId("user")).ToHaveCount(0))
	gotoOK(t, admin, "/waterline/schedules")
	must(t, "signed out for good", expect.Page(admin).ToHaveURL(regexp.MustCompile(`/waterline/login\?next=`)))
	must(t, "login form again", expect.Locator(admin.GetByTestId("login-form")).ToBeVisible())
	// The viewer's own session is unaffected.
	gotoOK(t, viewer, "/waterline/schedules")
	must(t, "viewer still signed in", expect.Locator(viewer.GetByTestId("user")).ToHaveText("victor"))
}
