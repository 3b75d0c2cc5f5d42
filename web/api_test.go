package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/metrics"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

var t0 = time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)

type apiFixture struct {
	t     *testing.T
	db    *bun.DB
	clock *schedtest.Clock
	h     http.Handler
}

func newAPI(t *testing.T, db *bun.DB, namespace string) *apiFixture {
	clock := schedtest.NewClock(t0)
	svc := schedtest.Service(db, clock)
	h := web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version: "test", Namespace: namespace, Clock: clock})
	return &apiFixture{t: t, db: db, clock: clock, h: h}
}

type response struct {
	Status int
	Body   map[string]any
	Raw    string
	Header http.Header
}

func (f *apiFixture) do(method, path, body string, header ...string) response {
	f.t.Helper()
	var rdr io.Reader
	if body != "" {
		rdr = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rdr)
	req.RemoteAddr = "127.0.0.1:40000" // local mode serves loopback clients only
	req.Host = "127.0.0.1:8080"        // and addressed to this machine (no DNS rebinding)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	res := response{Status: rec.Code, Raw: rec.Body.String(), Header: rec.Header()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && rec.Body.Len() > 0 {
		var m any
		require.NoError(f.t, json.Unmarshal(rec.Body.Bytes(), &m), rec.Body.String())
		if obj, ok := m.(map[string]any); ok {
			res.Body = obj
		}
	}
	return res
}

// must asserts the status and returns the body.
func (f *apiFixture) must(status int, method, path, body string, header ...string) map[string]any {
	f.t.Helper()
	res := f.do(method, path, body, header...)
	require.Equal(f.t, status, res.Status, "%s %s: %s", method, path, res.Raw)
	return res.Body
}

func errorOf(t *testing.T, body map[string]any) (string, map[string]any) {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "error envelope: %v", body)
	require.NotEmpty(t, e["message"])
	fields, _ := e["fields"].(map[string]any)
	return e["code"].(string), fields
}

const v2 = "/waterline/api/v2"

const dailyBody = `{"schedule_id":"daily-sync","spec":{"cron_expressions":["30 2 * * *"],"timezone":"America/New_York"},
	"action":{"workflow_type":"invoice-sync","input":{"region":"eu"},"run_timeout_seconds":600},
	"labels":{"team":"billing"},"note":"nightly"}`

