package web_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// consoleClient drives the console through the real router like a browser
// without JavaScript (or, with hx(), like htmx): form posts, redirects by
// hand, and a cookie jar for the flash and namespace cookies.
type consoleClient struct {
	t      *testing.T
	api    *apiFixture
	jar    *cookiejar.Jar
	noCSRF bool // post without the CSRF token, like a forged cross-site form
	// csrf is the token the last page handed out, and the session cookie
	// it was bound to: like a browser, a post sends the token of a page
	// seen in the same session.
	csrf, csrfSession string
	remoteAddr        string // the client's address; loopback when empty
	https             bool   // the page is seen over TLS: the jar sends Secure cookies
}

func (c *consoleClient) jarURL(path string) *url.URL {
	scheme := "http"
	if c.https {
		scheme = "https"
	}
	u, err := url.Parse(scheme + "://example.com" + path)
	require.NoError(c.t, err)
	return u
}

func (c *consoleClient) cookie(name string) string {
	for _, ck := range c.jar.Cookies(c.jarURL("/waterline/")) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

func newConsole(t *testing.T, db *bun.DB, namespace string) *consoleClient {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &consoleClient{t: t, api: newAPI(t, db, namespace), jar: jar}
}

type page struct {
	Status int
	Header http.Header
	Raw    string
	Doc    *goquery.Document
}

var hx = []string{"HX-Request", "true"}

func (c *consoleClient) do(method, path string, form url.Values, header ...string) page {
	c.t.Helper()
	// Like a browser, send the CSRF token of a page of this session; fetch
	// one first when none was handed out yet (the login form when signed out).
	var csrfToken string
	if method != http.MethodGet {
		if c.csrf == "" || c.csrfSession != c.cookie("tideline_session") {
			c.csrf = ""
			c.do(http.MethodGet, "/waterline/schedules", nil)
			if c.csrf == "" {
				c.do(http.MethodGet, "/waterline/login", nil)
			}
		}
		csrfToken = c.csrf
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, body)
	req.RemoteAddr = "127.0.0.1:40000" // local mode serves loopback clients only
	if c.remoteAddr != "" {
		req.RemoteAddr = c.remoteAddr
	}
	req.Host = "127.0.0.1:8080" // and addressed to this machine (no DNS rebinding)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if csrfToken != "" && !c.noCSRF {
		req.Header.Set("X-CSRF-Token", csrfToken)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	u := c.jarURL(path)
	for _, ck := range c.jar.Cookies(u) {
		req.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	c.api.h.ServeHTTP(rec, req)
	c.jar.SetCookies(u, rec.Result().Cookies())
	raw := rec.Body.String()
	// Fragments (a table row, history items) are parsed in a context an
	// HTML parser keeps them in.
	wrapped := raw
	switch {
	case strings.HasPrefix(raw, "<tr"):
		wrapped = "<table><tbody>" + raw + "</tbody></table>"
	case strings.HasPrefix(raw, "<li"):
		wrapped = "<ol>" + raw + "</ol>"
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(wrapped))
	require.NoError(c.t, err)
	if token, ok := doc.Find(`input[name="_csrf"]`).First().Attr("value"); ok && token != "" {
		c.csrf, c.csrfSession = token, c.cookie("tideline_session")
	}
	return page{Status: rec.Code, Header: rec.Header(), Raw: raw, Doc: doc}
}

func (c *consoleClient) get(path string, header ...string) page {
	c.t.Helper()
	return c.do(http.MethodGet, path, nil, header...)
}

func (c *consoleClient) post(path string, form url.Values, header ...string) page {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	return c.do(http.MethodPost, path, form, header...)
}

// page200 gets a page and requires 200.
func (c *consoleClient) page200(path string) *goquery.Document {
	c.t.Helper()
	p := c.get(path)
	require.Equal(c.t, http.StatusOK, p.Status, "GET %s: %s", path, p.Raw)
	return p.Doc
}

// seeOther requires a 303 and returns where it points.
func seeOther(t *testing.T, p page) string {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, p.Status, p.Raw)
	return p.Header.Get("Location")
}

func tid(id string) string { return `[data-testid="` + id + `"]` }

func textOf(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

func attrOf(t *testing.T, s *goquery.Selection, name string) string {
	t.Helper()
	require.Equal(t, 1, s.Length(), "expected one element to read %q from", name)
	v, ok := s.Attr(name)
	require.True(t, ok, "attribute %q missing", name)
	return v
}

func rowOf(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(tid("schedule-row") + `[data-schedule-id="` + id + `"]`)
}

func rowIDs(doc *goquery.Document) []string {
	var ids []string
	doc.Find(tid("schedule-row")).Each(func(_ int, s *goquery.Selection) {
		ids = append(ids, s.AttrOr("data-schedule-id", ""))
	})
	return ids
}

// fieldError is the inline message under a form input.
func fieldError(doc *goquery.Document, field string) string {
	return textOf(doc.Find(tid("field-error") + `[data-field="` + field + `"]`))
}

// formValues reads a form's fields as a browser would submit them.
func formValues(form *goquery.Selection) url.Values {
	v := url.Values{}
	form.Find("input[name], textarea[name], select[name]").Each(func(_ int, s *goquery.Selection) {
		name := s.AttrOr("name", "")
		switch {
		case s.Is("textarea"):
			v.Add(name, s.Text())
		case s.Is("select"):
			opt := s.Find("option[selected]")
			if opt.Length() == 0 {
				opt = s.Find("option").First()
			}
			v.Add(name, opt.AttrOr("value", ""))
		case s.AttrOr("type", "") == "checkbox", s.AttrOr("type", "") == "radio":
			if _, checked := s.Attr("checked"); checked {
				v.Add(name, s.AttrOr("value", "on"))
			}
		default:
			v.Add(name, s.AttrOr("value", ""))
		}
	})
	return v
}

// historyTypes lists a schedule's audit event types through the API.
func (c *consoleClient) history(ns, id string) []map[string]any {
	c.t.Helper()
	body := c.api.must(200, "GET", v2+"/schedules/"+id+"/history?limit=500", "", "X-Namespace", ns)
	var out []map[string]any
	for _, e := range body["events"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func (c *consoleClient) create(ns, body string) {
	c.t.Helper()
	c.api.must(201, "POST", v2+"/schedules", body, "X-Namespace", ns)
}

const (
	alphaBody = `{"schedule_id":"alpha","cron":"*/15 * * * *","action":{"workflow_type":"quarter.Hourly"},"labels":{"team":"ops"}}`
	betaBody  = `{"schedule_id":"beta","spec":{"intervals":[{"every":"PT1H","offset":"PT5M"}]},"action":{"workflow_type":"poll.Feeds"},"overlap_policy":"allow_all"}`
)

func TestConsoleRegistry(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")

		doc := c.page200("/waterline/schedules")
		require.Equal(t, 1, doc.Find(tid("empty-state")).Length(), "a new user sees the empty state")
		require.Equal(t, "/waterline/schedules/new", attrOf(t, doc.Find(tid("empty-create")), "href"))
		require.Zero(t, doc.Find(tid("schedules-table")).Length())
		require.Equal(t, "schedules", doc.Find(`[aria-current="page"]`).AttrOr("data-testid", "")[len("nav-"):])

		c.create("default", dailyBody)
		c.create("default", alphaBody)
		c.create("default", betaBody)
		c.api.must(200, "POST", v2+"/schedules/alpha/pause", `{"reason":"upstream outage"}`)
		c.api.must(200, "POST", v2+"/schedules/daily-sync/trigger", "")

		doc = c.page200("/waterline/schedules")
		require.Equal(t, []string{"alpha", "beta", "daily-sync"}, rowIDs(doc), "ordered by schedule ID")

		daily := rowOf(doc, "daily-sync")
		require.Equal(t, "/waterline/schedules/daily-sync", attrOf(t, daily.Find(tid("schedule-link")), "href"))
		require.Equal(t, "invoice-sync", textOf(daily.Find(tid("workflow-type"))))
		require.Equal(t, "At 02:30 every day", textOf(daily.Find(tid("spec")).Find(".line-main")))
		require.Equal(t, "America/New_York", textOf(daily.Find(tid("timezone"))))
		require.Equal(t, "active", attrOf(t, daily.Find(tid("status-badge")), "data-status"))
		next := daily.Find(tid("next-fire"))
		require.Equal(t, "2026-07-17T06:30:00.000000Z", attrOf(t, next.Find("time"), "datetime"))
		require.Equal(t, "2026-07-17 02:30 EDT", textOf(next.Find("time")), "absolute, in the schedule's zone")
		require.Equal(t, "in 18 h", textOf(next.Find(tid("relative"))))
		require.Zero(t, next.Find(tid("overdue")).Length())
		require.Equal(t, "manual", textOf(daily.Find(tid("last-result")).Find(tid("outcome-badge"))), "last result is recent_actions[0]")
		require.Equal(t, "now", textOf(daily.Find(tid("last-result")).Find(tid("relative"))))
		require.Equal(t, "1", textOf(daily.Find(tid("fires-count"))))
		require.Equal(t, "team=billing", textOf(daily.Find(tid("chip"))))
		require.Equal(t, "nightly", textOf(daily.Find(tid("schedule-note"))))
		for _, action := range []string{"action-pause", "action-trigger", "action-backfill", "action-history", "action-edit", "action-delete"} {
			require.Equal(t, 1, daily.Find(tid(action)).Length(), action)
		}
		require.Zero(t, daily.Find(tid("action-resume")).Length(), "an active schedule cannot be resumed")
		require.Equal(t, "daily-sync", attrOf(t, daily.Find(tid("bulk-select")), "value"))

		alpha := rowOf(doc, "alpha")
		require.Equal(t, "paused", attrOf(t, alpha.Find(tid("status-badge")), "data-status"))
		require.Zero(t, alpha.Find(tid("schedule-note")).Length(), "alpha has no note; the pause reason is not one")
		require.Equal(t, "paused · by local", textOf(alpha.Find(tid("pause-note"))))
		require.Equal(t, "local", textOf(alpha.Find(tid("paused-by"))))
		require.Equal(t, "upstream outage · since 2026-07-16 12:00 UTC", textOf(alpha.Find(tid("row-detail"))),
			"the pause reason and its time are on the row, not only in a tooltip")
		require.Equal(t, 1, alpha.Find(tid("action-resume")).Length())
		require.Zero(t, alpha.Find(tid("action-pause")).Length())
		require.Zero(t, alpha.Find(tid("action-trigger")).Length(), "triggering a paused schedule would only skip")
		require.Equal(t, "never fired", textOf(alpha.Find(tid("last-result"))))

		beta := rowOf(doc, "beta")
		require.Equal(t, "Every hour, offset 5 minutes", textOf(beta.Find(tid("spec")).Find(".line-main")))
		require.Equal(t, "UTC", textOf(beta.Find(tid("timezone"))))
		require.Equal(t, "2026-07-16 12:05 UTC", textOf(beta.Find(tid("next-fire")).Find("time")))
		require.Equal(t, "in 5 min", textOf(beta.Find(tid("next-fire")).Find(tid("relative"))))

		// Ten minutes later nobody has ticked: beta's next fire is overdue.
		c.api.clock.Set(t0.Add(10 * time.Minute))
		doc = c.page200("/waterline/schedules")
		beta = rowOf(doc, "beta")
		require.True(t, beta.HasClass("is-overdue"))
		require.Equal(t, "overdue", textOf(beta.Find(tid("overdue"))))
		require.Equal(t, "5 min ago", textOf(beta.Find(tid("next-fire")).Find(tid("relative"))))
		require.Zero(t, rowOf(doc, "alpha").Find(tid("overdue")).Length(), "a paused schedule is never overdue")

		// Filters.
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"status=paused", []string{"alpha"}},
			// daily-sync's manual run has waited 10 min with no worker: stuck
			// comes before overdue in the default (health) order.
			{"status=active", []string{"daily-sync", "beta"}},
			{"status=active&sort=schedule_id", []string{"beta", "daily-sync"}},
			{"q=BETA", []string{"beta"}},
			{"q=invoice", []string{"daily-sync"}},
			{"q=nightly", []string{"daily-sync"}},
			{"label=team:ops", []string{"alpha"}},
			{"status=all&label=team:billing", []string{"daily-sync"}},
		} {
			doc := c.page200("/waterline/schedules?" + tc.query)
			require.Equal(t, tc.want, rowIDs(doc), tc.query)
		}
		doc = c.page200("/waterline/schedules?status=paused&q=al")
		require.Equal(t, "paused", doc.Find(tid("filter-status")).Find("option[selected]").AttrOr("value", ""), "the filter form keeps its values")
		require.Equal(t, "al", attrOf(t, doc.Find(tid("filter-q")), "value"))
		require.Equal(t, "/waterline/schedules?q=al&status=paused", attrOf(t, doc.Find(tid("autorefresh")), "hx-get"), "the refresh keeps the filters")

		doc = c.page200("/waterline/schedules?label=team:nobody")
		require.Contains(t, textOf(doc.Find(tid("empty-state"))), "No schedules match these filters")
		require.Equal(t, "/waterline/schedules", attrOf(t, doc.Find(tid("clear-filters")), "href"))

		// Keyset pagination, in the default order: stuck, overdue, the rest.
		doc = c.page200("/waterline/schedules?limit=2")
		require.Equal(t, []string{"daily-sync", "beta"}, rowIDs(doc))
		require.Zero(t, doc.Find(tid("first-page")).Length())
		nextURL := attrOf(t, doc.Find(tid("next-page")), "href")
		require.Contains(t, nextURL, "cursor=")
		doc = c.page200(nextURL)
		require.Equal(t, []string{"alpha"}, rowIDs(doc))
		require.Zero(t, doc.Find(tid("next-page")).Length())
		require.Equal(t, "/waterline/schedules?limit=2", attrOf(t, doc.Find(tid("first-page")), "href"))

		// Bad input is shown on the page, never a panic.
		for _, q := range []string{"status=sleeping", "cursor=%21%21", "limit=abc", "limit=999", "label=nocolon"} {
			p := c.get("/waterline/schedules?" + q)
			require.Equal(t, http.StatusUnprocessableEntity, p.Status, q)
			require.Contains(t, textOf(p.Doc.Find(tid("flash"))), "Cannot list schedules", q)
			require.Equal(t, 1, p.Doc.Find(tid("registry-filters")).Length(), "%s: the filters stay to fix the query", q)
		}

		// The 10 s refresh gets just the results.
		p := c.get("/waterline/schedules?status=active", hx...)
		require.Equal(t, http.StatusOK, p.Status)
		require.True(t, strings.HasPrefix(p.Raw, `<div id="registry-results"`), p.Raw)
		require.NotContains(t, p.Raw, "<html")
		require.Equal(t, []string{"daily-sync", "beta"}, rowIDs(p.Doc), "in the page's order")
	})
}

