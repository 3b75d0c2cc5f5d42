package web_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// securedServer runs the real router with one token per role, plus an
// operator bound to namespace team-a.
type securedServer struct {
	*apiFixture
	tokens map[string]string
}

func newSecured(t *testing.T, db *bun.DB) *securedServer {
	t.Helper()
	tokens := map[string]string{}
	var doc strings.Builder
	doc.WriteString("principals:\n")
	for _, p := range []struct{ name, role, ns string }{
		{"viewer", "viewer", "[]"}, {"operator", "operator", "[]"}, {"admin", "admin", "[]"},
		{"worker", "worker", "[]"}, {"team-a-op", "operator", "[team-a]"},
	} {
		token, hash, err := auth.NewToken()
		require.NoError(t, err)
		tokens[p.name] = token
		fmt.Fprintf(&doc, "  - {name: %s, role: %s, namespaces: %s, token_sha256: %s}\n", p.name, p.role, p.ns, hash)
	}
	store, err := auth.Parse([]byte(doc.String()))
	require.NoError(t, err)
	sessions, err := auth.NewSessions("test-secret-of-sixteen", time.Hour)
	require.NoError(t, err)
	clock := schedtest.NewClock(t0)
	h := web.NewServer(web.Deps{DB: db, Service: schedtest.Service(db, clock), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version: "test", Clock: clock, Auth: web.Auth{Store: store, Sessions: sessions}})
	return &securedServer{apiFixture: &apiFixture{t: t, db: db, clock: clock, h: h}, tokens: tokens}
}

func (s *securedServer) as(role string) []string {
	return []string{"Authorization", "Bearer " + s.tokens[role]}
}

// apiPermissions is the contract of CONTRACT §9, written independently of
// routes.go: every API route and the role it needs.
var apiPermissions = map[string]string{
	"GET /schedules":                                  "read",
	"POST /schedules":                                 "admin",
	"POST /schedules/preview":                         "read",
	"GET /schedules/:schedule_id":                     "read",
	"PATCH /schedules/:schedule_id":                   "admin",
	"DELETE /schedules/:schedule_id":                  "admin",
	"POST /schedules/:schedule_id/pause":              "operate",
	"POST /schedules/:schedule_id/resume":             "operate",
	"POST /schedules/:schedule_id/trigger":            "operate",
	"POST /schedules/:schedule_id/backfill":           "operate",
	"GET /schedules/:schedule_id/history":             "read",
	"GET /schedules/:schedule_id/occurrences":         "read",
	"GET /schedules/:schedule_id/runs":                "read",
	"GET /schedules/:schedule_id/versions":            "read",
	"GET /schedules/:schedule_id/versions/diff":       "read",
	"GET /schedules/:schedule_id/versions/:n":         "read",
	"POST /schedules/:schedule_id/versions/:n/revert": "admin",
	"GET /runs":                                      "read",
	"GET /runs/:run_id":                              "read",
	"POST /runs/:run_id/cancel":                      "operate",
	"POST /runs/:run_id/terminate":                   "operate",
	"POST /runs/:run_id/retry":                       "operate",
	"POST /runs/:run_id/again":                       "operate",
	"POST /runs/retry":                               "operate",
	"POST /tick":                                     "admin",
	"POST /worker/poll":                              "work",
	"POST /worker/runs/:run_id/heartbeat":            "work",
	"POST /worker/runs/:run_id/complete":             "work",
	"POST /worker/runs/:run_id/fail":                 "work",
	"GET /notifiers":                                 "admin",
	"POST /notifiers":                                "admin",
	"GET /notifiers/:name":                           "admin",
	"PATCH /notifiers/:name":                         "admin",
	"DELETE /notifiers/:name":                        "admin",
	"POST /notifiers/:name/test":                     "admin",
	"POST /notifiers/:name/redeliver":                "admin",
	"POST /notifiers/:name/deliveries/:id/redeliver": "admin",
	"GET /notifiers/:name/deliveries":                "admin",
	"GET /notifiers/:name/history":                   "admin",
	"GET /calendars":                                 "read",
	"POST /calendars":                                "admin",
	"GET /calendars/:name":                           "read",
	"PATCH /calendars/:name":                         "admin",
	"DELETE /calendars/:name":                        "admin",
	"POST /calendars/:name/impact":                   "read",
	"GET /calendars/:name/history":                   "read",
	"GET /backfills":                                 "read",
	"GET /backfills/:backfill_id":                    "read",
	"POST /backfills/:backfill_id/pause":             "operate",
	"POST /backfills/:backfill_id/resume":            "operate",
	"POST /backfills/:backfill_id/cancel":            "operate",
}

