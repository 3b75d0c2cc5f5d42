package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// localRequest sends one request from this machine to a local-mode server,
// with the given Host and extra headers, through the real router.
func localRequest(f *apiFixture, method, path, host, contentType, body string, header ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = "127.0.0.1:40000"
	req.Host = host
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

func scheduleCount(t *testing.T, db *bun.DB) int {
	t.Helper()
	n, err := db.NewSelect().Table("workflow_schedules").Count(t.Context())
	require.NoError(t, err)
	return int(n)
}

// A web page the local user visits must not drive a local-mode server: the
// attacks of issue 16 replayed, each refused and changing nothing.
func TestLocalModeRefusesCrossSiteRequests(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"victim","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		const host = "127.0.0.1:8080"
		attacker := `{"schedule_id":"evil","cron":"* * * * *","action":{"workflow_type":"w","input":{"rm":"-rf"}}}`
		for _, tc := range []struct {
			name, method, path, contentType, body string
			header                                []string
		}{
			{"text/plain create from another site", "POST", v2 + "/schedules", "text/plain", attacker, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
			{"create with only a foreign Origin", "POST", v2 + "/schedules", "application/json", attacker, []string{"Origin", "https://evil.example"}},
			{"create with only Sec-Fetch-Site", "POST", v2 + "/schedules", "application/json", attacker, []string{"Sec-Fetch-Site", "cross-site"}},
			{"another port of localhost is same-site", "POST", v2 + "/schedules", "text/plain", attacker, []string{"Sec-Fetch-Site", "same-site", "Origin", "http://localhost:3000"}},
			{"null origin (sandboxed frame)", "POST", v2 + "/schedules", "text/plain", attacker, []string{"Origin", "null"}},
			{"trigger", "POST", v2 + "/schedules/victim/trigger", "text/plain", "", []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
			{"tick", "POST", v2 + "/tick", "text/plain", "", []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
			{"delete", "DELETE", v2 + "/schedules/victim", "", "", []string{"Origin", "https://evil.example"}},
			{"console pause form", "POST", "/waterline/schedules/victim/pause", "application/x-www-form-urlencoded", "reason=pwned", []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}},
		} {
			rec := localRequest(f, tc.method, tc.path, host, tc.contentType, tc.body, tc.header...)
			require.Equal(t, http.StatusForbidden, rec.Code, "%s: %s", tc.name, rec.Body.String())
			if strings.Contains(tc.path, "/api/") {
				require.Contains(t, rec.Body.String(), `"code":"forbidden"`, tc.name)
			}
		}
		require.Equal(t, 1, scheduleCount(t, db), "no schedule was created")
		got := f.must(200, "GET", v2+"/schedules/victim", "")
		require.Equal(t, "active", got["status"], "the victim was neither paused nor deleted")
		require.EqualValues(t, 0, got["fires_count"], "nor triggered")

		// Our own pages and non-browser clients keep working.
		rec := localRequest(f, "POST", v2+"/schedules/victim/pause", host, "application/json", `{"reason":"own page"}`,
			"Sec-Fetch-Site", "same-origin", "Origin", "http://"+host)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		rec = localRequest(f, "POST", v2+"/schedules/victim/resume", host, "application/json", "") // curl, CLI, SDKs
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		rec = localRequest(f, "GET", v2+"/schedules", host, "", "", "Sec-Fetch-Site", "cross-site") // a read cannot be seen by the other site
		require.Equal(t, http.StatusOK, rec.Code)
	})
}

// DNS rebinding: the attacker's name resolves to 127.0.0.1, so the browser
// connects from loopback but says Host: evil.example. Nothing is served.
func TestLocalModeRefusesRebindingHosts(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"victim","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		sameOrigin := []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://evil.example:8080"}
		for _, tc := range []struct{ method, path, contentType, body string }{
			{"GET", v2 + "/schedules", "", ""},
			{"DELETE", v2 + "/schedules/victim", "", ""},
			{"POST", "/waterline/schedules/victim/pause", "application/x-www-form-urlencoded", "reason=pwned"},
			{"GET", "/waterline/schedules", "", ""},
		} {
			rec := localRequest(f, tc.method, tc.path, "evil.example:8080", tc.contentType, tc.body, sameOrigin...)
			require.Equal(t, http.StatusMisdirectedRequest, rec.Code, "%s %s: %s", tc.method, tc.path, rec.Body.String())
			if strings.Contains(tc.path, "/api/") {
				require.Contains(t, rec.Header().Get("Content-Type"), "application/json")
				require.Contains(t, rec.Body.String(), `"code":"misdirected_request"`)
			}
		}
		got := f.must(200, "GET", v2+"/schedules/victim", "")
		require.Equal(t, "active", got["status"])

		for host, want := range map[string]int{
			"127.0.0.1:8080": 200, "127.0.0.1": 200, "127.8.9.10:1": 200, "localhost": 200, "LOCALHOST:8080": 200,
			"[::1]:8080": 200, "[::1]": 200,
			"evil.example": 421, "localhost.evil.example": 421, "127.0.0.1.nip.io": 421, "10.0.0.1:8080": 421,
			"[::2]:8080": 421, "": 421, "0.0.0.0:8080": 421,
		} {
			rec := localRequest(f, "GET", v2+"/schedules?namespace="+url.QueryEscape("default"), host, "", "")
			require.Equal(t, want, rec.Code, "Host %q", host)
		}
	})
}