func TestConsoleCreateSchedule(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")

		doc := c.page200("/waterline/schedules/new")
		form := doc.Find(tid("schedule-form"))
		require.Equal(t, "/waterline/schedules", attrOf(t, form, "action"))
		require.Equal(t, "post", attrOf(t, form, "method"))
		require.Equal(t, "/waterline/schedules/preview", attrOf(t, doc.Find("aside[hx-post]"), "hx-post"))
		require.Equal(t, 1, doc.Find(tid("preview-empty")).Length())

		// Errors the form itself finds, plus the spec's: all in one answer.
		bad := url.Values{
			"schedule_id": {"bad one"}, "cron_expressions": {"0 * * * *\n\n61 * * * *"}, "intervals": {"P1M"},
			"timezone": {"Mars/Olympus"}, "workflow_type": {"w"}, "input": {`{"full": tru`}, "jitter_seconds": {"ten"},
			"labels": {"team=data\nnovalue"}, "note": {"keep me"},
		}
		p := c.post("/waterline/schedules", bad)
		require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
		require.Contains(t, fieldError(p.Doc, "cron_expressions"), "line 3:", "the message names the textarea line")
		require.Contains(t, fieldError(p.Doc, "cron_expressions"), "61")
		require.Contains(t, fieldError(p.Doc, "intervals"), "line 1: every: months and years have no fixed length")
		require.Contains(t, fieldError(p.Doc, "timezone"), "Mars/Olympus")
		require.Contains(t, fieldError(p.Doc, "input"), "must be valid JSON")
		require.Equal(t, "must be a whole number", fieldError(p.Doc, "jitter_seconds"))
		require.Equal(t, "line 2: write key=value", fieldError(p.Doc, "labels"))
		require.Equal(t, "true", attrOf(t, p.Doc.Find(tid("input-input")), "aria-invalid"))
		// The submitted values come back.
		require.Equal(t, "0 * * * *\n\n61 * * * *", p.Doc.Find(tid("input-cron_expressions")).Text())
		require.Equal(t, `{"full": tru`, p.Doc.Find(tid("input-input")).Text())
		require.Equal(t, "keep me", attrOf(t, p.Doc.Find(tid("input-note")), "value"))
		require.Equal(t, "bad one", attrOf(t, p.Doc.Find(tid("input-schedule_id")), "value"))

		// Errors only the service finds, mapped onto the inputs.
		p = c.post("/waterline/schedules", url.Values{"schedule_id": {"bad one"}, "cron_expressions": {"0 * * * *"},
			"workflow_type": {""}, "max_runs": {"0"}, "execution_timeout_seconds": {"-5"}, "overlap_policy": {"sometimes"}})
		require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
		require.Contains(t, fieldError(p.Doc, "schedule_id"), "1-200 characters")
		require.Contains(t, fieldError(p.Doc, "workflow_type"), "is required")
		require.Contains(t, fieldError(p.Doc, "max_runs"), "at least 1")
		require.Contains(t, fieldError(p.Doc, "execution_timeout_seconds"), "positive")
		require.Contains(t, fieldError(p.Doc, "overlap_policy"), "must be one of")
		require.Zero(t, p.Doc.Find(tid("form-other-errors")).Length(), "every message found its input")

		p = c.post("/waterline/schedules", url.Values{"cron_expressions": {"0 0 30 2 *"}, "workflow_type": {"w"}})
		require.Equal(t, http.StatusUnprocessableEntity, p.Status)
		require.NotEmpty(t, fieldError(p.Doc, "cron_expressions"), "a spec that never fires")
		require.Empty(t, c.api.must(200, "GET", v2+"/schedules?status=all", "")["schedules"], "nothing was created")

		// Success: 303 to the detail page with a flash cookie.
		good := url.Values{
			"schedule_id": {"etl"}, "cron_expressions": {" 0  2 * * * \r\n"}, "intervals": {"1 hour offset 5 minutes\nPT30M"},
			"timezone": {"Europe/Paris"}, "workflow_type": {"etl.Run"}, "workflow_class": {"App\\Jobs\\Etl"},
			"input": {`{"full": true, "tables": ["a", "b"]}`}, "execution_timeout_seconds": {"3600"}, "run_timeout_seconds": {""},
			"overlap_policy": {"buffer_one"}, "jitter_seconds": {"30"}, "max_runs": {"5"}, "connection": {"redis"}, "queue": {""},
			"labels": {"team=data\nenv = prod"}, "memo": {"owner=ops@example.com"}, "note": {"hello"}, "paused": {"1"},
		}
		p = c.post("/waterline/schedules", good)
		require.Equal(t, "/waterline/schedules/etl", seeOther(t, p))
		var flash *http.Cookie
		for _, ck := range (&http.Response{Header: p.Header}).Cookies() {
			if ck.Name == "tideline_flash" {
				flash = ck
			}
		}
		require.NotNil(t, flash, "the flash travels in a cookie")
		require.True(t, flash.HttpOnly)
		require.Equal(t, http.SameSiteLaxMode, flash.SameSite)
		require.Equal(t, "/waterline", flash.Path)

		doc = c.page200("/waterline/schedules/etl")
		require.Equal(t, "Created etl (paused).", textOf(doc.Find(tid("flash"))))
		require.Zero(t, c.page200("/waterline/schedules/etl").Find(tid("flash")).Length(), "a flash shows once")

		s := c.api.must(200, "GET", v2+"/schedules/etl", "")
		require.Equal(t, "paused", s["status"])
		require.Equal(t, map[string]any{"cron_expressions": []any{"0 2 * * *"}, "timezone": "Europe/Paris",
			"intervals": []any{map[string]any{"every": "PT1H", "offset": "PT5M"}, map[string]any{"every": "PT30M"}}}, s["spec"],
			"intervals are stored in canonical ISO-8601")
		action := s["action"].(map[string]any)
		require.Equal(t, "etl.Run", action["workflow_type"])
		require.Equal(t, `App\Jobs\Etl`, action["workflow_class"])
		require.Equal(t, map[string]any{"full": true, "tables": []any{"a", "b"}}, action["input"])
		require.EqualValues(t, 3600, action["execution_timeout_seconds"])
		require.Nil(t, action["run_timeout_seconds"])
		require.Equal(t, "buffer_one", s["overlap_policy"])
		require.EqualValues(t, 30, s["jitter_seconds"])
		require.EqualValues(t, 5, s["max_runs"])
		require.Equal(t, "redis", s["connection"])
		require.Nil(t, s["queue"], "an empty routing field is null, not \"\"")
		require.Equal(t, map[string]any{"team": "data", "env": "prod"}, s["labels"])
		require.Equal(t, map[string]any{"owner": "ops@example.com"}, s["memo"])
		require.Equal(t, "hello", s["note"])
		events := c.history("default", "etl")
		require.Equal(t, "ScheduleCreated", events[0]["event_type"])
		require.Equal(t, "SchedulePaused", events[1]["event_type"])
		require.Equal(t, "ui", events[0]["payload"].(map[string]any)["command_context"].(map[string]any)["source"])

		// The same ID again: 409 with the message at the ID.
		p = c.post("/waterline/schedules", good)
		require.Equal(t, http.StatusConflict, p.Status)
		require.Contains(t, fieldError(p.Doc, "schedule_id"), "already exists")

		// An empty ID is generated.
		p = c.post("/waterline/schedules", url.Values{"cron_expressions": {"@daily"}, "workflow_type": {"w"}})
		require.Regexp(t, `^/waterline/schedules/sch-[0-9a-z]{26}$`, seeOther(t, p))
	})
}

