package web_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/metrics"
	"github.com/tidelinehq/tideline/web"
)

// lastCommandContext is the command_context of a schedule's newest event.
func lastCommandContext(t *testing.T, f *apiFixture, id string) map[string]any {
	t.Helper()
	h := f.must(200, "GET", v2+"/schedules/"+id+"/history", "")
	events := h["events"].([]any)
	last := events[len(events)-1].(map[string]any)
	cc, _ := last["payload"].(map[string]any)["command_context"].(map[string]any)
	return cc
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// A caller's X-Request-Id is kept only when it is a short token; anything
// else (huge, forged with spaces or line breaks) is replaced before it
// reaches the logs or the audit stream.
func TestRequestIDIsAcceptedOnlyWhenWellFormed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"s","cron":"0 * * * *","action":{"workflow_type":"w"}}`)

		good := "trace-01.A_b:c"
		res := f.do("POST", v2+"/schedules/s/pause", `{}`, "X-Request-Id", good)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		require.Equal(t, good, res.Header.Get("X-Request-Id"))
		require.Equal(t, good, lastCommandContext(t, f, "s")["request_id"])

		for name, bad := range map[string]string{
			"500,000 characters": strings.Repeat("a", 500_000),
			"65 characters":      strings.Repeat("b", 65),
			"spaces":             "admin did it",
			"quotes and slashes": `x"/../y`,
		} {
			res := f.do("POST", v2+"/schedules/s/resume", `{}`, "X-Request-Id", bad)
			require.Equal(t, http.StatusOK, res.Status, name)
			id := res.Header.Get("X-Request-Id")
			require.Regexp(t, generatedID, id, name)
			require.Equal(t, id, lastCommandContext(t, f, "s")["request_id"], "%s: the generated ID is stored, not the caller's", name)
			f.must(200, "POST", v2+"/schedules/s/pause", `{}`)
		}
		require.Regexp(t, generatedID, f.do("GET", "/healthz", "").Header.Get("X-Request-Id"), "an absent ID is generated")
	})
}

// Reasons reach the audit stream and the run history: at most 4,096
// characters, checked by the service for every surface.
func TestReasonsAreBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"s","cron":"0 * * * *","overlap_policy":"allow_all","action":{"workflow_type":"w"}}`)
		tooLong := strings.Repeat("é", 4097) // characters, not bytes
		for _, action := range []string{"cancel", "terminate"} {
			f.clock.Advance(time.Second) // manual instance IDs are named by the millisecond
			trig := f.must(200, "POST", v2+"/schedules/s/trigger", `{}`)
			run, _ := trig["run_id"].(string)
			require.NotEmpty(t, run, "%v", trig)
			_, fields := errorOf(t, f.must(422, "POST", v2+"/runs/"+run+"/"+action, fmt.Sprintf(`{"reason":%q}`, tooLong)))
			require.Equal(t, "must be at most 4096 characters", fields["reason"], action)
			got := f.must(200, "GET", v2+"/runs/"+run, "")
			require.Equal(t, "pending", got["status"], "%s: a refused reason changes nothing", action)
			f.must(200, "POST", v2+"/runs/"+run+"/"+action, fmt.Sprintf(`{"reason":%q}`, tooLong[:len(tooLong)-2]))
		}
	})
}

// Headers beyond 64 KiB are refused by the HTTP server itself (431), so a
// header cannot grow logs or memory; ordinary ones pass.
func TestHTTPServerBoundsHeaderSize(t *testing.T) {
	t.Parallel()
	h := web.NewServer(web.Deps{DB: dbtest.SQLite(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test"})
	ts := httptest.NewUnstartedServer(h)
	ts.Config = web.NewHTTPServer(h)
	ts.Start()
	t.Cleanup(ts.Close)
	require.Equal(t, 64<<10, ts.Config.MaxHeaderBytes)
	send := func(size int) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/healthz", nil)
		require.NoError(t, err)
		req.Header.Set("X-Padding", strings.Repeat("p", size))
		res, err := ts.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		return res.StatusCode
	}
	require.Equal(t, http.StatusOK, send(16<<10))
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, send(100<<10))
}

// A lease is held by the token that polled and the worker_id it named:
// heartbeat, complete and fail must name the worker, and neither another
// token naming the same worker nor another worker of the same token may act.
func TestWorkerLeaseIsBoundToPrincipalAndWorker(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		s := newSecured(t, db)
		s.must(201, "POST", v2+"/schedules", `{"schedule_id":"w","cron":"0 * * * *","action":{"workflow_type":"w"}}`, s.as("admin")...)
		s.must(200, "POST", v2+"/schedules/w/trigger", "", s.as("operator")...)
		polled := s.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w-a"}`, s.as("worker")...)
		runs := polled["runs"].([]any)
		require.Len(t, runs, 1)
		run := runs[0].(map[string]any)["run_id"].(string)
		for _, action := range []string{"heartbeat", "complete", "fail"} {
			body := `{"message":"x"}`
			if action != "fail" {
				body = `{}`
			}
			_, fields := errorOf(t, s.must(422, "POST", v2+"/worker/runs/"+run+"/"+action, body, s.as("worker")...))
			require.Contains(t, fields["worker_id"], "is required", action)
		}
		for name, tc := range map[string]struct{ role, worker string }{
			"another token, same worker_id": {"admin", "w-a"},
			"same token, another worker_id": {"worker", "w-b"},
		} {
			code, _ := errorOf(t, s.must(409, "POST", v2+"/worker/runs/"+run+"/complete", `{"worker_id":"`+tc.worker+`"}`, s.as(tc.role)...))
			require.Equal(t, "run_held_by_another_worker", code, name)
		}
		require.Equal(t, "running", s.must(200, "GET", v2+"/runs/"+run, "", s.as("viewer")...)["status"])
		s.must(200, "POST", v2+"/worker/runs/"+run+"/heartbeat", `{"worker_id":"w-a"}`, s.as("worker")...)
		done := s.must(200, "POST", v2+"/worker/runs/"+run+"/complete", `{"worker_id":"w-a","output":{"ok":true}}`, s.as("worker")...)
		require.Equal(t, "completed", done["status"])
	})
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	s := newSecured(t, dbtest.SQLite(t))
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		require.Equal(t, http.StatusOK, s.do("GET", v2+"/schedules", "", "Authorization", scheme+" "+s.tokens["viewer"]).Status, scheme)
	}
	for _, bad := range []string{"Basic " + s.tokens["viewer"], "Bearer", "Bearer  ", s.tokens["viewer"], "Bearerx " + s.tokens["viewer"]} {
		require.Equal(t, http.StatusUnauthorized, s.do("GET", v2+"/schedules", "", "Authorization", bad).Status, bad)
	}
}