func TestAPIScheduleLifecycle(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		res := f.do("POST", v2+"/schedules", dailyBody)
		require.Equal(t, http.StatusCreated, res.Status, res.Raw)
		require.Equal(t, v2+"/schedules/daily-sync", res.Header.Get("Location"))
		s := res.Body
		require.Equal(t, "daily-sync", s["schedule_id"])
		require.Equal(t, "default", s["namespace"])
		require.Equal(t, "active", s["status"])
		require.Equal(t, "2026-07-17T06:30:00.000000Z", s["next_fire_at"])
		require.Equal(t, "skip", s["overlap_policy"])
		require.Len(t, s["future_fire_times"], 5)
		require.Equal(t, "2026-07-17T06:30:00.000000Z", s["future_fire_times"].([]any)[0])
		require.Contains(t, s["spec_description"], "02:30")
		for _, field := range []string{"id", "spec", "action", "jitter_seconds", "max_runs", "remaining_actions", "connection", "queue",
			"labels", "memo", "search_attributes", "note", "fires_count", "failures_count", "skipped_trigger_count",
			"last_skip_reason", "last_skipped_at", "next_fire_at", "last_fired_at", "latest_instance_id", "latest_run_id",
			"buffered_actions", "recent_actions", "paused_at", "deleted_at", "created_at", "updated_at"} {
			require.Contains(t, s, field, "describe has every CONTRACT §2 field")
		}

		got := f.must(200, "GET", v2+"/schedules/daily-sync", "")
		require.Equal(t, s["id"], got["id"])

		list := f.must(200, "GET", v2+"/schedules?label=team:billing", "")
		require.Len(t, list["schedules"], 1)
		require.Nil(t, list["next_cursor"])
		require.Equal(t, false, list["has_more"])

		p := f.must(200, "POST", v2+"/schedules/daily-sync/pause", `{"reason":"db maintenance"}`)
		require.Equal(t, "paused", p["status"])
		require.Equal(t, "db maintenance", p["pause_reason"])
		require.Equal(t, "nightly", p["note"], "a pause never touches the note")
		require.Nil(t, p["next_fire_at"], "no next fire while paused")
		require.Equal(t, "local", p["paused_by"], "local mode acts as 'local'")
		code, _ := errorOf(t, f.must(409, "POST", v2+"/schedules/daily-sync/pause", ""))
		require.Equal(t, "schedule_not_active", code)
		r := f.must(200, "POST", v2+"/schedules/daily-sync/resume", "")
		require.Equal(t, "active", r["status"])
		code, _ = errorOf(t, f.must(409, "POST", v2+"/schedules/daily-sync/resume", "{}"))
		require.Equal(t, "schedule_not_paused", code)

		u := f.must(200, "PATCH", v2+"/schedules/daily-sync", `{"max_runs":5,"connection":"redis","note":"moved"}`)
		require.EqualValues(t, 5, u["max_runs"])
		require.EqualValues(t, 5, u["remaining_actions"])
		require.Equal(t, "redis", u["connection"])
		u = f.must(200, "PATCH", v2+"/schedules/daily-sync", `{"queue":"q1"}`)
		require.Equal(t, "q1", u["queue"])
		u = f.must(200, "PATCH", v2+"/schedules/daily-sync", `{"queue":null}`)
		require.Nil(t, u["queue"], "null clears a nullable field")
		require.Equal(t, "moved", u["note"], "absent fields are left alone")

		tr := f.must(200, "POST", v2+"/schedules/daily-sync/trigger", "")
		require.Equal(t, "triggered", tr["outcome"])
		require.Regexp(t, `^schedule:daily-sync:manual:[0-9A-Z]{26}$`, tr["instance_id"])
		runID := tr["run_id"].(string)
		tr = f.must(200, "POST", v2+"/schedules/daily-sync/trigger", `{"overlap_policy":"skip"}`)
		require.Equal(t, map[string]any{"outcome": "skipped", "instance_id": nil, "run_id": nil, "reason": "overlap_policy_skip", "buffer_depth": 0.0}, tr)

		runs := f.must(200, "GET", v2+"/schedules/daily-sync/runs", "")
		require.Len(t, runs["runs"], 1)
		run := f.must(200, "GET", v2+"/runs/"+runID, "")
		require.Equal(t, "pending", run["status"])
		require.Equal(t, "redis", run["connection"], "routing was taken at start time")
		require.Equal(t, "2026-07-16T12:10:00.000000Z", run["run_deadline_at"])
		require.Equal(t, "ScheduleTriggered", run["history"].([]any)[0].(map[string]any)["event_type"])
		require.Len(t, f.must(200, "GET", v2+"/runs?status=pending", "")["runs"], 1)
		cancelled := f.must(200, "POST", v2+"/runs/"+runID+"/cancel", "")
		require.Equal(t, "cancelled", cancelled["status"], "a pending run is cancelled at once")
		code, _ = errorOf(t, f.must(409, "POST", v2+"/runs/"+runID+"/terminate", ""))
		require.Equal(t, "run_not_running", code)

		d := f.must(200, "DELETE", v2+"/schedules/daily-sync", "")
		require.Equal(t, "deleted", d["status"])
		f.must(200, "DELETE", v2+"/schedules/daily-sync", "")
		code, _ = errorOf(t, f.must(404, "GET", v2+"/schedules/daily-sync", ""))
		require.Equal(t, "schedule_not_found", code)

		h := f.must(200, "GET", v2+"/schedules/daily-sync/history", "")
		var types []string
		for _, e := range h["events"].([]any) {
			ev := e.(map[string]any)
			types = append(types, ev["event_type"].(string))
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, ev["recorded_at"])
		}
		require.Equal(t, []string{"ScheduleCreated", "SchedulePaused", "ScheduleResumed", "ScheduleUpdated", "ScheduleUpdated",
			"ScheduleUpdated", "ScheduleTriggered", "ScheduleTriggerSkipped", "ScheduleDeleted"}, types, "history of a deleted schedule still answers")
		cc := h["events"].([]any)[1].(map[string]any)["payload"].(map[string]any)["command_context"].(map[string]any)
		require.Equal(t, "api", cc["source"])
		require.Equal(t, "db maintenance", cc["reason"])
		require.NotEmpty(t, cc["request_id"])
	})
}