func TestConsoleFlashCookieIsOnlyALocalMessage(t *testing.T) {
	t.Parallel()
	c := newConsole(t, dbtest.SQLite(t), "")
	// A forged cookie cannot turn the flash into a link off the site.
	u, _ := url.Parse("http://example.com/waterline/schedules")
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"Kind":"ok","Message":"hi","LinkURL":"https://evil.example/","LinkLabel":"x"}`))
	c.jar.SetCookies(u, []*http.Cookie{{Name: "tideline_flash", Path: "/waterline", Value: forged}})
	doc := c.page200("/waterline/schedules")
	require.Equal(t, "hi", textOf(doc.Find(tid("flash"))))
	require.Zero(t, doc.Find(tid("flash-link")).Length())
	c.jar.SetCookies(u, []*http.Cookie{{Name: "tideline_flash", Path: "/waterline", Value: "%%%not-base64"}})
	doc = c.page200("/waterline/schedules")
	require.Zero(t, doc.Find(tid("flash")).Length(), "a garbled cookie is ignored")
}

func TestConsolePreview(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", dailyBody)

		p := c.post("/waterline/schedules/preview", url.Values{"cron_expressions": {"0 9 * * 1-5"}, "timezone": {"Europe/London"}, "_csrf": {"x"}})
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		require.True(t, strings.HasPrefix(p.Raw, `<div id="spec-preview"`), "a fragment: %s", p.Raw)
		require.Equal(t, "At 09:00 on Monday through Friday · Europe/London", textOf(p.Doc.Find(tid("spec-description"))))
		times := p.Doc.Find(tid("preview-fire-time"))
		require.Equal(t, 10, times.Length())
		require.Equal(t, "2026-07-17 09:00 BST", textOf(times.First().Find("time")))
		require.Equal(t, "2026-07-17T08:00:00.000000Z", attrOf(t, times.First().Find("time"), "datetime"))
		require.Equal(t, "in 20 h", textOf(times.First().Find(tid("relative"))))

		p = c.post("/waterline/schedules/preview", url.Values{"intervals": {"30 minutes"}})
		require.Equal(t, http.StatusOK, p.Status)
		require.Equal(t, "Every 30 minutes · UTC", textOf(p.Doc.Find(tid("spec-description"))))
		require.Equal(t, "2026-07-16 12:30 UTC", textOf(p.Doc.Find(tid("preview-fire-time")).First().Find("time")))

		p = c.post("/waterline/schedules/preview", url.Values{"cron_expressions": {"0 9 * * *\nnope"}, "timezone": {"Nowhere/City"}})
		require.Equal(t, http.StatusUnprocessableEntity, p.Status)
		require.Contains(t, textOf(p.Doc.Find(`[data-testid="preview-error"] li[data-field="cron_expressions"]`)), "line 2:")
		require.Equal(t, 1, p.Doc.Find(`[data-testid="preview-error"] li[data-field="timezone"]`).Length())

		p = c.post("/waterline/schedules/preview", url.Values{"intervals": {"every fortnight"}})
		require.Equal(t, http.StatusUnprocessableEntity, p.Status)
		require.Contains(t, textOf(p.Doc.Find(`[data-testid="preview-error"] li[data-field="intervals"]`)), "line 1")

		p = c.post("/waterline/schedules/preview", url.Values{"cron_expressions": {"  \n "}})
		require.Equal(t, http.StatusOK, p.Status)
		require.Equal(t, 1, p.Doc.Find(tid("preview-empty")).Length())

		// The edit form's preview also says what saving would change.
		edit := formValues(c.page200("/waterline/schedules/daily-sync/edit").Find(tid("schedule-form")))
		edit.Set("note", "moved")
		edit.Set("cron_expressions", "30 3 * * *")
		p = c.post("/waterline/schedules/preview?schedule_id=daily-sync", edit)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		var changed []string
		p.Doc.Find(`[data-testid="preview-changes"] [data-testid="change"]`).Each(func(_ int, s *goquery.Selection) {
			changed = append(changed, s.AttrOr("data-field", ""))
		})
		require.Equal(t, []string{"cron_expressions", "note"}, changed)
		require.Equal(t, "At 03:30 every day · America/New_York", textOf(p.Doc.Find(tid("spec-description"))))
	})
}

func TestConsoleScheduleDetail(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", dailyBody)
		runID := c.api.must(200, "POST", v2+"/schedules/daily-sync/trigger", "")["run_id"].(string)

		doc := c.page200("/waterline/schedules/daily-sync")
		require.Equal(t, "daily-sync", textOf(doc.Find(tid("schedule-id"))))
		require.Equal(t, "At 02:30 every day · America/New_York", textOf(doc.Find(`p`+tid("spec-description"))))
		facts := doc.Find(tid("schedule-facts"))
		require.Equal(t, "default", textOf(facts.Find(tid("fact-namespace"))))
		require.Equal(t, "30 2 * * *", textOf(facts.Find(tid("fact-cron-expressions"))))
		require.Equal(t, "invoice-sync", textOf(facts.Find(tid("fact-workflow-type"))))
		require.Equal(t, "{\n  \"region\": \"eu\"\n}", facts.Find(tid("fact-input")).Find("pre").Text())
		require.Equal(t, "10 min", textOf(facts.Find(tid("fact-run-timeout"))))
		require.Equal(t, "skip", textOf(facts.Find(tid("fact-overlap-policy"))))
		require.Equal(t, "unlimited", textOf(facts.Find(tid("fact-max-runs"))))
		require.Equal(t, "team=billing", textOf(facts.Find(tid("fact-labels"))))
		require.Equal(t, "nightly", textOf(facts.Find(tid("fact-note"))))
		require.Equal(t, "1", textOf(facts.Find(tid("fires-count"))))
		require.Equal(t, "2026-07-17 02:30 EDT in 18 h", textOf(facts.Find(tid("fact-next-fire"))))
		require.Equal(t, "/waterline/runs/"+runID, attrOf(t, facts.Find(tid("fact-latest-run")).Find("a"), "href"))
		require.Equal(t, 5, doc.Find(tid("future-fire-time")).Length())
		require.Equal(t, "2026-07-21 02:30 EDT", textOf(doc.Find(tid("future-fire-time")).Last().Find("time")))
		require.Equal(t, 1, doc.Find(tid("recent-action")).Length())
		require.Equal(t, "manual", textOf(doc.Find(tid("recent-action")).Find(tid("outcome-badge"))))
		require.Equal(t, runID, attrOf(t, doc.Find(tid("runs-table")).Find(tid("run-row")), "data-run-id"))
		require.Equal(t, "/waterline/runs?schedule_id=daily-sync", attrOf(t, doc.Find(tid("all-runs-link")), "href"))
		// One History button, in the action bar (issue 21 removed the second).
		require.Equal(t, "/waterline/schedules/daily-sync/history", attrOf(t, doc.Find(tid("action-history")), "href"))
		require.Equal(t, 1, doc.Find(`a[href="/waterline/schedules/daily-sync/history"]`).Length())
		actions := doc.Find(".page-head " + tid("schedule-actions"))
		require.Equal(t, 1, actions.Find(tid("action-pause")).Length())
		require.Equal(t, "/waterline/schedules/daily-sync", actions.Find(`input[name="return_to"]`).First().AttrOr("value", ""),
			"a no-JS action comes back to this page")
		require.Zero(t, actions.Find("[hx-post]").Length(), "on the detail page actions post and redirect")

		p := c.get("/waterline/schedules/nope")
		require.Equal(t, http.StatusNotFound, p.Status)
		require.Equal(t, "Not Found", textOf(p.Doc.Find(tid("error-title"))))

		// A deleted schedule stays readable (the registry's "deleted" filter
		// links here), without actions.
		c.api.must(200, "DELETE", v2+"/schedules/daily-sync", "")
		doc = c.page200("/waterline/schedules/daily-sync")
		require.Equal(t, "deleted", attrOf(t, doc.Find("h1 "+tid("status-badge")), "data-status"))
		require.Zero(t, doc.Find(".page-head "+tid("schedule-actions")).Find("form, details").Length())
		require.Equal(t, 1, doc.Find(tid("action-history")).Length())
		require.Equal(t, 1, doc.Find(tid("no-future-fires")).Length())
		require.Equal(t, "At 02:30 every day · America/New_York", textOf(doc.Find(`p`+tid("spec-description"))))
	})
}

func TestConsoleEditSchedule(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", dailyBody)

		doc := c.page200("/waterline/schedules/daily-sync/edit")
		form := doc.Find(tid("schedule-form"))
		require.Equal(t, "/waterline/schedules/daily-sync/edit", attrOf(t, form, "action"))
		require.Equal(t, "/waterline/schedules/preview?schedule_id=daily-sync", attrOf(t, doc.Find("aside[hx-post]"), "hx-post"))
		_, readonly := doc.Find(tid("input-schedule_id")).Attr("readonly")
		require.True(t, readonly)
		_, novalidate := form.Attr("novalidate")
		require.True(t, novalidate, "the server lists every problem at once; the browser would bubble one at a time (issue 37 §13)")
		require.Zero(t, doc.Find(tid("input-paused")).Length())
		values := formValues(form)
		require.Equal(t, "30 2 * * *", values.Get("cron_expressions"))
		require.Equal(t, "America/New_York", values.Get("timezone"))
		require.Equal(t, "{\n  \"region\": \"eu\"\n}", values.Get("input"))
		require.Equal(t, "600", values.Get("run_timeout_seconds"))
		require.Equal(t, "team=billing", values.Get("labels"))
		require.Equal(t, "skip", values.Get("overlap_policy"))
		require.Equal(t, "At 02:30 every day · America/New_York", textOf(doc.Find(tid("spec-description"))), "the current spec is previewed")

		// Saving the form untouched changes nothing.
		p := c.post("/waterline/schedules/daily-sync/edit", values)
		require.Equal(t, "/waterline/schedules/daily-sync", seeOther(t, p))
		require.Contains(t, textOf(c.page200("/waterline/schedules/daily-sync").Find(tid("flash"))), "Nothing to save")
		require.Len(t, c.history("default", "daily-sync"), 1)

		// A field the form cannot read: 422, and what would change so far.
		edited := formValues(form)
		edited.Set("cron_expressions", "30 3 * * *")
		edited.Set("note", "moved to 03:30")
		edited.Set("input", "{")
		p = c.post("/waterline/schedules/daily-sync/edit", edited)
		require.Equal(t, http.StatusUnprocessableEntity, p.Status)
		require.Contains(t, fieldError(p.Doc, "input"), "must be valid JSON")
		var changed []string
		p.Doc.Find(`[data-testid="form-changes"] [data-testid="change"]`).Each(func(_ int, s *goquery.Selection) {
			changed = append(changed, s.AttrOr("data-field", ""))
		})
		require.Equal(t, []string{"cron_expressions", "input", "note"}, changed)
		note := p.Doc.Find(`[data-testid="form-changes"] [data-field="note"]`)
		require.Equal(t, "nightly", textOf(note.Find("del")))
		require.Equal(t, "moved to 03:30", textOf(note.Find("ins")))
		require.Equal(t, "daily-sync", attrOf(t, p.Doc.Find(tid("input-schedule_id")), "value"))

		// A refusal of the service (max_runs) lands at its input.
		edited.Set("input", `{"region": "eu"}`)
		edited.Set("jitter_seconds", "7200")
		p = c.post("/waterline/schedules/daily-sync/edit", edited)
		require.Equal(t, http.StatusUnprocessableEntity, p.Status)
		require.Contains(t, fieldError(p.Doc, "jitter_seconds"), "between 0 and 3600")

		// Two numbers out of range at once: both are listed.
		both := formValues(form)
		both.Set("jitter_seconds", "7200")
		both.Set("run_timeout_seconds", "-5")
		p = c.post("/waterline/schedules/daily-sync/edit", both)
		require.Equal(t, http.StatusUnprocessableEntity, p.Status)
		require.NotEmpty(t, fieldError(p.Doc, "jitter_seconds"))
		require.NotEmpty(t, fieldError(p.Doc, "run_timeout_seconds"))

		// Reformatting the input JSON is not a change; the cron and note are.
		edited.Set("jitter_seconds", "0")
		edited.Set("input", `{ "region" : "eu" }`)
		p = c.post("/waterline/schedules/daily-sync/edit", edited)
		require.Equal(t, "/waterline/schedules/daily-sync", seeOther(t, p))
		require.Equal(t, "Saved daily-sync: changed cron_expressions, note.", textOf(c.page200("/waterline/schedules/daily-sync").Find(tid("flash"))))
		events := c.history("default", "daily-sync")
		require.Len(t, events, 2)
		last := events[1]
		require.Equal(t, "ScheduleUpdated", last["event_type"])
		require.Equal(t, []any{"spec", "note"}, last["payload"].(map[string]any)["changed_fields"], "exactly the changed fields")
		s := c.api.must(200, "GET", v2+"/schedules/daily-sync", "")
		require.Equal(t, "2026-07-17T07:30:00.000000Z", s["next_fire_at"])
		require.Equal(t, map[string]any{"team": "billing"}, s["labels"], "untouched fields stay")

		// Clearing a nullable field.
		edited.Set("run_timeout_seconds", "")
		edited.Set("max_runs", "10")
		p = c.post("/waterline/schedules/daily-sync/edit", edited)
		seeOther(t, p)
		s = c.api.must(200, "GET", v2+"/schedules/daily-sync", "")
		require.Nil(t, s["action"].(map[string]any)["run_timeout_seconds"])
		require.EqualValues(t, 10, s["max_runs"])

		c.api.must(200, "DELETE", v2+"/schedules/daily-sync", "")
		require.Equal(t, http.StatusConflict, c.get("/waterline/schedules/daily-sync/edit").Status)
		require.Equal(t, http.StatusConflict, c.post("/waterline/schedules/daily-sync/edit", edited).Status)
		require.Equal(t, http.StatusNotFound, c.get("/waterline/schedules/nope/edit").Status)
	})
}

func TestConsoleRowActionsWithoutJavaScript(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", dailyBody)

		// The registry's forms carry the page to come back to.
		doc := c.page200("/waterline/schedules?status=active")
		pauseForm := rowOf(doc, "daily-sync").Find(tid("action-pause")).Find("form")
		require.Equal(t, "/waterline/schedules/daily-sync/pause", attrOf(t, pauseForm, "action"))
		form := formValues(pauseForm)
		require.Equal(t, "/waterline/schedules?status=active", form.Get("return_to"))
		form.Set("reason", "db maintenance")

		p := c.post("/waterline/schedules/daily-sync/pause", form)
		require.Equal(t, "/waterline/schedules?status=active", seeOther(t, p))
		doc = c.page200("/waterline/schedules?status=active")
		require.Equal(t, "Paused daily-sync: db maintenance", textOf(doc.Find(tid("flash"))))
		require.True(t, doc.Find(tid("flash")).HasClass("flash-ok"))
		s := c.api.must(200, "GET", v2+"/schedules/daily-sync", "")
		require.Equal(t, "paused", s["status"])
		require.Equal(t, "db maintenance", s["pause_reason"])
		require.Equal(t, "nightly", s["note"], "a pause never touches the note")
		cc := c.history("default", "daily-sync")[1]["payload"].(map[string]any)["command_context"].(map[string]any)
		require.Equal(t, "ui", cc["source"])
		require.Equal(t, "db maintenance", cc["reason"])

		// A refused action comes back as an error flash.
		p = c.post("/waterline/schedules/daily-sync/pause", url.Values{})
		require.Equal(t, "/waterline/schedules", seeOther(t, p))
		doc = c.page200("/waterline/schedules")
		require.True(t, doc.Find(tid("flash")).HasClass("flash-error"))
		require.Contains(t, textOf(doc.Find(tid("flash"))), "already paused")

		// return_to off the console is ignored.
		for _, evil := range []string{"https://evil.example/", "//evil.example/x", "/elsewhere", "/waterline/api/v2/schedules", "/waterline/..", "/waterline/%2e%2e/x", "javascript:alert(1)"} {
			p = c.post("/waterline/schedules/daily-sync/resume", url.Values{"return_to": {evil}})
			require.Equal(t, "/waterline/schedules", seeOther(t, p), evil)
			c.api.must(200, "POST", v2+"/schedules/daily-sync/pause", "")
		}
		c.api.must(200, "POST", v2+"/schedules/daily-sync/resume", "")

		// Trigger: the flash links the started run.
		p = c.post("/waterline/schedules/daily-sync/trigger", url.Values{"return_to": {"/waterline/schedules/daily-sync"}})
		require.Equal(t, "/waterline/schedules/daily-sync", seeOther(t, p))
		doc = c.page200("/waterline/schedules/daily-sync")
		runID := c.api.must(200, "GET", v2+"/schedules/daily-sync", "")["latest_run_id"].(string)
		require.Equal(t, "Triggered daily-sync: started run "+runID, textOf(doc.Find(tid("flash"))))
		require.Equal(t, "/waterline/runs/"+runID, attrOf(t, doc.Find(tid("flash-link")), "href"))
		p = c.post("/waterline/schedules/daily-sync/trigger", url.Values{})
		seeOther(t, p)
		require.Equal(t, "Did not start daily-sync: skipped (overlap policy skip).", textOf(c.page200("/waterline/schedules").Find(tid("flash"))))

		// Delete: the typed ID must match.
		doc = c.page200("/waterline/schedules/daily-sync/delete")
		require.Equal(t, "/waterline/schedules/daily-sync/delete", attrOf(t, doc.Find(tid("delete-form")), "action"))
		p = c.post("/waterline/schedules/daily-sync/delete", url.Values{"confirm": {"daily"}})
		require.Equal(t, http.StatusUnprocessableEntity, p.Status)
		require.Equal(t, 1, p.Doc.Find(tid("delete-page")).Length())
		require.Contains(t, textOf(p.Doc.Find(tid("field-error"))), "Type the schedule ID exactly")
		require.Equal(t, "active", c.api.must(200, "GET", v2+"/schedules/daily-sync", "")["status"])
		p = c.post("/waterline/schedules/daily-sync/delete", url.Values{"confirm": {"daily-sync"}})
		require.Equal(t, "/waterline/schedules", seeOther(t, p))
		doc = c.page200("/waterline/schedules")
		require.Contains(t, textOf(doc.Find(tid("flash"))), "Deleted daily-sync.")
		require.Equal(t, "/waterline/schedules/daily-sync/history", attrOf(t, doc.Find(tid("flash-link")), "href"))
		require.Equal(t, 1, doc.Find(tid("empty-state")).Length())
		c.api.must(404, "GET", v2+"/schedules/daily-sync", "")

		require.Equal(t, http.StatusNotFound, c.post("/waterline/schedules/nope/pause", url.Values{}).Status)
		require.Equal(t, http.StatusNotFound, c.post("/waterline/schedules/nope/delete", url.Values{"confirm": {"x"}}).Status)
	})
}

func TestConsoleRowActionsWithHTMX(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", dailyBody)

		row := func(p page, status int) *goquery.Selection {
			t.Helper()
			require.Equal(t, status, p.Status, p.Raw)
			require.True(t, strings.HasPrefix(p.Raw, "<tr"), "a bare row: %s", p.Raw)
			r := rowOf(p.Doc, "daily-sync")
			require.Equal(t, 1, r.Length())
			return r
		}
		form := url.Values{"reason": {"upstream outage"}, "return_to": {"/waterline/schedules?q=daily"}}
		r := row(c.post("/waterline/schedules/daily-sync/pause", form, hx...), http.StatusOK)
		require.Equal(t, "paused", attrOf(t, r, "data-status"))
		require.Equal(t, "Paused daily-sync: upstream outage", textOf(r.Find(tid("row-notice"))))
		require.Equal(t, "nightly", textOf(r.Find(tid("schedule-note"))))
		require.Contains(t, textOf(r.Find(tid("row-detail"))), "upstream outage", "the pause reason is the row's second line")
		require.Equal(t, "paused", attrOf(t, r.Find(tid("row-detail")), "data-kind"))
		require.Equal(t, 1, r.Find(tid("action-resume")).Length())
		require.Equal(t, "/waterline/schedules?q=daily", r.Find(`input[name="return_to"]`).First().AttrOr("value", ""), "the row keeps its way back")
		require.Empty(t, c.get("/waterline/schedules").Doc.Find(tid("flash")).Text(), "htmx answers leave no flash behind")

		r = row(c.post("/waterline/schedules/daily-sync/pause", url.Values{}, hx...), http.StatusConflict)
		require.True(t, r.Find(tid("row-notice")).HasClass("flash-error"))
		require.Contains(t, textOf(r.Find(tid("row-notice"))), "already paused")

		r = row(c.post("/waterline/schedules/daily-sync/resume", url.Values{}, hx...), http.StatusOK)
		require.Equal(t, "active", attrOf(t, r, "data-status"))
		require.Contains(t, textOf(r.Find(tid("row-notice"))), "Resumed daily-sync")

		r = row(c.post("/waterline/schedules/daily-sync/trigger", url.Values{}, hx...), http.StatusOK)
		out := r.Find(tid("trigger-outcome"))
		require.Equal(t, "triggered", attrOf(t, out, "data-outcome"))
		runID := textOf(out.Find(tid("trigger-run-link")))
		require.Len(t, runID, 26)
		require.Equal(t, "/waterline/runs/"+runID, attrOf(t, out.Find(tid("trigger-run-link")), "href"))
		require.Equal(t, "1", textOf(r.Find(tid("fires-count"))))
		require.Zero(t, r.Find(tid("row-notice")).Length())

		r = row(c.post("/waterline/schedules/daily-sync/trigger", url.Values{}, hx...), http.StatusOK)
		require.Equal(t, "skipped", attrOf(t, r.Find(tid("trigger-outcome")), "data-outcome"))
		require.Equal(t, "overlap policy skip", textOf(r.Find(tid("skip-reason"))))
		require.Equal(t, "1", textOf(r.Find(tid("skips-count"))))

		r = row(c.post("/waterline/schedules/daily-sync/trigger", url.Values{"overlap_policy": {"buffer_one"}}, hx...), http.StatusOK)
		require.Equal(t, "buffered", attrOf(t, r.Find(tid("trigger-outcome")), "data-outcome"))
		require.Equal(t, "1", textOf(r.Find(tid("buffer-depth"))))

		c.api.clock.Advance(time.Second) // a manual fire's instance ID is its millisecond
		r = row(c.post("/waterline/schedules/daily-sync/trigger", url.Values{"overlap_policy": {"allow_all"}}, hx...), http.StatusOK)
		require.Equal(t, "triggered", attrOf(t, r.Find(tid("trigger-outcome")), "data-outcome"))

		r = row(c.post("/waterline/schedules/daily-sync/trigger", url.Values{"overlap_policy": {"whenever"}}, hx...), http.StatusUnprocessableEntity)
		require.Contains(t, textOf(r.Find(tid("row-notice"))), "overlap_policy: must be one of")

		r = row(c.post("/waterline/schedules/daily-sync/delete", url.Values{"confirm": {"nope"}}, hx...), http.StatusUnprocessableEntity)
		require.Contains(t, textOf(r.Find(tid("row-notice"))), "Type the schedule ID exactly")
		require.Equal(t, "active", attrOf(t, r, "data-status"))

		r = row(c.post("/waterline/schedules/daily-sync/delete", url.Values{"confirm": {"daily-sync"}}, hx...), http.StatusOK)
		require.Equal(t, "deleted", attrOf(t, r, "data-status"))
		require.Contains(t, textOf(r.Find(tid("row-notice"))), "Deleted daily-sync")
		require.Zero(t, r.Find(tid("schedule-actions")).Find("form, details").Length(), "nothing more to do but read its history")
		require.Equal(t, 1, r.Find(tid("action-history")).Length())
		require.Zero(t, r.Find(tid("bulk-select")).Length())
		require.Equal(t, "never", textOf(r.Find(tid("next-fire"))))

		// An action on a deleted schedule is refused in place.
		r = row(c.post("/waterline/schedules/daily-sync/trigger", url.Values{}, hx...), http.StatusConflict)
		require.Contains(t, textOf(r.Find(tid("row-notice"))), "deleted")
		require.Equal(t, http.StatusNotFound, c.post("/waterline/schedules/nope/resume", url.Values{}, hx...).Status)
	})
}

func TestConsoleBulkPauseResume(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		for _, id := range []string{"a", "b", "c"} {
			c.create("default", `{"schedule_id":"`+id+`","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		}
		doc := c.page200("/waterline/schedules")
		require.Equal(t, "/waterline/schedules/bulk", attrOf(t, doc.Find(tid("bulk-form")), "action"))
		require.Equal(t, 3, doc.Find(`input[form="bulk-form"][name="ids"]`).Length())

		status := func() map[string]string {
			out := map[string]string{}
			for _, s := range c.api.must(200, "GET", v2+"/schedules", "")["schedules"].([]any) {
				out[s.(map[string]any)["schedule_id"].(string)] = s.(map[string]any)["status"].(string)
			}
			return out
		}
		flash := func() *goquery.Selection { return c.page200("/waterline/schedules").Find(tid("flash")) }

		p := c.post("/waterline/schedules/bulk", url.Values{"ids": {"a", "b", "a"}, "action": {"pause"}, "reason": {"freeze"}})
		require.Equal(t, "/waterline/schedules", seeOther(t, p))
		f := flash()
		require.Equal(t, "Paused 2 schedules.", textOf(f))
		require.True(t, f.HasClass("flash-ok"))
		require.Equal(t, map[string]string{"a": "paused", "b": "paused", "c": "active"}, status())
		a := c.api.must(200, "GET", v2+"/schedules/a", "")
		require.Equal(t, "freeze", a["pause_reason"])
		require.Equal(t, "", a["note"], "a bulk pause never touches the note")

		seeOther(t, c.post("/waterline/schedules/bulk", url.Values{"ids": {"a", "c", "ghost"}, "action": {"pause"}}))
		f = flash()
		require.True(t, f.HasClass("flash-error"))
		require.Contains(t, textOf(f), "Paused 1 schedule. Not changed: a (")
		require.Contains(t, textOf(f), "ghost (not found)")
		require.Equal(t, map[string]string{"a": "paused", "b": "paused", "c": "paused"}, status())

		seeOther(t, c.post("/waterline/schedules/bulk", url.Values{"ids": {"a", "b", "c"}, "action": {"resume"}}))
		require.Equal(t, "Resumed 3 schedules.", textOf(flash()))
		require.Equal(t, map[string]string{"a": "active", "b": "active", "c": "active"}, status())

		seeOther(t, c.post("/waterline/schedules/bulk", url.Values{"action": {"pause"}}))
		require.Equal(t, "Select at least one schedule first.", textOf(flash()))
		seeOther(t, c.post("/waterline/schedules/bulk", url.Values{"ids": {"a"}, "action": {"explode"}}))
		require.Contains(t, textOf(flash()), "Choose Pause selected or Resume selected")
		require.Equal(t, map[string]string{"a": "active", "b": "active", "c": "active"}, status())
	})
}

