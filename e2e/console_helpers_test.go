package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// Helpers the console scenarios share: a small JSON API client for setting
// up data quickly, and locators for the registry and the history.

// noLoop starts the server without its scheduling loop (serve --no-loop, a
// UI/API replica). Scenarios that count fires, runs or audit events use it,
// so that a schedule coming due mid-test cannot add one of its own; manual
// triggers and backfills do not need the loop.
var noLoop = serverOptions{Args: []string{"--no-loop"}}

// apiClient calls the JSON API (/waterline/api/v2) from the test process.
// In local mode (no tokens) the server accepts it because the test is a
// loopback client; with authentication on, Token is sent as a bearer token.
type apiClient struct {
	t         *testing.T
	base      string
	Token     string
	Namespace string // sent as X-Namespace when set
	Source    string // sent as X-Tideline-Source when set ("apply": as schedule apply would)
}

func newAPI(t *testing.T, srv *server) *apiClient {
	return &apiClient{t: t, base: srv.BaseURL + "/waterline/api/v2"}
}

// in returns a copy of the client that acts in namespace ns.
func (a *apiClient) in(ns string) *apiClient {
	c := *a
	c.Namespace = ns
	return &c
}

// do sends body (JSON-encoded unless nil) and returns the status and body.
func (a *apiClient) do(method, path string, body any) (int, []byte) {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatalf("e2e: encode %s %s: %v", method, path, err)
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, r)
	if err != nil {
		a.t.Fatalf("e2e: %s %s: %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.Token)
	}
	if a.Namespace != "" {
		req.Header.Set("X-Namespace", a.Namespace)
	}
	if a.Source != "" {
		req.Header.Set("X-Tideline-Source", a.Source)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("e2e: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("e2e: %s %s: read the answer: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// must sends the request and fails the test unless the status is want; the
// answer is decoded into dst when dst is not nil.
func (a *apiClient) must(method, path string, body any, want int, dst any) {
	a.t.Helper()
	status, out := a.do(method, path, body)
	if status != want {
		a.t.Fatalf("e2e: %s %s: status %d, want %d: %s", method, path, status, want, out)
	}
	if dst != nil {
		if err := json.Unmarshal(out, dst); err != nil {
			a.t.Fatalf("e2e: %s %s: decode %s: %v", method, path, out, err)
		}
	}
}

// sched is the part of a schedule the scenarios set up through the API.
type sched struct {
	ID           string
	Cron         string // one cron expression, or
	Every        string // one interval (ISO-8601, e.g. PT1H), optionally
	Offset       string // with an offset
	Timezone     string
	WorkflowType string
	Overlap      string // default skip
	Labels       map[string]string
	Note         string
	Paused       bool
}

// createSchedule creates s through POST /schedules (201).
func (a *apiClient) createSchedule(s sched) {
	a.t.Helper()
	spec := map[string]any{}
	if s.Cron != "" {
		spec["cron_expressions"] = []string{s.Cron}
	}
	if s.Every != "" {
		iv := map[string]string{"every": s.Every}
		if s.Offset != "" {
			iv["offset"] = s.Offset
		}
		spec["intervals"] = []any{iv}
	}
	if s.Timezone != "" {
		spec["timezone"] = s.Timezone
	}
	wt := s.WorkflowType
	if wt == "" {
		wt = "e2e.Workflow"
	}
	body := map[string]any{"schedule_id": s.ID, "spec": spec, "action": map[string]any{"workflow_type": wt},
		"note": s.Note, "paused": s.Paused}
	if s.Overlap != "" {
		body["overlap_policy"] = s.Overlap
	}
	if len(s.Labels) > 0 {
		body["labels"] = s.Labels
	}
	a.must(http.MethodPost, "/schedules", body, http.StatusCreated, nil)
}

// backfillJob is the API's answer to a backfill (a job, SPEC §18).
type backfillJob struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Total   int    `json:"total"`
	Started int    `json:"started"`
	Skipped int    `json:"skipped"`
}

// backfill starts a backfill job of [from, to) through the API and waits
// (polling the job) until it completed: windows of up to 500 occurrences
// are done in the answer itself, even on a server started with --no-loop.
func (a *apiClient) backfill(id string, from, to time.Time) backfillJob {
	a.t.Helper()
	var env struct {
		Backfill backfillJob `json:"backfill"`
	}
	a.must(http.MethodPost, "/schedules/"+url.PathEscape(id)+"/backfill", map[string]any{
		"from": from.UTC().Format(time.RFC3339), "to": to.UTC().Format(time.RFC3339), "overlap_policy": "allow_all",
	}, http.StatusAccepted, &env)
	deadline := time.Now().Add(60 * time.Second)
	for env.Backfill.Status == "running" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // polling a condition, with a deadline
		a.must(http.MethodGet, "/backfills/"+env.Backfill.ID, nil, http.StatusOK, &env)
	}
	if env.Backfill.Status != "completed" {
		a.t.Fatalf("backfill of %s: %+v, want completed", id, env.Backfill)
	}
	return env.Backfill
}

// historySequences reads the whole audit stream of id through the API (the
// oracle the console's History is compared with): every sequence, in the
// order the API returns them.
func (a *apiClient) historySequences(id string) []int64 {
	a.t.Helper()
	var seqs []int64
	after := int64(0)
	for {
		var page struct {
			Events []struct {
				Sequence int64 `json:"sequence"`
			} `json:"events"`
			NextCursor *int64 `json:"next_cursor"`
			HasMore    bool   `json:"has_more"`
		}
		a.must(http.MethodGet, fmt.Sprintf("/schedules/%s/history?limit=500&after_sequence=%d", url.PathEscape(id), after), nil, http.StatusOK, &page)
		for _, e := range page.Events {
			seqs = append(seqs, e.Sequence)
		}
		if !page.HasMore || page.NextCursor == nil {
			return seqs
		}
		after = *page.NextCursor
	}
}

// byID selects the element with data-testid=testid whose data-schedule-id
// is id; IDs may hold dots, so no #row-… CSS selector.
func scheduleRow(page playwright.Page, id string) playwright.Locator {
	return page.Locator(fmt.Sprintf(`[data-testid="schedule-row"][data-schedule-id=%q]`, id))
}

func runRow(page playwright.Page, runID string) playwright.Locator {
	return page.Locator(fmt.Sprintf(`[data-testid="run-row"][data-run-id=%q]`, runID))
}

// holdAutoRefresh answers the registry's 10-second htmx poll with 204 (htmx
// swaps nothing), so that what a row action swapped into its row (the trigger
// outcome, a notice) is still there when the test looks at it. Navigations
// and every other request go through untouched.
func holdAutoRefresh(t *testing.T, page playwright.Page) {
	t.Helper()
	err := page.Route(regexp.MustCompile(`/waterline/schedules(\?.*)?$`), func(r playwright.Route) {
		req := r.Request()
		if req.Method() == http.MethodGet && req.Headers()["hx-request"] == "true" {
			_ = r.Fulfill(playwright.RouteFulfillOptions{Status: playwright.Int(http.StatusNoContent)})
			return
		}
		_ = r.Continue()
	})
	must(t, "hold the registry's auto-refresh", err)
}

// openRegistry opens the registry (its auto-refresh held) and waits for it.
func openRegistry(t *testing.T, page playwright.Page, query string) {
	t.Helper()
	gotoOK(t, page, "/waterline/schedules"+query)
	must(t, "registry results", expect.Locator(page.GetByTestId("registry-results")).ToBeVisible())
}

// rowAction returns the action testid in scope (a registry row), first
// opening the row's ⋯ menu when the action sits in it, as a user would.
// Outside a row menu (the detail page) it is just GetByTestId.
func rowAction(t *testing.T, scope playwright.Locator, testid string) playwright.Locator {
	t.Helper()
	menu := scope.GetByTestId("row-menu")
	if n, err := menu.GetByTestId(testid).Count(); err == nil && n > 0 {
		open, err := menu.Evaluate("d => d.open", nil)
		must(t, "is the row menu open", err)
		if open != true {
			must(t, "open the row menu", menu.Locator("summary").First().Click())
			must(t, "row menu open", expect.Locator(menu).ToHaveAttribute("open", ""))
		}
	}
	return scope.GetByTestId(testid)
}

// openDetails opens a row action's <details> disclosure (Pause…, Trigger…,
// Delete…; the last two in the row's ⋯ menu), which works with or without
// JavaScript.
func openDetails(t *testing.T, scope playwright.Locator, testid string) playwright.Locator {
	t.Helper()
	d := rowAction(t, scope, testid)
	must(t, "open "+testid, d.Locator("summary").Click())
	must(t, testid+" open", expect.Locator(d).ToHaveAttribute("open", ""))
	return d
}

// sequences returns the data-sequence of every history event in scope, in
// document order.
func sequences(t *testing.T, scope playwright.Locator) []int64 {
	t.Helper()
	raw, err := scope.GetByTestId("history-event").EvaluateAll(`els => els.map(e => e.getAttribute("data-sequence"))`)
	must(t, "read the history's sequences", err)
	list, ok := raw.([]any)
	if !ok {
		t.Fatalf("e2e: sequences: unexpected %T", raw)
	}
	out := make([]int64, 0, len(list))
	for _, v := range list {
		s, _ := v.(string)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("e2e: history event with data-sequence %q", s)
		}
		out = append(out, n)
	}
	return out
}

// checkIncreasing fails unless seqs strictly increase (so: no duplicates).
func checkIncreasing(t *testing.T, what string, seqs []int64) {
	t.Helper()
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("%s: sequence %d follows %d at position %d: not strictly increasing", what, seqs[i], seqs[i-1], i)
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wallTimes formats ts as the console does ("2006-01-02 15:04 MST") in loc.
func wallTimes(ts []time.Time, loc *time.Location) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.In(loc).Format("2006-01-02 15:04 MST")
	}
	return out
}