func TestAPIHistoryReadContract(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"h","cron":"0 * * * *","action":{"workflow_type":"w"},"overlap_policy":"allow_all"}`)
		// 1 created + 9 backfilled = 10 events.
		bf := f.must(202, "POST", v2+"/schedules/h/backfill", `{"from":"2026-07-01T00:00:00Z","to":"2026-07-01T09:00:00Z"}`)["backfill"].(map[string]any)
		require.EqualValues(t, 9, bf["total"])
		require.Equal(t, "completed", bf["status"], "a small window is done before the answer")

		var cursors []any
		after := "0"
		for range 5 {
			page := f.must(200, "GET", v2+"/schedules/h/history?limit=4&after_sequence="+after, "")
			cursors = append(cursors, page["next_cursor"])
			if page["next_cursor"] == nil {
				require.Equal(t, false, page["has_more"])
				require.Len(t, page["events"], 2)
				break
			}
			require.Equal(t, true, page["has_more"])
			after = fmt.Sprint(page["next_cursor"])
		}
		require.Equal(t, []any{4.0, 8.0, nil}, cursors)

		require.Len(t, f.must(200, "GET", v2+"/schedules/h/history?limit=0", "")["events"], 1)
		require.Len(t, f.must(200, "GET", v2+"/schedules/h/history", "")["events"], 10, "default limit 100")
		for _, q := range []string{"limit=abc", "limit=1.5"} {
			code, fields := errorOf(t, f.must(422, "GET", v2+"/schedules/h/history?"+q, ""))
			require.Equal(t, "invalid_limit", code)
			require.Contains(t, fields, "limit")
		}
		for _, q := range []string{"after_sequence=-3", "after_sequence=x"} {
			code, _ := errorOf(t, f.must(422, "GET", v2+"/schedules/h/history?"+q, ""))
			require.Equal(t, "invalid_after_sequence", code)
		}

		// limit=99999 is clamped to 500: needs more than 500 events.
		f.must(202, "POST", v2+"/schedules/h/backfill", `{"from":"2026-08-01T00:00:00Z","to":"2026-08-26T00:00:00Z"}`) // 600 more
		page := f.must(200, "GET", v2+"/schedules/h/history?limit=99999", "")
		require.Len(t, page["events"], 500)
		require.EqualValues(t, 500, page["next_cursor"])
		require.Equal(t, true, page["has_more"])
	})
}

func TestAPINamespaces(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		body := `{"schedule_id":"same","cron":"0 * * * *","action":{"workflow_type":"w"}}`
		a := f.must(201, "POST", v2+"/schedules", body, "X-Namespace", "team-a")
		b := f.must(201, "POST", "/api/schedules", body, "X-Namespace", "team-b")
		require.NotEqual(t, a["id"], b["id"])
		require.Equal(t, "team-b", b["namespace"])
		c := f.must(201, "POST", v2+"/schedules?namespace=team-c", body)
		require.Equal(t, "team-c", c["namespace"])

		f.must(200, "POST", "/api/schedules/same/pause", "", "X-Namespace", "team-a")
		require.Equal(t, "active", f.must(200, "GET", "/api/schedules/same", "", "X-Namespace", "team-b")["status"])
		for _, route := range [][2]string{{"GET", "/schedules/same"}, {"PATCH", "/schedules/same"}, {"DELETE", "/schedules/same"},
			{"POST", "/schedules/same/pause"}, {"POST", "/schedules/same/resume"}, {"POST", "/schedules/same/trigger"},
			{"POST", "/schedules/same/backfill"}, {"GET", "/schedules/same/history"}, {"GET", "/schedules/same/runs"}} {
			body := ""
			switch route[1] {
			case "/schedules/same":
				if route[0] == "PATCH" {
					body = `{"note":"x"}`
				}
			case "/schedules/same/backfill":
				body = `{"from":"2026-07-01T00:00:00Z","to":"2026-07-01T01:00:00Z"}`
			}
			res := f.do(route[0], v2+route[1], body, "X-Namespace", "elsewhere")
			require.Equal(t, 404, res.Status, "%s %s in another namespace: %s", route[0], route[1], res.Raw)
		}
		code, fields := errorOf(t, f.must(422, "GET", v2+"/schedules", "", "X-Namespace", "Bad NS"))
		require.Equal(t, "validation_failed", code)
		require.Contains(t, fields, "namespace")

		// A server scoped to one namespace ignores the header.
		scoped := newAPI(t, db, "team-a")
		require.Equal(t, "paused", scoped.must(200, "GET", v2+"/schedules/same", "", "X-Namespace", "team-b")["status"])
		require.Len(t, scoped.must(200, "GET", v2+"/schedules", "")["schedules"], 1)
	})
}

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", dailyBody)
		cases := []struct {
			name, method, path, body string
			status                   int
			code                     string
			field                    string
		}{
			{"malformed json", "POST", "/schedules", `{"schedule_id":`, 400, "invalid_json", ""},
			{"unknown field", "POST", "/schedules", `{"schedule_idd":"x"}`, 400, "invalid_json", ""},
			{"wrong type", "POST", "/schedules", `{"jitter_seconds":"ten"}`, 400, "invalid_json", ""},
			{"not an object", "POST", "/schedules", `[1,2]`, 400, "invalid_json", ""},
			{"empty body", "POST", "/schedules", ``, 400, "invalid_json", ""},
			{"patch unknown field", "PATCH", "/schedules/daily-sync", `{"colour":"red"}`, 400, "invalid_json", ""},
			{"duplicate", "POST", "/schedules", dailyBody, 409, "schedule_already_exists", ""},
			{"bad cron", "POST", "/schedules", `{"cron":"61 * * * *","action":{"workflow_type":"w"}}`, 422, "validation_failed", "spec.cron_expressions[0]"},
			{"six fields", "POST", "/schedules", `{"cron":"0 0 * * * *","action":{"workflow_type":"w"}}`, 422, "validation_failed", "spec.cron_expressions[0]"},
			{"bad zone", "POST", "/schedules", `{"spec":{"cron_expressions":["0 * * * *"],"timezone":"Mars/Olympus"},"action":{"workflow_type":"w"}}`, 422, "validation_failed", "spec.timezone"},
			{"no workflow type", "POST", "/schedules", `{"cron":"0 * * * *","action":{}}`, 422, "validation_failed", "action.workflow_type"},
			{"never fires", "POST", "/schedules", `{"cron":"0 0 30 2 *","action":{"workflow_type":"w"}}`, 422, "spec_never_fires", ""},
			{"empty spec", "POST", "/schedules", `{"action":{"workflow_type":"w"}}`, 422, "validation_failed", "spec.cron_expressions"},
			{"bad interval", "POST", "/schedules", `{"spec":{"intervals":[{"every":"P1M"}]},"action":{"workflow_type":"w"}}`, 422, "validation_failed", "spec.intervals[0].every"},
			{"max_runs not above fires", "PATCH", "/schedules/daily-sync", `{"max_runs":0}`, 422, "validation_failed", "max_runs"},
			{"bad policy", "POST", "/schedules/daily-sync/trigger", `{"overlap_policy":"maybe"}`, 422, "validation_failed", "overlap_policy"},
			{"backfill range", "POST", "/schedules/daily-sync/backfill", `{"from":"2026-07-02T00:00:00Z","to":"2026-07-01T00:00:00Z"}`, 422, "invalid_time_range", ""},
			{"backfill bad time", "POST", "/schedules/daily-sync/backfill", `{"from":"yesterday","to":"2026-07-01T00:00:00Z"}`, 422, "validation_failed", "from"},
			{"backfill dry run too large", "POST", "/schedules/daily-sync/backfill", `{"from":"2000-01-01T00:00:00Z","to":"2040-01-01T00:00:00Z","dry_run":true}`, 422, "backfill_too_large", ""},
			{"backfill pace", "POST", "/schedules/daily-sync/backfill", `{"from":"2026-07-01T00:00:00Z","to":"2026-07-02T00:00:00Z","max_per_minute":0}`, 422, "validation_failed", "max_per_minute"},
			{"unknown backfill", "GET", "/backfills/01KXNR6R809X7XT0RFJDNTWDR2", ``, 404, "backfill_not_found", ""},
			{"backfill list cursor", "GET", "/backfills?cursor=nope", ``, 422, "invalid_cursor", "cursor"},
			{"backfill list limit", "GET", "/backfills?limit=0", ``, 422, "invalid_limit", "limit"},
			{"backfill list status", "GET", "/backfills?status=asleep", ``, 422, "validation_failed", "status"},
			{"unknown schedule", "POST", "/schedules/nope/trigger", ``, 404, "schedule_not_found", ""},
			{"unknown run", "GET", "/runs/01KXNR6R809X7XT0RFJDNTWDR2", ``, 404, "run_not_found", ""},
			{"list limit", "GET", "/schedules?limit=201", ``, 422, "validation_failed", "limit"},
			{"list status", "GET", "/schedules?status=sleeping", ``, 422, "validation_failed", "status"},
			{"unknown route", "GET", "/nothing", ``, 404, "not_found", ""},
		}
		for _, tc := range cases {
			res := f.do(tc.method, v2+tc.path, tc.body)
			require.Equal(t, tc.status, res.Status, "%s: %s", tc.name, res.Raw)
			code, fields := errorOf(t, res.Body)
			require.Equal(t, tc.code, code, tc.name)
			if tc.field != "" {
				require.Contains(t, fields, tc.field, tc.name)
			}
			require.NotContains(t, res.Raw, "goroutine", tc.name)
			require.NotContains(t, res.Raw, ".go:", tc.name)
		}

		big := `{"note":"` + strings.Repeat("x", 1<<20) + `"}`
		res := f.do("PATCH", v2+"/schedules/daily-sync", big)
		require.Equal(t, http.StatusRequestEntityTooLarge, res.Status)
		code, _ := errorOf(t, res.Body)
		require.Equal(t, "request_too_large", code)

		// Nothing was written by the failed requests: one schedule, one event.
		n, err := db.NewSelect().Model((*models.Schedule)(nil)).Count(t.Context())
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Len(t, f.must(200, "GET", v2+"/schedules/daily-sync/history", "")["events"], 1)
	})
}

func TestAPIBackfillPreviewAndTick(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"q","spec":{"intervals":[{"every":"PT1H","offset":"PT5M"}]},"action":{"workflow_type":"w"},"overlap_policy":"buffer_all"}`)

		dry := f.must(200, "POST", v2+"/schedules/q/backfill", `{"from":"2026-07-15T00:00:00Z","to":"2026-07-15T03:00:00Z","dry_run":true}`)
		require.Equal(t, "dry_run", dry["outcome"])
		require.EqualValues(t, 3, dry["occurrences"])
		require.Equal(t, "2026-07-15T00:05:00.000000Z", dry["results"].([]any)[0].(map[string]any)["occurrence_time"])
		require.Empty(t, f.must(200, "GET", v2+"/runs", "")["runs"], "a dry run starts nothing")

		done := f.must(202, "POST", v2+"/schedules/q/backfill", `{"from":"2026-07-15T00:00:00Z","to":"2026-07-15T03:00:00Z"}`)["backfill"].(map[string]any)
		require.Equal(t, "completed", done["status"], "a small window is done before the answer")
		require.EqualValues(t, 3, done["started"], "buffer_all acts as allow_all in a backfill")
		require.EqualValues(t, 0, done["skipped"])
		require.EqualValues(t, 0, done["remaining"])
		require.Len(t, f.must(200, "GET", v2+"/runs?schedule_id=q", "")["runs"], 3)

		pv := f.must(200, "POST", v2+"/schedules/preview", `{"spec":{"cron_expressions":["0 9 * * 1"],"timezone":"Europe/London"},"after":"2026-07-16T00:00:00Z","count":2}`)
		require.Equal(t, []any{"2026-07-20T08:00:00.000000Z", "2026-07-27T08:00:00.000000Z"}, pv["fire_times"])
		require.NotEmpty(t, pv["description"])
		code, fields := errorOf(t, f.must(422, "POST", v2+"/schedules/preview", `{"spec":{"cron_expressions":["nope"]}}`))
		require.Equal(t, "validation_failed", code)
		require.Contains(t, fields, "spec.cron_expressions[0]")
		_, fields = errorOf(t, f.must(422, "POST", v2+"/schedules/preview", `{"spec":{"cron_expressions":["* * * * *"]},"count":101}`))
		require.Contains(t, fields, "count")

		f.clock.Set(time.Date(2026, 7, 16, 13, 5, 0, 0, time.UTC))
		tick := f.must(200, "POST", v2+"/tick", "")
		rows := tick["rows"].([]any)
		require.Len(t, rows, 1)
		row := rows[0].(map[string]any)
		require.Equal(t, "q", row["schedule_id"])
		require.Equal(t, "buffered", row["outcome"], "the backfilled runs are still pending")
		require.Equal(t, "2026-07-16T12:05:00.000000Z", row["occurrence_time"], "the overdue stored next_fire_at")
		require.Equal(t, "2026-07-16T14:05:00.000000Z", row["next_fire_at"])
	})
}