func TestConsoleBackfill(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", `{"schedule_id":"q","spec":{"cron_expressions":["0 * * * *"],"timezone":"America/New_York"},"action":{"workflow_type":"w"},"overlap_policy":"buffer_all"}`)

		doc := c.page200("/waterline/schedules/q/backfill")
		panel := doc.Find(tid("backfill-panel"))
		require.Equal(t, "America/New_York", textOf(panel.Find(tid("backfill-timezone"))))
		form := formValues(panel.Find(tid("backfill-form")))
		require.Equal(t, "2026-07-15 08:00", form.Get("from"), "the last 24 hours, in the schedule's zone, 24-hour")
		require.Equal(t, "2026-07-16 08:00", form.Get("to"))
		require.Equal(t, "1", form.Get("dry_run"))
		require.Contains(t, textOf(panel.Find(`[data-testid="input-overlap_policy"] option`).First()), "buffer_all")

		// Dry run: wall times in New York; nothing starts.
		form.Set("from", "2026-07-01T00:00")
		form.Set("to", "2026-07-01T03:00")
		p := c.post("/waterline/schedules/q/backfill", form)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		res := p.Doc.Find(tid("backfill-result"))
		require.Equal(t, "true", attrOf(t, res, "data-dry-run"))
		require.Equal(t, "3", textOf(res.Find(tid("backfill-count"))))
		occ := res.Find(tid("backfill-occurrence"))
		require.Equal(t, 3, occ.Length())
		require.Equal(t, "2026-07-01 00:00 EDT", textOf(occ.First().Find("time")))
		require.Equal(t, "2026-07-01T04:00:00.000000Z", attrOf(t, occ.First().Find("time"), "datetime"))
		require.Zero(t, occ.Find(tid("outcome-badge")).Length())
		require.Empty(t, c.api.must(200, "GET", v2+"/runs", "")["runs"], "a dry run starts nothing")
		require.Equal(t, "Start 3 runs", textOf(res.Find(tid("backfill-confirm"))))

		// Confirm: the same range without dry_run.
		confirm := formValues(res.Find(tid("backfill-confirm-form")))
		require.Empty(t, confirm.Get("dry_run"))
		p = c.post("/waterline/schedules/q/backfill", confirm)
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		res = p.Doc.Find(tid("backfill-result"))
		require.Equal(t, "false", attrOf(t, res, "data-dry-run"))
		require.Equal(t, "3", textOf(res.Find(tid("backfill-count"))))
		// A job now: done in its first slice, its progress shown.
		job := res.Find(tid("backfill-job"))
		require.Equal(t, "completed", attrOf(t, job, "data-status"))
		require.Equal(t, "3", textOf(job.Find(tid("backfill-started"))), "buffer_all acts as allow_all")
		require.Equal(t, "0", textOf(job.Find(tid("backfill-remaining"))))
		require.Equal(t, "100", attrOf(t, job.Find(tid("backfill-progress")), "aria-valuenow"))
		require.Zero(t, job.Find(tid("backfill-pause")).Length(), "a finished job has no actions")
		require.Len(t, c.api.must(200, "GET", v2+"/runs?schedule_id=q", "")["runs"], 3)
		events := c.history("default", "q")
		require.Equal(t, "ui", events[1]["payload"].(map[string]any)["command_context"].(map[string]any)["source"])

		// With htmx, the panel alone.
		p = c.post("/waterline/schedules/q/backfill", url.Values{"from": {"2026-07-02T00:00"}, "to": {"2026-07-02T01:00"}, "dry_run": {"1"}}, hx...)
		require.Equal(t, http.StatusOK, p.Status)
		require.True(t, strings.HasPrefix(p.Raw, `<section id="backfill-panel"`), p.Raw)
		require.Equal(t, "1", textOf(p.Doc.Find(tid("backfill-count"))))
		require.Equal(t, "Start 1 run", textOf(p.Doc.Find(tid("backfill-confirm"))))

		for _, tc := range []struct {
			from, to, policy, field, msg string
		}{
			{"2026-07-02T00:00", "2026-07-01T00:00", "", "to", "must be after from"},
			{"yesterday", "2026-07-01T00:00", "", "from", "must be a date and time"},
			{"2026-07-01T00:00", "", "", "to", "is required"},
			{"1971-01-01T00:00", "2099-01-01T00:00", "", "to", "more than 1000000 occurrences"},
			{"2026-07-01T00:00", "2026-07-02T00:00", "sometimes", "overlap_policy", "must be one of"},
		} {
			p := c.post("/waterline/schedules/q/backfill", url.Values{"from": {tc.from}, "to": {tc.to}, "overlap_policy": {tc.policy}, "dry_run": {"1"}})
			require.Equal(t, http.StatusUnprocessableEntity, p.Status, "%+v", tc)
			require.Contains(t, fieldError(p.Doc, tc.field), tc.msg, "%+v", tc)
			require.Equal(t, tc.from, attrOf(t, p.Doc.Find(tid("input-from")), "value"), "the values come back")
		}

		c.api.must(200, "DELETE", v2+"/schedules/q", "")
		require.Equal(t, http.StatusConflict, c.get("/waterline/schedules/q/backfill").Status)
		require.Equal(t, http.StatusNotFound, c.get("/waterline/schedules/nope/backfill").Status)
	})
}