var roleGrants = map[string]map[string]bool{
	"viewer":   {"read": true},
	"operator": {"read": true, "operate": true},
	"admin":    {"read": true, "operate": true, "admin": true, "work": true},
	"worker":   {"work": true},
}

func TestRoleRouteMatrix(t *testing.T) {
	t.Parallel()
	s := newSecured(t, dbtest.SQLite(t))
	s.must(201, "POST", v2+"/schedules", `{"schedule_id":"m","cron":"0 * * * *","action":{"workflow_type":"w"}}`, s.as("admin")...)

	covered := map[string]bool{}
	for _, r := range s.h.(*echo.Echo).Routes() {
		path, ok := strings.CutPrefix(r.Path, v2)
		if !ok || path == "/openapi.json" || r.Method == echo.RouteNotFound {
			continue
		}
		key := r.Method + " " + path
		perm, known := apiPermissions[key]
		require.True(t, known, "route %s has no expected permission in this test: add it", key)
		covered[key] = true
		url := v2 + strings.NewReplacer(":schedule_id", "m", ":run_id", "01KXNR6R809X7XT0RFJDNTWDR2", ":name", "none", ":backfill_id", "01KXNR6R809X7XT0RFJDNTWDR2").Replace(path)
		for role, grants := range roleGrants {
			res := s.do(r.Method, url, "", s.as(role)...)
			if grants[perm] {
				require.NotContains(t, []int{401, 403}, res.Status, "%s as %s: %s", key, role, res.Raw)
			} else {
				require.Equal(t, http.StatusForbidden, res.Status, "%s as %s must be refused: %s", key, role, res.Raw)
			}
		}
		res := s.do(r.Method, url, "")
		require.Equal(t, http.StatusUnauthorized, res.Status, "%s without a token", key)
		require.Equal(t, `Bearer realm="tideline"`, res.Header.Get("WWW-Authenticate"))
		res = s.do(r.Method, url, "", "Authorization", "Bearer not-a-token")
		require.Equal(t, http.StatusUnauthorized, res.Status, "%s with a bad token", key)
	}
	require.Len(t, covered, len(apiPermissions), "every expected route exists")
}

func TestNamespaceBoundTokenSeesNothingElsewhere(t *testing.T) {
	t.Parallel()
	s := newSecured(t, dbtest.SQLite(t))
	s.must(201, "POST", v2+"/schedules", `{"schedule_id":"a1","cron":"0 * * * *","action":{"workflow_type":"w"}}`, append(s.as("admin"), "X-Namespace", "team-a")...)
	s.must(201, "POST", v2+"/schedules", `{"schedule_id":"b1","cron":"0 * * * *","action":{"workflow_type":"w"}}`, append(s.as("admin"), "X-Namespace", "team-b")...)

	bound := s.as("team-a-op")
	list := s.must(200, "GET", v2+"/schedules", "", bound...)
	require.Len(t, list["schedules"], 1, "its only namespace is the default")
	require.Equal(t, "a1", list["schedules"].([]any)[0].(map[string]any)["schedule_id"])
	s.must(200, "POST", v2+"/schedules/a1/pause", "", bound...)
	for _, path := range []string{"/schedules/b1", "/schedules/b1/history", "/schedules"} {
		res := s.do("GET", v2+path, "", append(bound, "X-Namespace", "team-b")...)
		require.Equal(t, http.StatusNotFound, res.Status, "%s in team-b: %s", path, res.Raw)
	}
	require.Equal(t, http.StatusNotFound, s.do("POST", v2+"/schedules/b1/trigger", "", append(bound, "X-Namespace", "team-b")...).Status)
	require.Equal(t, http.StatusForbidden, s.do("POST", v2+"/tick", "", s.as("team-a-op")...).Status, "operators may not tick")
}

func TestLocalModeServesLoopbackOnly(t *testing.T) {
	t.Parallel()
	f := newAPI(t, dbtest.SQLite(t), "")
	for _, path := range []string{v2 + "/schedules", "/waterline/schedules", "/api/v2/worker/poll"} {
		method := "GET"
		if strings.Contains(path, "worker") {
			method = "POST"
		}
		req := httptest.NewRequest(method, path, nil)
		req.RemoteAddr = "203.0.113.9:5555"
		req.Header.Set("X-Forwarded-For", "127.0.0.1") // a forged header changes nothing
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusForbidden, rec.Code, path)
	}
	doc := newConsole(t, f.db, "").page200("/waterline/schedules")
	require.Contains(t, textOf(doc.Find(tid("banner"))), "Local mode")
}