// Every path that compiles a spec (create, update, API and console preview)
// refuses one over the bounds, before any work is done.
func TestSpecBoundsOnEverySurface(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		crons := make([]string, 65)
		for i := range crons {
			crons[i] = fmt.Sprintf(`"%d * * * *"`, i%60)
		}
		tooMany := `{"cron_expressions":[` + strings.Join(crons, ",") + `]}`
		tooLong := `{"cron_expressions":["0` + strings.Repeat(",0", 130) + ` * * * *"]}`
		for _, spec := range []string{tooMany, tooLong} {
			_, fields := errorOf(t, f.must(422, "POST", v2+"/schedules", `{"schedule_id":"big","spec":`+spec+`,"action":{"workflow_type":"w"}}`))
			require.NotEmpty(t, fields, "create")
			_, fields = errorOf(t, f.must(422, "POST", v2+"/schedules/preview", `{"spec":`+spec+`}`))
			require.NotEmpty(t, fields, "preview")
		}
		require.Equal(t, 0, scheduleCount(t, db))
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"s","cron":"0 * * * *","action":{"workflow_type":"w"}}`)
		_, fields := errorOf(t, f.must(422, "PATCH", v2+"/schedules/s", `{"spec":`+tooMany+`}`))
		require.Contains(t, fields["spec.cron_expressions"], "at most 64 cron expressions and intervals together")
		_, fields = errorOf(t, f.must(422, "PATCH", v2+"/schedules/s", `{"spec":`+tooLong+`}`))
		require.Equal(t, "is longer than 256 characters", fields["spec.cron_expressions[0]"])
		got := f.must(200, "GET", v2+"/schedules/s", "")
		require.Equal(t, []any{"0 * * * *"}, got["spec"].(map[string]any)["cron_expressions"], "the spec is unchanged")
		_, fields = errorOf(t, f.must(422, "POST", v2+"/schedules/preview", `{"spec":{"cron_expressions":["* * * * *"]},"count":101}`))
		require.Equal(t, "must be between 1 and 100", fields["count"])

		// The console's live preview goes through the same rule.
		c := newConsole(t, db, "")
		lines := make([]string, 65)
		for i := range lines {
			lines[i] = "0 * * * *"
		}
		p := c.post("/waterline/schedules/preview", url.Values{"cron_expressions": {strings.Join(lines, "\n")}, "timezone": {"UTC"}})
		require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
		require.Contains(t, p.Raw, "at most 64 cron expressions and intervals together")
	})
}
