package web_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/metrics"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// The target through the real router: field-level 422s, the secret never
// answered (create, get, PATCH, history), and the run's attempts with the
// target's HTTP status.
func TestAPIHTTPTarget(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		clock := schedtest.NewClock(t0)
		svc := scheduling.New(scheduling.Config{DB: db, Clock: clock, Rand: schedtest.Rand{}, Logger: slog.New(slog.DiscardHandler),
			Targets: scheduling.TargetConfig{AllowPrivate: true}})
		m := metrics.New(db) // wired as serve wires it
		svc.ObserveTargets(m.ObserveTargetAttempt)
		m.ObserveTargetPool(svc.TargetPool())
		f := &apiFixture{t: t, db: db, clock: clock, h: web.NewServer(web.Deps{DB: db, Service: svc,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test", Clock: clock, Metrics: m})}
		rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusAccepted)
		}))
		t.Cleanup(rx.Close)
		const secret = "api-secret-0123456789"
		base := v2 + "/schedules"

		res := f.do("POST", base, `{"schedule_id":"bad","spec":{"cron_expressions":["0 0 1 1 *"]},"action":{"workflow_type":"t",
			"target":{"kind":"http","url":"gopher://x","method":"GET","timeout_seconds":0,"headers":{"Authorization":"x"}}}}`)
		require.Equal(t, http.StatusUnprocessableEntity, res.Status, res.Raw)
		_, fields := errorOf(t, res.Body)
		for _, k := range []string{"action.target.url", "action.target.method", "action.target.timeout_seconds", "action.target.headers"} {
			require.Contains(t, fields, k, res.Raw)
		}
		res = f.do("POST", base, `{"schedule_id":"bad","spec":{"cron_expressions":["0 0 1 1 *"]},"action":{"workflow_type":"t","target":{"kind":"http","url":"https://x.example.com","bogus":1}}}`)
		require.Equal(t, http.StatusBadRequest, res.Status, "unknown keys are refused: %s", res.Raw)

		body := `{"schedule_id":"hook","spec":{"cron_expressions":["0 0 1 1 *"]},"action":{"workflow_type":"t",
			"target":{"kind":"http","url":"` + rx.URL + `/run","secret":"` + secret + `","headers":{"x-team":"a"}}}}`
		res = f.do("POST", base, body)
		require.Equal(t, http.StatusCreated, res.Status, res.Raw)
		require.NotContains(t, res.Raw, secret)
		target := res.Body["action"].(map[string]any)["target"].(map[string]any)
		require.Equal(t, map[string]any{"kind": "http", "url": rx.URL + "/run", "method": "POST", "timeout_seconds": float64(30),
			"headers": map[string]any{"X-Team": "a"}, "secret_set": true}, target)

		res = f.do("PATCH", base+"/hook", `{"action":{"workflow_type":"t","target":{"kind":"http","url":"`+rx.URL+`/v2"}}}`)
		require.Equal(t, http.StatusOK, res.Status, res.Raw)
		require.Equal(t, true, res.Body["action"].(map[string]any)["target"].(map[string]any)["secret_set"], "kept when not named")
		res = f.do("GET", base+"/hook/history", "")
		require.Equal(t, http.StatusOK, res.Status)
		require.NotContains(t, res.Raw, secret)
		require.Contains(t, res.Raw, `"secret_version":1`, "the audit stream records the target without its secret")

		worker := f.must(http.StatusCreated, "POST", base, `{"schedule_id":"w","spec":{"cron_expressions":["0 0 1 1 *"]},"action":{"workflow_type":"t"}}`)
		require.Equal(t, map[string]any{"kind": "worker"}, worker["action"].(map[string]any)["target"], "answers always name the target")

		trig := f.must(http.StatusOK, "POST", base+"/hook/trigger", `{}`)
		n, err := svc.ExecuteTargetsOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		run := f.must(http.StatusOK, "GET", v2+"/runs/"+trig["run_id"].(string), "")
		require.Equal(t, "completed", run["status"])
		require.Equal(t, "@http", run["connection"])
		require.True(t, strings.HasPrefix(run["queue"].(string), "127.0.0.1:"), "the queue is the target's host")
		attempts := run["attempts"].([]any)
		require.Len(t, attempts, 1)
		require.Equal(t, float64(202), attempts[0].(map[string]any)["http_status"])

		out := f.do("GET", "/metrics", "")
		require.Equal(t, http.StatusOK, out.Status)
		for _, want := range []string{
			`tideline_http_target_attempts_total{outcome="completed"} 1`,
			`tideline_http_target_attempt_duration_seconds_count 1`,
			`tideline_http_target_requests_in_flight 0`,
			fmt.Sprintf("tideline_http_target_slots %d", scheduling.DefaultHTTPConcurrency),
		} {
			require.Contains(t, out.Raw, want)
		}
		slot, ok := svc.TargetPool().Acquire("default", "example.com")
		require.True(t, ok)
		require.Contains(t, f.do("GET", "/metrics", "").Raw, "tideline_http_target_requests_in_flight 1", "read at scrape time")
		slot.Return()
	})
}