func TestConsoleHistory(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", `{"schedule_id":"h","spec":{"cron_expressions":["0 * * * *"],"timezone":"Europe/Kyiv"},"action":{"workflow_type":"w"},"overlap_policy":"allow_all"}`)
		// 1 created + 120 backfilled = 121 events.
		bf := c.api.must(202, "POST", v2+"/schedules/h/backfill", `{"from":"2026-07-01T00:00:00Z","to":"2026-07-06T00:00:00Z"}`)["backfill"].(map[string]any)
		require.EqualValues(t, 120, bf["started"])

		// Oldest first is ?order=asc since the console shows newest first by
		// default (console_history_test.go); a cursor implies its order.
		doc := c.page200("/waterline/schedules/h/history?order=asc")
		panel := doc.Find(tid("history-panel"))
		events := panel.Find(tid("history-event"))
		require.Equal(t, 100, events.Length(), "pages of 100")
		require.Equal(t, "1", attrOf(t, events.First(), "data-sequence"), "oldest first")
		require.Equal(t, "100", attrOf(t, events.Last(), "data-sequence"))
		first := events.First()
		require.Equal(t, "ScheduleCreated", textOf(first.Find(tid("event-type"))))
		require.Equal(t, "by api · local", textOf(first.Find(tid("event-actor"))), "local mode acts as the admin \"local\"")
		require.Equal(t, "2026-07-16 15:00:00 EEST", textOf(first.Find(tid("event-recorded-at")).Find("time")), "in the schedule's zone")
		require.Contains(t, first.Find(tid("event-payload")).Text(), `"overlap_policy": "allow_all"`)
		second := events.Eq(1)
		require.Equal(t, "ScheduleTriggered", textOf(second.Find(tid("event-type"))))
		require.Equal(t, "backfilled fire #1, overlap policy allow_all", textOf(second.Find(tid("event-summary"))))
		require.Regexp(t, `^/waterline/runs/[0-9A-Z]{26}$`, attrOf(t, second.Find(tid("event-run-link")), "href"))
		more := panel.Find(tid("history-load-more"))
		require.Equal(t, "/waterline/schedules/h/history?after_sequence=100", attrOf(t, more, "href"))
		require.Equal(t, "/waterline/schedules/h/history?after_sequence=100", attrOf(t, more, "hx-get"))
		require.Zero(t, panel.Find(tid("history-from-start")).Length())

		// "Load more" with htmx: just the next rows, and no further Load more.
		p := c.get("/waterline/schedules/h/history?after_sequence=100", hx...)
		require.Equal(t, http.StatusOK, p.Status)
		require.True(t, strings.HasPrefix(p.Raw, "<li"), p.Raw[:min(len(p.Raw), 200)])
		require.NotContains(t, p.Raw, "<html")
		events = p.Doc.Find(tid("history-event"))
		require.Equal(t, 21, events.Length())
		require.Equal(t, "101", attrOf(t, events.First(), "data-sequence"))
		require.Equal(t, "121", attrOf(t, events.Last(), "data-sequence"))
		require.Zero(t, p.Doc.Find(tid("history-load-more")).Length(), "has_more is false")

		// Without JS "Load more" is a page starting after the cursor.
		doc = c.page200("/waterline/schedules/h/history?after_sequence=100")
		require.Equal(t, 21, doc.Find(tid("history-event")).Length())
		require.Equal(t, "/waterline/schedules/h/history?order=asc", attrOf(t, doc.Find(tid("history-from-start")), "href"))

		// The modal asks with htmx but no cursor: it gets the page and picks the panel.
		p = c.get("/waterline/schedules/h/history", hx...)
		require.Equal(t, 1, p.Doc.Find("#history-panel").Length())

		doc = c.page200("/waterline/schedules/h/history?limit=50&after_sequence=50")
		require.Equal(t, 50, doc.Find(tid("history-event")).Length())
		require.Equal(t, "/waterline/schedules/h/history?after_sequence=100&limit=50", attrOf(t, doc.Find(tid("history-load-more")), "href"))

		for _, q := range []string{"limit=abc", "after_sequence=-1", "after_sequence=x"} {
			p := c.get("/waterline/schedules/h/history?" + q)
			require.Equal(t, http.StatusUnprocessableEntity, p.Status, q)
			require.Equal(t, 1, p.Doc.Find(tid("error-title")).Length())
		}
		require.Equal(t, http.StatusNotFound, c.get("/waterline/schedules/nope/history").Status)

		// A paused and deleted schedule's history stays readable.
		seeOther(t, c.post("/waterline/schedules/h/pause", url.Values{"reason": {"done with it"}}))
		seeOther(t, c.post("/waterline/schedules/h/delete", url.Values{"confirm": {"h"}}))
		p = c.get("/waterline/schedules/h/history?after_sequence=120", hx...)
		require.Equal(t, http.StatusOK, p.Status)
		events = p.Doc.Find(tid("history-event"))
		require.Equal(t, []string{"ScheduleTriggered", "SchedulePaused", "ScheduleDeleted"}, events.Find(tid("event-type")).Map(func(_ int, s *goquery.Selection) string { return s.Text() }))
		require.Equal(t, "reason: done with it", textOf(events.Eq(1).Find(tid("event-summary"))))
		require.Equal(t, "by ui · local", textOf(events.Eq(1).Find(tid("event-actor"))))
		require.Equal(t, "reason: deleted", textOf(events.Eq(2).Find(tid("event-summary"))))
	})
}