func TestConsoleLoginSessionsAndCSRF(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	s := newSecured(t, db)
	s.must(201, "POST", v2+"/schedules", `{"schedule_id":"c1","cron":"0 * * * *","action":{"workflow_type":"w"}}`, s.as("admin")...)
	c := newConsole(t, db, "")
	c.api = s.apiFixture

	// Anonymous: pages redirect to the login page, posts are refused.
	require.Equal(t, "/waterline/login?next=%2Fwaterline%2Fschedules%2Fc1", seeOther(t, c.get("/waterline/schedules/c1")))
	require.Equal(t, http.StatusUnauthorized, c.post("/waterline/schedules/c1/pause", nil).Status)
	res := c.get("/waterline/schedules", hx...)
	require.Equal(t, http.StatusUnauthorized, res.Status)
	require.Equal(t, "/waterline/login?next=%2Fwaterline%2Fschedules", res.Header.Get("HX-Redirect"))

	// A wrong token, a worker token, then the operator's.
	require.Equal(t, http.StatusUnauthorized, c.post("/waterline/login", url.Values{"token": {"nope"}}).Status)
	require.Equal(t, http.StatusForbidden, c.post("/waterline/login", url.Values{"token": {s.tokens["worker"]}}).Status)
	planted := c.cookie("tideline_session")
	require.Empty(t, planted)
	require.Equal(t, "/waterline/schedules/c1", seeOther(t, c.post("/waterline/login", url.Values{"token": {s.tokens["operator"]}, "next": {"/waterline/schedules/c1"}})))
	session := c.cookie("tideline_session")
	require.NotEmpty(t, session)
	require.Equal(t, "operator", textOf(c.page200("/waterline/schedules/c1").Find(tid("user"))))
	require.Equal(t, "/waterline/schedules", seeOther(t, c.post("/waterline/login", url.Values{"token": {s.tokens["operator"]}, "next": {"https://evil.example/"}})), "never redirects off-site")
	require.NotEqual(t, session, c.cookie("tideline_session"), "each login issues a fresh session")

	// CSRF: the same post without the token is refused and changes nothing.
	c.noCSRF = true
	require.Equal(t, http.StatusForbidden, c.post("/waterline/schedules/c1/pause", url.Values{"reason": {"forged"}}).Status)
	require.Equal(t, "active", s.must(200, "GET", v2+"/schedules/c1", "", s.as("viewer")...)["status"])
	c.noCSRF = false
	seeOther(t, c.post("/waterline/schedules/c1/pause", url.Values{"reason": {"real"}}))
	require.Equal(t, "paused", s.must(200, "GET", v2+"/schedules/c1", "", s.as("viewer")...)["status"])
	require.Equal(t, http.StatusForbidden, c.post("/waterline/schedules/c1/delete", url.Values{"confirm": {"c1"}}).Status, "operators may not delete")

	// Sessions end: after the TTL the cookie is worthless.
	s.clock.Advance(61 * time.Minute)
	require.Equal(t, http.StatusSeeOther, c.get("/waterline/schedules").Status)

	// Logout clears the cookie.
	s.clock.Set(t0)
	seeOther(t, c.post("/waterline/login", url.Values{"token": {s.tokens["viewer"]}}))
	require.Equal(t, "/waterline/login", seeOther(t, c.post("/waterline/logout", nil)))
	require.Empty(t, c.cookie("tideline_session"))
}

func TestLoginAttemptsAreRateLimited(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	s := newSecured(t, db)
	c := newConsole(t, db, "")
	c.api = s.apiFixture
	var statuses []int
	for range 7 {
		statuses = append(statuses, c.post("/waterline/login", url.Values{"token": {"guess"}}).Status)
	}
	require.Equal(t, []int{401, 401, 401, 401, 401, 429, 429}, statuses, "a burst of 5, then refused")
	require.Equal(t, http.StatusTooManyRequests, c.post("/waterline/login", url.Values{"token": {s.tokens["admin"]}}).Status,
		"even the right token waits: guessing must not be cheaper than waiting")
}
