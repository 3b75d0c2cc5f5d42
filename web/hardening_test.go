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

	"github.com/tidelinehq/tideline/database/dbtest"
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