func TestAPIWorkerProtocol(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"w","cron":"0 * * * *","action":{"workflow_type":"w","input":[1,2]},"queue":"fast"}`)
		run := f.must(200, "POST", v2+"/schedules/w/trigger", "")["run_id"].(string)

		empty := f.must(200, "POST", "/api/v2/worker/poll", `{"queue":"slow"}`)
		require.Empty(t, empty["runs"])
		polled := f.must(200, "POST", "/api/v2/worker/poll", `{"queue":"fast","limit":5,"lease_seconds":20,"worker_id":"go-1"}`)["runs"].([]any)
		require.Len(t, polled, 1)
		claimed := polled[0].(map[string]any)
		require.Equal(t, run, claimed["run_id"])
		require.Equal(t, []any{1.0, 2.0}, claimed["input"])
		require.Equal(t, "2026-07-16T12:00:20.000000Z", claimed["lease_expires_at"])
		// What a worker puts in a command's environment comes with the claim.
		require.Equal(t, "w", claimed["schedule_id"])
		require.Equal(t, "default", claimed["namespace"])
		require.Equal(t, "manual", claimed["trigger"])
		require.Equal(t, "2026-07-16T12:00:00.000000Z", claimed["occurrence_time"])

		hb := f.must(200, "POST", "/api/v2/worker/runs/"+run+"/heartbeat", `{"lease_seconds":60,"worker_id":"go-1"}`)
		require.Equal(t, false, hb["cancel_requested"])
		f.must(200, "POST", v2+"/runs/"+run+"/cancel", `{"reason":"deploy"}`)
		require.Equal(t, true, f.must(200, "POST", "/api/v2/worker/runs/"+run+"/heartbeat", `{"worker_id":"go-1"}`)["cancel_requested"])

		done := f.must(200, "POST", v2+"/worker/runs/"+run+"/complete", `{"output":{"ok":true},"worker_id":"go-1"}`)
		require.Equal(t, "completed", done["status"])
		code, _ := errorOf(t, f.must(409, "POST", "/api/v2/worker/runs/"+run+"/complete", `{"worker_id":"go-1"}`))
		require.Equal(t, "run_not_running", code)
		code, _ = errorOf(t, f.must(404, "POST", "/api/v2/worker/runs/"+run+"/complete", `{"namespace":"other","worker_id":"go-1"}`))
		require.Equal(t, "run_not_found", code)
		code, _ = errorOf(t, f.must(400, "POST", "/api/v2/worker/runs/"+run+"/fail", `{"message":`))
		require.Equal(t, "invalid_json", code)
		code, _ = errorOf(t, f.must(404, "POST", "/api/v2/worker/runs/nope/heartbeat", `{"worker_id":"go-1"}`))
		require.Equal(t, "run_not_found", code)
		_, fields := errorOf(t, f.must(422, "POST", "/api/v2/worker/poll", `{"limit":1000}`))
		require.Contains(t, fields, "limit")
	})
}

func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	clock := schedtest.NewClock(t0)
	svc := schedtest.Service(db, clock)
	m := metrics.New(db)
	h := web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test", Clock: clock, Metrics: m})
	f := &apiFixture{t: t, db: db, clock: clock, h: h}
	f.must(201, "POST", v2+"/schedules", `{"schedule_id":"m","cron":"* * * * *","action":{"workflow_type":"w"}}`)
	f.must(200, "POST", v2+"/schedules/m/trigger", "")

	clock.Set(t0.Add(90 * time.Second))
	loop := &scheduling.Loop{Service: svc}
	res, err := loop.RunOnce(t.Context())
	require.NoError(t, err)
	m.ObservePass(res, 42*time.Millisecond, nil)

	out := f.do("GET", "/metrics", "")
	require.Equal(t, 200, out.Status)
	for _, want := range []string{
		`tideline_schedule_fires_total{outcome="skipped"} 1`,
		`tideline_schedule_skips_total{reason="overlap_policy_skip"} 1`,
		`tideline_runs{status="pending"} 1`,
		`tideline_runs{status="running"} 0`,
		`tideline_loop_pass_duration_seconds_count 1`,
		`tideline_http_request_duration_seconds_count{method="POST",route="/waterline/api/v2/schedules",status="201"} 1`,
		`tideline_http_request_duration_seconds_count{method="POST",route="/waterline/api/v2/schedules/:schedule_id/trigger",status="200"} 1`,
	} {
		require.Contains(t, out.Raw, want)
	}
}

func TestAPIKeepsInputDocumentsExact(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"big","cron":"0 * * * *","action":{"workflow_type":"w","input":{"id":12345678901234567890,"ratio":0.1}}}`)
		res := f.do("GET", v2+"/schedules/big", "")
		require.Contains(t, res.Raw, `12345678901234567890`, "big integers are not rounded through float64")
		runID := f.must(200, "POST", v2+"/schedules/big/trigger", "")["run_id"].(string)
		require.Contains(t, f.do("GET", v2+"/runs/"+runID, "").Raw, `12345678901234567890`)
	})
}