// Static assets are files only; every other response is no-store, and HSTS
// is sent when (and only when) the request came over TLS.
func TestResponseHeadersAndStaticFiles(t *testing.T) {
	t.Parallel()
	s := newSecured(t, dbtest.SQLite(t))
	for _, path := range []string{"/static/", "/static", "/static/.", "/static/nope.css"} {
		res := s.do("GET", path, "")
		require.Equal(t, http.StatusNotFound, res.Status, path)
		require.NotContains(t, res.Raw, `href="console.js"`, "%s lists no directory", path)
	}
	res := s.do("GET", "/static/tideline.css", "")
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, "public, max-age=3600", res.Header.Get("Cache-Control"))

	for _, path := range []string{v2 + "/schedules", "/waterline/login", "/healthz"} {
		res := s.do("GET", path, "", s.as("viewer")...)
		require.Equal(t, "no-store", res.Header.Get("Cache-Control"), path)
		require.Empty(t, res.Header.Get("Strict-Transport-Security"), "%s: no HSTS over plain HTTP", path)
	}
	// Behind a trusted proxy that terminated TLS, and on a TLS server.
	doc, _ := tokensDoc(t, "op")
	proxied := replica(t, s.db, doc, true)
	require.Equal(t, "max-age=31536000", proxied.do("GET", "/healthz", "", "X-Forwarded-Proto", "https").Header.Get("Strict-Transport-Security"))
	require.Empty(t, proxied.do("GET", "/healthz", "", "X-Forwarded-Proto", "http").Header.Get("Strict-Transport-Security"))
	require.Empty(t, s.do("GET", "/healthz", "", "X-Forwarded-Proto", "https").Header.Get("Strict-Transport-Security"), "an untrusted header changes nothing")
	store, err := auth.Parse([]byte(doc))
	require.NoError(t, err)
	tls := web.NewServer(web.Deps{DB: s.db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test",
		Auth: web.Auth{Store: store, SecureCookies: true}})
	rec := httptest.NewRecorder()
	tls.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	require.Equal(t, "max-age=31536000", rec.Header().Get("Strict-Transport-Security"))
}