func TestConsoleRuns(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		doc := c.page200("/waterline/runs")
		require.Contains(t, textOf(doc.Find(tid("empty-state"))), "No runs yet")

		c.create("default", `{"schedule_id":"r","spec":{"cron_expressions":["0 * * * *"],"timezone":"America/New_York"},"action":{"workflow_type":"w","input":{"n":1}},"overlap_policy":"allow_all","queue":"fast"}`)
		first := c.api.must(200, "POST", v2+"/schedules/r/trigger", "")["run_id"].(string)
		c.api.clock.Advance(time.Second)
		second := c.api.must(200, "POST", v2+"/schedules/r/trigger", "")["run_id"].(string)

		doc = c.page200("/waterline/runs")
		require.Equal(t, "runs", doc.Find(`[aria-current="page"]`).AttrOr("data-testid", "")[len("nav-"):])
		rows := doc.Find(tid("run-row"))
		require.Equal(t, []string{second, first}, rows.Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-run-id", "") }), "newest first")
		require.Equal(t, "/waterline/schedules/r", attrOf(t, rows.First().Find(tid("run-schedule-link")), "href"))
		require.Equal(t, "/waterline/runs/"+second, attrOf(t, rows.First().Find(tid("run-link")), "href"))
		require.Equal(t, "pending", textOf(rows.First().Find(tid("status-badge"))))

		doc = c.page200("/waterline/runs?limit=1")
		require.Equal(t, 1, doc.Find(tid("run-row")).Length())
		doc = c.page200(attrOf(t, doc.Find(tid("next-page")), "href"))
		require.Equal(t, first, attrOf(t, doc.Find(tid("run-row")), "data-run-id"))
		require.Equal(t, "/waterline/runs?limit=1", attrOf(t, doc.Find(tid("first-page")), "href"))

		doc = c.page200("/waterline/runs?status=running")
		require.Contains(t, textOf(doc.Find(tid("empty-state"))), "No runs match these filters")
		require.Equal(t, "running", doc.Find(tid("filter-status")).Find("option[selected]").AttrOr("value", ""))
		require.Equal(t, 2, c.page200("/waterline/runs?schedule_id=r&status=pending").Find(tid("run-row")).Length())
		for _, q := range []string{"status=sleeping", "schedule_id=nope", "cursor=short", "limit=x"} {
			p := c.get("/waterline/runs?" + q)
			require.Equal(t, http.StatusUnprocessableEntity, p.Status, q)
			require.NotEmpty(t, textOf(p.Doc.Find(tid("flash"))), q)
		}

		// Run detail: provenance back to the schedule.
		doc = c.page200("/waterline/runs/" + first)
		require.Equal(t, first, textOf(doc.Find(tid("run-id"))))
		facts := doc.Find(tid("run-facts"))
		require.Equal(t, "/waterline/schedules/r", attrOf(t, facts.Find(tid("run-schedule-link")), "href"))
		require.Equal(t, "manual", textOf(facts.Find(tid("fact-trigger"))))
		require.Equal(t, "fast", textOf(facts.Find(tid("fact-queue"))))
		require.Equal(t, "2026-07-16 08:00 EDT 1 s ago", textOf(facts.Find(tid("fact-occurrence-time"))), "in the schedule's zone")
		require.Equal(t, "{\n  \"n\": 1\n}", doc.Find(tid("run-input")).Text())
		ev := doc.Find(tid("run-event"))
		require.Equal(t, 1, ev.Length())
		require.Equal(t, "ScheduleTriggered", textOf(ev.Find(tid("event-type"))))
		require.Equal(t, "/waterline/schedules/r", attrOf(t, ev.Find(tid("event-link")), "href"))
		require.Equal(t, "/waterline/runs/"+first+"/cancel", attrOf(t, doc.Find(tid("run-cancel-form")), "action"))
		require.Equal(t, 1, doc.Find(tid("run-terminate")).Length())

		// Cancel a pending run: nobody to ask, so it is cancelled at once.
		p := c.post("/waterline/runs/"+first+"/cancel", url.Values{})
		require.Equal(t, "/waterline/runs/"+first, seeOther(t, p))
		doc = c.page200("/waterline/runs/" + first)
		require.Equal(t, "Run cancelled: no worker had claimed it yet.", textOf(doc.Find(tid("flash"))))
		require.Equal(t, "cancelled", attrOf(t, doc.Find("h1 "+tid("status-badge")), "data-status"))
		require.Zero(t, doc.Find(tid("run-cancel-form")).Length())
		require.Zero(t, doc.Find(tid("run-terminate")).Length())

		// A running run: cancellation is requested, then it is terminated.
		polled := c.api.must(200, "POST", "/api/v2/worker/poll", `{"queue":"fast","worker_id":"go-1","lease_seconds":30}`)["runs"].([]any)
		require.Len(t, polled, 1)
		seeOther(t, c.post("/waterline/runs/"+second+"/cancel", url.Values{}))
		doc = c.page200("/waterline/runs/" + second)
		require.Equal(t, "Cancellation requested.", textOf(doc.Find(tid("flash"))))
		require.Equal(t, 1, doc.Find(tid("cancel-requested")).Length())
		require.Zero(t, doc.Find(tid("run-cancel-form")).Length())
		require.Equal(t, "go-1", textOf(doc.Find(tid("fact-worker"))))
		require.Equal(t, "2026-07-16 08:00 EDT in 30 s", textOf(doc.Find(tid("fact-lease-expires-at"))))

		seeOther(t, c.post("/waterline/runs/"+second+"/terminate", url.Values{"reason": {"stuck"}}))
		doc = c.page200("/waterline/runs/" + second)
		require.Equal(t, "Run terminated.", textOf(doc.Find(tid("flash"))))
		require.Equal(t, "terminated", attrOf(t, doc.Find("h1 "+tid("status-badge")), "data-status"))
		last := doc.Find(tid("run-event")).Last()
		require.Equal(t, "RunTerminated", textOf(last.Find(tid("event-type"))))
		require.Contains(t, textOf(last.Find(tid("event-summary"))), "stuck")

		// Too late now: an error flash, not an error page.
		seeOther(t, c.post("/waterline/runs/"+second+"/terminate", url.Values{}))
		require.True(t, c.page200("/waterline/runs/"+second).Find(tid("flash")).HasClass("flash-error"))

		require.Equal(t, http.StatusNotFound, c.get("/waterline/runs/01KXNR6R809X7XT0RFJDNTWDR2").Status)
		require.Equal(t, http.StatusNotFound, c.post("/waterline/runs/01KXNR6R809X7XT0RFJDNTWDR2/cancel", url.Values{}).Status)
	})
}