func TestNULCharactersAreBadRequests(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		for _, tc := range []struct{ method, path, body string }{
			{"GET", v2 + "/schedules/a%00b", ""},
			{"GET", v2 + "/schedules?q=x%00y", ""},
			{"POST", v2 + "/schedules", `{"schedule_id":"n","cron":"0 * * * *","action":{"workflow_type":"w"},"note":"a\u0000b"}`},
			{"PATCH", v2 + "/schedules/n", `null`},
		} {
			res := f.do(tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, res.Status, "%s %s: %s", tc.method, tc.path, res.Raw)
		}
		n, err := db.NewSelect().Model((*models.Schedule)(nil)).Count(t.Context())
		require.NoError(t, err)
		require.Zero(t, n)

		// An escaped backslash followed by "u0000" is text, not a NUL.
		created := f.must(201, "POST", v2+"/schedules", `{"schedule_id":"path","cron":"0 * * * *","action":{"workflow_type":"w"},"note":"C:\\u0000dir"}`)
		require.Equal(t, `C:\u0000dir`, created["note"])

		c := newConsole(t, db, "")
		res := c.post("/waterline/schedules", url.Values{"schedule_id": {"n"}, "cron_expressions": {"0 * * * *"}, "workflow_type": {"w"}, "note": {"a\x00b"}})
		require.Equal(t, http.StatusBadRequest, res.Status, "console form fields too")
	})
}