// /metrics counts every namespace: principals bound to some may not read it.
func TestMetricsOnlyForUnboundPrincipals(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	tokens := map[string]string{}
	var doc strings.Builder
	doc.WriteString("principals:\n")
	for _, p := range []struct{ name, ns string }{{"global", "[]"}, {"star", `["*"]`}, {"bound", "[team-a]"}} {
		token, hash, err := auth.NewToken()
		require.NoError(t, err)
		tokens[p.name] = token
		fmt.Fprintf(&doc, "  - {name: %s, role: viewer, namespaces: %s, token_sha256: %s}\n", p.name, p.ns, hash)
	}
	store, err := auth.Parse([]byte(doc.String()))
	require.NoError(t, err)
	h := web.NewServer(web.Deps{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test",
		Metrics: metrics.New(db), Auth: web.Auth{Store: store}})
	f := &apiFixture{t: t, db: db, h: h}
	require.Equal(t, http.StatusOK, f.do("GET", "/metrics", "", "Authorization", "Bearer "+tokens["global"]).Status)
	require.Equal(t, http.StatusOK, f.do("GET", "/metrics", "", "Authorization", "Bearer "+tokens["star"]).Status)
	res := f.do("GET", "/metrics", "", "Authorization", "Bearer "+tokens["bound"])
	require.Equal(t, http.StatusForbidden, res.Status)
	require.NotContains(t, res.Raw, "tideline_runs")
	require.Equal(t, http.StatusUnauthorized, f.do("GET", "/metrics", "").Status)
}

// /readyz commits a write (at most every 5 s): a database that answers
// pings but refuses writes — a full disk, simulated by a trigger that fails
// every write to the probe table — is not ready, and ready again after.
func TestReadyzReportsFailingWrites(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		ready := func() response { return f.do("GET", "/readyz", "") }
		require.Equal(t, http.StatusOK, ready().Status)

		var breakWrites, fixWrites []string
		if db.Dialect().Name().String() == "pg" {
			breakWrites = []string{
				`CREATE FUNCTION fail_probe() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device'; END $$ LANGUAGE plpgsql`,
				`CREATE TRIGGER fail_probe BEFORE INSERT OR UPDATE ON tideline_write_probe FOR EACH ROW EXECUTE FUNCTION fail_probe()`,
			}
			fixWrites = []string{`DROP TRIGGER fail_probe ON tideline_write_probe`}
		} else {
			breakWrites = []string{
				`CREATE TRIGGER fail_probe_i BEFORE INSERT ON tideline_write_probe BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
				`CREATE TRIGGER fail_probe_u BEFORE UPDATE ON tideline_write_probe BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
			}
			fixWrites = []string{`DROP TRIGGER fail_probe_i`, `DROP TRIGGER fail_probe_u`}
		}
		for _, q := range breakWrites {
			_, err := db.ExecContext(t.Context(), q)
			require.NoError(t, err)
		}
		require.Equal(t, http.StatusOK, ready().Status, "within 5 s the last outcome is reused: no write per probe")
		f.clock.Advance(5 * time.Second)
		res := ready()
		require.Equal(t, http.StatusServiceUnavailable, res.Status)
		require.JSONEq(t, `{"status":"unavailable","reason":"database refuses writes"}`, res.Raw)

		for _, q := range fixWrites {
			_, err := db.ExecContext(t.Context(), q)
			require.NoError(t, err)
		}
		require.Equal(t, http.StatusServiceUnavailable, ready().Status, "still the cached failure")
		f.clock.Advance(5 * time.Second)
		require.Equal(t, http.StatusOK, ready().Status, "writes work again")
	})
}

// The body limit is 1 MiB exactly, as documented.
func TestBodyLimitIsOneMiB(t *testing.T) {
	t.Parallel()
	f := newAPI(t, dbtest.SQLite(t), "")
	body := func(n int) string {
		prefix := `{"spec":{"cron_expressions":["0 * * * *"]},"after":"2026-07-16T00:00:00Z","count":1`
		return prefix + strings.Repeat(" ", n-len(prefix)-1) + "}"
	}
	require.Equal(t, http.StatusOK, f.do("POST", v2+"/schedules/preview", body(1<<20)).Status, "1,048,576 bytes pass")
	res := f.do("POST", v2+"/schedules/preview", body(1<<20+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, res.Status, "1,048,577 bytes do not")
	require.Contains(t, res.Raw, "1 MiB")
}