func TestConsoleNamespaces(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("team-a", `{"schedule_id":"theirs","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		c.create("default", `{"schedule_id":"mine","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		runID := c.api.must(200, "POST", v2+"/schedules/theirs/trigger", "", "X-Namespace", "team-a")["run_id"].(string)

		doc := c.page200("/waterline/schedules")
		require.Equal(t, []string{"mine"}, rowIDs(doc))
		// Local mode offers the namespaces that exist (issue 21: a switcher
		// for everyone allowed more than one), the current one selected.
		require.Equal(t, "default", textOf(doc.Find(tid("namespace"))))
		require.Equal(t, []string{"default", "team-a"},
			doc.Find(tid("namespace-switcher")).Find("option").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("value", "") }))
		require.Empty(t, c.page200("/waterline/runs").Find(tid("run-row")).Nodes)

		// Another namespace's schedule is absent, not forbidden.
		for _, req := range [][2]string{
			{"GET", "/schedules/theirs"}, {"GET", "/schedules/theirs/edit"}, {"POST", "/schedules/theirs/edit"},
			{"POST", "/schedules/theirs/pause"}, {"POST", "/schedules/theirs/resume"}, {"POST", "/schedules/theirs/trigger"},
			{"GET", "/schedules/theirs/delete"}, {"POST", "/schedules/theirs/delete"}, {"GET", "/schedules/theirs/backfill"},
			{"POST", "/schedules/theirs/backfill"}, {"GET", "/schedules/theirs/history"}, {"GET", "/runs/" + runID},
			{"POST", "/runs/" + runID + "/cancel"}, {"POST", "/runs/" + runID + "/terminate"},
		} {
			p := c.do(req[0], "/waterline"+req[1], url.Values{"confirm": {"theirs"}, "from": {"2026-07-01T00:00"}, "to": {"2026-07-02T00:00"}})
			require.Equal(t, http.StatusNotFound, p.Status, "%s %s", req[0], req[1])
		}
		require.Equal(t, "active", c.api.must(200, "GET", v2+"/schedules/theirs", "", "X-Namespace", "team-a")["status"])
		seeOther(t, c.post("/waterline/schedules/bulk", url.Values{"ids": {"theirs"}, "action": {"pause"}}))
		require.Contains(t, textOf(c.page200("/waterline/schedules").Find(tid("flash"))), "theirs (not found)")

		// ?namespace= shows that namespace, and the page's forms act in it.
		doc = c.page200("/waterline/schedules?namespace=team-a")
		require.Equal(t, []string{"theirs"}, rowIDs(doc))
		require.Equal(t, "team-a", textOf(doc.Find(tid("namespace"))))
		row := rowOf(doc, "theirs")
		require.Equal(t, "/waterline/schedules/theirs?namespace=team-a", attrOf(t, row.Find(tid("schedule-link")), "href"))
		action := attrOf(t, row.Find(tid("action-pause")).Find("form"), "action")
		require.Equal(t, "/waterline/schedules/theirs/pause?namespace=team-a", action)
		p := c.post(action, formValues(row.Find(tid("action-pause")).Find("form")))
		require.Equal(t, "/waterline/schedules?namespace=team-a", seeOther(t, p))
		require.Equal(t, "paused", c.api.must(200, "GET", v2+"/schedules/theirs", "", "X-Namespace", "team-a")["status"])
		require.Equal(t, "active", c.api.must(200, "GET", v2+"/schedules/mine", "")["status"])
		require.Equal(t, 1, c.page200("/waterline/runs/"+runID+"?namespace=team-a").Find(tid("run-id")).Length())

		// The switcher remembers the choice in a cookie.
		p = c.get("/waterline/namespace?namespace=team-a")
		require.Equal(t, "/waterline/schedules", seeOther(t, p))
		doc = c.page200("/waterline/schedules")
		require.Equal(t, []string{"theirs"}, rowIDs(doc))
		require.Equal(t, "/waterline/schedules/theirs", attrOf(t, rowOf(doc, "theirs").Find(tid("schedule-link")), "href"))
		seeOther(t, c.post("/waterline/schedules/theirs/resume", url.Values{}))
		require.Equal(t, "active", c.api.must(200, "GET", v2+"/schedules/theirs", "", "X-Namespace", "team-a")["status"])
		require.Equal(t, http.StatusNotFound, c.get("/waterline/schedules/mine").Status)

		require.Equal(t, http.StatusUnprocessableEntity, c.get("/waterline/namespace?namespace=Team+A").Status)
		require.Equal(t, http.StatusUnprocessableEntity, c.get("/waterline/schedules?namespace=Bad!").Status)
		require.Equal(t, []string{"mine"}, rowIDs(c.page200("/waterline/schedules?namespace=default")))

		// A server scoped to one namespace ignores both.
		scoped := newConsole(t, db, "team-a")
		require.Equal(t, []string{"theirs"}, rowIDs(scoped.page200("/waterline/schedules?namespace=default")))
		seeOther(t, scoped.get("/waterline/namespace?namespace=default"))
		require.Equal(t, []string{"theirs"}, rowIDs(scoped.page200("/waterline/schedules")))
		require.Equal(t, http.StatusNotFound, scoped.get("/waterline/schedules/mine?namespace=default").Status)
	})
}