// A body that is not JSON is refused, never read as a form and dropped
// (curl's default type); duplicate keys are refused instead of "last wins".
func TestAPIRequestBodiesAreNeverDropped(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		const v2 = "/waterline/api/v2"
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"b","spec":{"cron_expressions":["0 * * * *"]},"action":{"workflow_type":"w"}}`)

		for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x", ""} {
			for _, req := range []struct{ method, path, body string }{
				{"POST", v2 + "/schedules/b/pause", `{"reason":"maintenance"}`},
				{"POST", v2 + "/schedules/b/trigger", `{"overlap_policy":"allow_all"}`},
				{"POST", v2 + "/schedules", `{"schedule_id":"c","spec":{"cron_expressions":["0 * * * *"]},"action":{"workflow_type":"w"}}`},
				{"PATCH", "/api/schedules/b", `{"note":"x"}`},
			} {
				res := f.do(req.method, req.path, req.body, "Content-Type", ct)
				require.Equal(t, 415, res.Status, "%s %s as %q: %s", req.method, req.path, ct, res.Raw)
				code, _ := errorOf(t, res.Body)
				require.Equal(t, "unsupported_media_type", code)
			}
		}
		sch := f.must(200, "GET", v2+"/schedules/b", "")
		require.Equal(t, "active", sch["status"], "nothing was applied")
		require.EqualValues(t, 0, sch["fires_count"])

		// An optional body may still be left out, whatever the type says.
		tr := f.must(200, "POST", v2+"/schedules/b/trigger", "", "Content-Type", "application/x-www-form-urlencoded")
		require.Equal(t, "triggered", tr["outcome"])
		f.must(200, "POST", v2+"/schedules/b/pause", `{"reason":"json with charset"}`, "Content-Type", "application/json; charset=utf-8")
		require.Equal(t, "json with charset", f.must(200, "GET", v2+"/schedules/b", "")["pause_reason"])

		for body, key := range map[string]string{
			`{"schedule_id":"a","schedule_id":"d","spec":{"cron_expressions":["0 * * * *"]},"action":{"workflow_type":"w"}}`:                        "schedule_id",
			`{"schedule_id":"a","spec":{"timezone":"UTC","cron_expressions":["0 * * * *"],"timezone":"Asia/Tokyo"},"action":{"workflow_type":"w"}}`: "spec.timezone",
			`{"schedule_id":"a","spec":{"cron_expressions":["0 * * * *"]},"action":{"workflow_type":"w","input":{"k":1,"k":2}}}`:                    "action.input.k",
		} {
			res := f.do("POST", v2+"/schedules", body)
			require.Equal(t, 400, res.Status, res.Raw)
			code, _ := errorOf(t, res.Body)
			require.Equal(t, "invalid_json", code)
			require.Contains(t, res.Body["error"].(map[string]any)["message"], `"`+key+`"`)
		}
		f.must(404, "GET", v2+"/schedules/a", "")
		// The same key in sibling objects is no duplicate.
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"e","spec":{"cron_expressions":["0 * * * *"],"intervals":[{"every":"PT1H"},{"every":"PT2H"}]},"action":{"workflow_type":"w","input":{"every":1}}}`)

		res := f.do("POST", v2+"/schedules", `{"schedule_id":"t","spec":{"cron_expressions":["0 * * * *"]},"action":{"workflow_type":"w","run_timeout_seconds":9223372036854775807,"execution_timeout_seconds":315360001}}`)
		require.Equal(t, 422, res.Status, res.Raw)
		_, fields := errorOf(t, res.Body)
		require.Contains(t, fields, "action.run_timeout_seconds")
		require.Contains(t, fields, "action.execution_timeout_seconds")
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"t","spec":{"cron_expressions":["0 * * * *"]},"action":{"workflow_type":"w","run_timeout_seconds":315360000}}`)
	})
}

// Unknown routes and wrong methods get JSON 404 not_found and 405
// method_not_allowed (with Allow) under both API prefixes.
func TestAPIUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	f := newAPI(t, dbtest.SQLite(t), "")
	for _, prefix := range []string{"/waterline/api/v2", "/api"} {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			res := f.do(method, prefix+"/no-such-thing/here", `{}`)
			require.Equal(t, 404, res.Status, "%s %s: %s", method, prefix, res.Raw)
			code, _ := errorOf(t, res.Body)
			require.Equal(t, "not_found", code)
		}
		res := f.do("PUT", prefix+"/schedules", `{}`)
		require.Equal(t, 405, res.Status, "%s: %s", prefix, res.Raw)
		code, _ := errorOf(t, res.Body)
		require.Equal(t, "method_not_allowed", code)
		require.Equal(t, "GET, POST", res.Header.Get("Allow"))
		res = f.do("POST", prefix+"/schedules/x/history", `{}`)
		require.Equal(t, 405, res.Status, res.Raw)
		require.Equal(t, "GET", res.Header.Get("Allow"))
		res = f.do("PUT", prefix+"/schedules/x", `{}`)
		require.Equal(t, 405, res.Status, res.Raw)
		require.Equal(t, "GET, PATCH, DELETE", res.Header.Get("Allow"))
	}
}

// Health in the API: the registry filter health=failing, the health sort
// with its keyset cursor, and the health fields of describe and list.
func TestAPIHealthFilterAndSort(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		const v2 = "/waterline/api/v2"
		for _, id := range []string{"a", "b", "c", "d"} {
			f.must(201, "POST", v2+"/schedules", `{"schedule_id":"`+id+`","cron":"0 0 1 1 *","overlap_policy":"allow_all","action":{"workflow_type":"w"}}`)
		}
		// b fails twice, d once, c completes.
		finish := func(id string, ok bool) {
			tr := f.must(200, "POST", v2+"/schedules/"+id+"/trigger", "")
			polled := f.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":1}`)
			require.Len(t, polled["runs"], 1)
			runID := tr["run_id"].(string)
			if ok {
				f.must(200, "POST", v2+"/worker/runs/"+runID+"/complete", `{"worker_id":"w1"}`)
			} else {
				f.must(200, "POST", v2+"/worker/runs/"+runID+"/fail", `{"worker_id":"w1","message":"disk full","type":"io"}`)
			}
		}
		finish("b", false)
		finish("b", false)
		finish("d", false)
		finish("c", true)

		failing := f.must(200, "GET", v2+"/schedules?health=failing", "")
		var ids []string
		for _, s := range failing["schedules"].([]any) {
			ids = append(ids, s.(map[string]any)["schedule_id"].(string))
		}
		require.Equal(t, []string{"b", "d"}, ids)

		ids = nil
		cursor := ""
		for {
			page := f.must(200, "GET", v2+"/schedules?sort=health&limit=1&cursor="+cursor, "")
			for _, s := range page["schedules"].([]any) {
				ids = append(ids, s.(map[string]any)["schedule_id"].(string))
			}
			if page["next_cursor"] == nil {
				break
			}
			cursor = page["next_cursor"].(string)
		}
		require.Equal(t, []string{"b", "d", "a", "c"}, ids, "failing first, then by ID")

		// e's run waits with no worker: stuck once past its start deadline;
		// the fire skipped behind it makes it skipping too, and stuck says why.
		f.must(201, "POST", v2+"/schedules", `{"schedule_id":"e","cron":"0 0 1 1 *","overlap_policy":"skip","start_deadline_seconds":60,"action":{"workflow_type":"w"}}`)
		f.must(200, "POST", v2+"/schedules/e/trigger", "")
		f.clock.Advance(30 * time.Second)
		f.must(200, "POST", v2+"/schedules/e/trigger", "")
		healthOf := func(id string) any { return f.must(200, "GET", v2+"/schedules/"+id, "")["health"] }
		require.Equal(t, "skipping", healthOf("e"), "skipped behind a run not yet past its deadline")
		listed := func(q string) []string {
			var ids []string
			for _, s := range f.must(200, "GET", v2+"/schedules?"+q, "")["schedules"].([]any) {
				ids = append(ids, s.(map[string]any)["schedule_id"].(string))
			}
			return ids
		}
		require.Equal(t, []string{"e"}, listed("health=skipping"))
		require.Empty(t, listed("health=stuck"))
		f.clock.Advance(31 * time.Second)
		require.Equal(t, "stuck", healthOf("e"))
		require.Equal(t, "failing", healthOf("b"))
		require.Equal(t, "ok", healthOf("c"))
		require.Equal(t, "no_runs", healthOf("a"))
		require.Equal(t, []string{"e"}, listed("health=stuck"))
		require.Empty(t, listed("health=skipping"), "one state at a time: stuck says why it skips")
		require.Equal(t, []string{"b", "d", "e", "a", "c"}, listed("sort=health"), "failing, then stuck, then the rest")

		b := f.must(200, "GET", v2+"/schedules/b", "")
		require.EqualValues(t, 2, b["consecutive_failures"])
		require.EqualValues(t, 2, b["failures_count"])
		require.EqualValues(t, 0, b["start_failures_count"])
		last := b["last_run"].(map[string]any)
		require.Equal(t, "failed", last["status"])
		require.Equal(t, "disk full", last["error_message"])
		require.Len(t, b["recent_runs"], 2)
		c := f.must(200, "GET", v2+"/schedules/c", "")
		require.EqualValues(t, 0, c["consecutive_failures"])
		require.Nil(t, c["last_run"].(map[string]any)["error_message"])
		a := f.must(200, "GET", v2+"/schedules/a", "")
		require.Nil(t, a["last_run"])
		require.Equal(t, []any{}, a["recent_runs"])

		for _, q := range []string{"health=ok", "sort=next", "sort=health&cursor=" + "YQ"} {
			res := f.do("GET", v2+"/schedules?"+q, "")
			require.Equal(t, 422, res.Status, "%s: %s", q, res.Raw)
		}
	})
}