func TestConsoleEscapesUserText(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const evil = `<script>alert("x")</script>`
		p := c.post("/waterline/schedules", url.Values{"schedule_id": {"esc"}, "cron_expressions": {"0 * * * *"},
			"workflow_type": {"w"}, "note": {evil}, "labels": {"tag=" + evil}, "memo": {"m=" + evil}, "input": {`{"html":"` + strings.ReplaceAll(evil, `"`, `\"`) + `"}`}})
		seeOther(t, p)

		check := func(path string, p page) {
			t.Helper()
			require.Equal(t, http.StatusOK, p.Status, path)
			require.NotContains(t, p.Raw, evil, path)
			require.Contains(t, p.Raw, "&lt;script&gt;", path)
			p.Doc.Find("script").Each(func(_ int, s *goquery.Selection) {
				require.NotEmpty(t, s.AttrOr("src", ""), "%s: only the static scripts", path)
				require.Empty(t, s.Text(), path)
			})
		}
		reg := c.get("/waterline/schedules")
		check("registry", reg)
		require.Equal(t, evil, textOf(rowOf(reg.Doc, "esc").Find(tid("schedule-note"))))
		require.Equal(t, "tag="+evil, textOf(rowOf(reg.Doc, "esc").Find(tid("chip"))))
		detail := c.get("/waterline/schedules/esc")
		check("detail", detail)
		require.Equal(t, evil, textOf(detail.Doc.Find(tid("fact-note"))))
		check("edit", c.get("/waterline/schedules/esc/edit"))
		check("history", c.get("/waterline/schedules/esc/history"))

		row := c.post("/waterline/schedules/esc/pause", url.Values{"reason": {evil}}, hx...)
		require.NotContains(t, row.Raw, evil)
		require.Equal(t, fmt.Sprintf("Paused esc: %s", evil), textOf(row.Doc.Find(tid("row-notice"))))
	})
}

func TestConsoleFollowsTheViewersRole(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	setup := newAPI(t, db, "")
	setup.must(201, "POST", v2+"/schedules", `{"schedule_id":"s1","cron":"0 * * * *","action":{"workflow_type":"w"}}`, "X-Namespace", "team-a")
	setup.must(201, "POST", v2+"/schedules", `{"schedule_id":"s2","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
	runID := setup.must(200, "POST", v2+"/schedules/s2/trigger", "")["run_id"].(string)

	// Real sign-in: tokens in a store, a POST to /waterline/login, and the
	// session cookie from then on.
	tokens := map[string]string{}
	var tokensDoc strings.Builder
	tokensDoc.WriteString("principals:\n")
	for _, p := range []struct{ name, role, namespaces string }{
		{"vera", "viewer", "[team-a, team-b]"}, {"olga", "operator", "[]"},
	} {
		token, hash, err := auth.NewToken()
		require.NoError(t, err)
		tokens[p.name] = token
		fmt.Fprintf(&tokensDoc, "  - {name: %s, role: %s, namespaces: %s, token_sha256: %s}\n", p.name, p.role, p.namespaces, hash)
	}
	store, err := auth.Parse([]byte(tokensDoc.String()))
	require.NoError(t, err)
	as := func(name string) *consoleClient {
		c := newConsole(t, db, "")
		c.api.h = web.NewServer(web.Deps{DB: db, Service: schedtest.Service(db, c.api.clock), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Version: "test", Clock: c.api.clock, Auth: web.Auth{Store: store}})
		require.Equal(t, "/waterline/schedules", seeOther(t, c.post("/waterline/login", url.Values{"token": {tokens[name]}, "next": {"/waterline/schedules"}})))
		return c
	}

	viewer := as("vera")
	doc := viewer.page200("/waterline/schedules")
	require.Zero(t, doc.Find(tid("banner")).Length(), "no local-mode banner when signed in with a token")
	require.Equal(t, 1, doc.Find(tid("logout")).Length())
	require.Equal(t, "vera", textOf(doc.Find(tid("user"))))
	require.Equal(t, "team-a", textOf(doc.Find(`[data-testid="namespace-switcher"] [data-testid="namespace"]`)), "the first namespace it may see")
	// The switcher is a GET form with a select (redesigned from links, issue 21).
	require.Equal(t, "/waterline/namespace", attrOf(t, doc.Find(tid("namespace-switcher")), "action"))
	require.Equal(t, []string{"team-a", "team-b"},
		doc.Find(tid("namespace-switcher")).Find("option").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("value", "") }))
	require.Equal(t, []string{"s1"}, rowIDs(doc))
	row := rowOf(doc, "s1")
	require.Zero(t, row.Find(tid("schedule-actions")).Find("form, details").Length(), "a viewer gets no actions")
	require.Equal(t, 1, row.Find(tid("action-history")).Length())
	require.Zero(t, row.Find(tid("action-edit")).Length())
	require.Zero(t, doc.Find(tid("new-schedule")).Length())
	require.Zero(t, doc.Find(tid("bulk-form")).Length())
	require.Zero(t, doc.Find(tid("bulk-select")).Length())
	require.Equal(t, http.StatusNotFound, viewer.get("/waterline/schedules?namespace=default").Status, "unbound namespaces are absent")
	require.Equal(t, http.StatusNotFound, viewer.get("/waterline/namespace?namespace=default").Status)
	require.Equal(t, http.StatusNotFound, viewer.get("/waterline/runs/"+runID).Status)
	require.Equal(t, "/waterline/schedules", seeOther(t, viewer.get("/waterline/namespace?namespace=team-b")))
	require.Equal(t, 1, viewer.page200("/waterline/schedules").Find(tid("empty-state")).Length())
	require.Zero(t, viewer.page200("/waterline/schedules").Find(tid("empty-create")).Length(), "no create button for a viewer")

	operator := as("olga")
	doc = operator.page200("/waterline/schedules")
	// Unbound, it may see every namespace: the switcher offers those that
	// exist (before issue 21 it offered none).
	require.Equal(t, []string{"default", "team-a"},
		doc.Find(tid("namespace-switcher")).Find("option").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("value", "") }))
	row = rowOf(doc, "s2")
	for _, action := range []string{"action-pause", "action-trigger", "action-backfill"} {
		require.Equal(t, 1, row.Find(tid(action)).Length(), action)
	}
	require.Zero(t, row.Find(tid("action-edit")).Length(), "editing is for admins")
	require.Zero(t, row.Find(tid("action-delete")).Length(), "deleting is for admins")
	require.Zero(t, doc.Find(tid("new-schedule")).Length())
	require.Equal(t, 1, doc.Find(tid("bulk-form")).Length())
	require.Equal(t, 1, operator.page200("/waterline/runs/"+runID).Find(tid("run-cancel-form")).Length())
	require.Zero(t, viewer.page200("/waterline/schedules?namespace=team-a").Find(tid("run-cancel-form")).Length())

	seeOther(t, operator.post("/waterline/schedules/s2/pause", url.Values{"reason": {"audit me"}}))
	events := setup.must(200, "GET", v2+"/schedules/s2/history", "")["events"].([]any)
	cc := events[len(events)-1].(map[string]any)["payload"].(map[string]any)["command_context"].(map[string]any)
	require.Equal(t, map[string]any{"source": "ui", "actor": "olga", "reason": "audit me", "request_id": cc["request_id"]}, cc)
}
