package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// Fuzz targets for the JSON API, through the real router. Plain `go test`
// runs their seeds; docs/RELIABILITY.md has the commands that fuzz each one
// for a minute and the results, e.g.
//
//	go test ./web -run '^$' -fuzz '^FuzzPreviewBody$' -fuzztime 60s

// fuzzServer is a router on a fresh SQLite database, built once per target.
func fuzzServer(f *testing.F) (http.Handler, *bun.DB) {
	db := dbtest.SQLite(f)
	clock := schedtest.NewClock(t0)
	h := web.NewServer(web.Deps{DB: db, Service: schedtest.Service(db, clock), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version: "fuzz", Clock: clock})
	return h, db
}

// checkPreview asserts the preview contract on any answer: never a 5xx,
// always JSON; a 200 lists at most count (default 10, at most 100) fire
// times, strictly ascending, strictly after `after`, in the CONTRACT §2 format;
// anything else is a 4xx with the error envelope.
func checkPreview(t *testing.T, res response, after time.Time) {
	t.Helper()
	if res.Status >= 500 {
		t.Fatalf("status %d: %s", res.Status, res.Raw)
	}
	if !json.Valid([]byte(res.Raw)) {
		t.Fatalf("status %d with a body that is not JSON: %q", res.Status, res.Raw)
	}
	if res.Status != http.StatusOK {
		if res.Status < 400 {
			t.Fatalf("status %d: %s", res.Status, res.Raw)
		}
		e, ok := res.Body["error"].(map[string]any)
		if !ok || e["code"] == "" || e["message"] == "" {
			t.Fatalf("status %d without the error envelope: %s", res.Status, res.Raw)
		}
		return
	}
	var out struct {
		Description string   `json:"description"`
		FireTimes   []string `json:"fire_times"`
	}
	if err := json.Unmarshal([]byte(res.Raw), &out); err != nil {
		t.Fatalf("200 body: %v: %s", err, res.Raw)
	}
	if out.Description == "" || len(out.FireTimes) > 100 {
		t.Fatalf("200 with description %q and %d fire times", out.Description, len(out.FireTimes))
	}
	prev := after
	for _, s := range out.FireTimes {
		ft, err := time.Parse("2006-01-02T15:04:05.000000Z", s)
		if err != nil {
			t.Fatalf("fire time %q is not RFC 3339 UTC with microseconds", s)
		}
		if !ft.After(prev) {
			t.Fatalf("fire time %s is not after %s: %v", s, prev, out.FireTimes)
		}
		prev = ft
	}
}

// FuzzPreviewBody posts arbitrary bytes to POST /schedules/preview.
func FuzzPreviewBody(f *testing.F) {
	for _, s := range []string{
		`{"spec":{"cron_expressions":["0 9 * * 1"],"timezone":"Europe/London"},"after":"2026-07-16T00:00:00Z","count":2}`,
		`{"spec":{"intervals":[{"every":"PT1H","offset":"PT5M"}]},"count":100}`,
		`{"spec":{"cron_expressions":["30 2 * * *"],"timezone":"America/New_York"},"after":"2026-03-07T12:00:00-05:00"}`,
		`{"spec":{"cron_expressions":["@daily","*/15 * * * *"],"intervals":[{"every":"P1W"}]}}`,
		`{"spec":{"cron_expressions":["0 0 30 2 *"]}}`,
		`{"spec":{"cron_expressions":["61 * * * *"]}}`,
		`{"spec":{"intervals":[{"every":"P1M"}]}}`,
		`{"spec":{}}`, `{}`, ``, `{`, `null`, `[]`, `"x"`,
		`{"spec":{"cron_expressions":["* * * * *"]},"count":0}`,
		`{"spec":{"cron_expressions":["* * * * *"]},"count":101}`,
		`{"spec":{"cron_expressions":["* * * * *"]},"count":1e400}`,
		`{"spec":{"cron_expressions":["* * * * *"]},"after":"9999-12-31T23:59:59Z"}`,
		`{"spec":{"cron_expressions":["* * * * *"]},"after":"0001-01-01T00:00:00Z"}`,
		`{"spec":{"intervals":[{"every":"P36500D"}]},"after":"9999-01-01T00:00:00Z","count":100}`,
		`{"spec":{"cron_expressions":["* * * * *"],"timezone":"Mars/Olympus"}}`,
		`{"spec":{"cron_expressions":["* * * * *"],"timezone":"Local"}}`,
		`{"spec":{"cron_expressions":["\u0000"]}}`,
		`{"spec":{"cron_expressions":["* * * * *"]},"after":"2026-07-16T00:00:00.123456789+14:00"}`,
		`{"spec":{"cron_expressions":null,"intervals":null,"timezone":null}}`,
		`{"spec":{"cron_expressions":["* * * * *"]},"extra":1}`,
	} {
		f.Add(s)
	}
	h, db := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		fx := &apiFixture{t: t, db: db, clock: schedtest.NewClock(t0), h: h}
		res := fx.do(http.MethodPost, v2+"/schedules/preview", body)
		after := t0
		var req struct {
			After string `json:"after"`
		}
		if json.Unmarshal([]byte(body), &req) == nil && req.After != "" {
			if a, err := time.Parse(time.RFC3339Nano, req.After); err == nil && !a.IsZero() {
				after = a
			}
		}
		checkPreview(t, res, after)
	})
}

// FuzzPreviewFields builds well-formed preview requests from arbitrary
// field values, to reach the spec engine behind the JSON layer.
func FuzzPreviewFields(f *testing.F) {
	for _, s := range []struct {
		cron, every, offset, zone, after string
		count                            int
	}{
		{"0 9 * * 1", "", "", "Europe/London", "2026-07-16T00:00:00Z", 5},
		{"30 2 * * *", "", "", "America/New_York", "2026-03-07T12:00:00Z", 3},
		{"", "PT1H", "PT5M", "", "", 100},
		{"0 0 L * *", "P1W", "", "Australia/Lord_Howe", "2026-10-03T15:00:00Z", 50},
		{"@hourly", "PT1S", "", "", "9999-12-31T23:59:00Z", 100},
		{"0 0 30 2 *", "", "", "", "", 10},
		{"* * * * * *", "", "", "", "", 10},
		{"", "P1M", "", "", "", 10},
		{"", "PT1H", "PT2H", "", "", 10},
		{"", "", "", "", "not a time", 0},
		{"5 4 * * sun", "", "", "Pacific/Chatham", "2026-04-05T02:00:00+12:45", -1},
	} {
		f.Add(s.cron, s.every, s.offset, s.zone, s.after, s.count)
	}
	h, db := fuzzServer(f)
	f.Fuzz(func(t *testing.T, cron, every, offset, zone, after string, count int) {
		spec := map[string]any{"timezone": zone}
		if cron != "" {
			spec["cron_expressions"] = []string{cron}
		}
		if every != "" || offset != "" {
			spec["intervals"] = []map[string]string{{"every": every, "offset": offset}}
		}
		req := map[string]any{"spec": spec, "count": count}
		if after != "" {
			req["after"] = after
		}
		body, err := json.Marshal(req)
		if err != nil {
			t.Skip("not encodable")
		}
		fx := &apiFixture{t: t, db: db, clock: schedtest.NewClock(t0), h: h}
		res := fx.do(http.MethodPost, v2+"/schedules/preview", string(body))
		start := t0
		if a, err := time.Parse(time.RFC3339Nano, after); err == nil && !a.IsZero() {
			start = a
		}
		checkPreview(t, res, start)
		if res.Status == http.StatusOK && (count < 1 || count > 100) {
			t.Fatalf("count %d was accepted: %s", count, res.Raw)
		}
	})
}

// historyEvents is the audit stream length of FuzzHistoryQuery's schedule.
const historyEvents = 37

// FuzzHistoryQuery sends arbitrary limit and after_sequence strings to GET
// /schedules/{id}/history and checks the answer against CONTRACT §6 (and a NUL
// anywhere in the query is a 400 bad_request): limit
// defaults to 100 and is clamped to 1..500, a non-integer is 422
// invalid_limit; after_sequence must be a non-negative integer (else 422
// invalid_after_sequence); a page holds the events after the cursor in
// order, and next_cursor is its last sequence exactly when has_more.
func FuzzHistoryQuery(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"10", "0"}, {"0", "5"}, {"-3", "36"}, {"500", "37"}, {"99999", "1000"},
		{"abc", "1"}, {"1.5", "1"}, {"1e3", "1"}, {"9223372036854775807", "9223372036854775807"},
		{"99999999999999999999", "1"}, {"1", "-1"}, {"1", "x"}, {"+5", "+2"}, {" 5", "5 "},
		{"١٢", "٣"}, {"0x10", "010"}, {"5&limit=6", "1#2"}, {"\x00", "\xff"},
	} {
		f.Add(s[0], s[1])
	}
	h, db := fuzzServer(f)
	setup := func(path, body string, want int) {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:40000"
		req.Host = "127.0.0.1:8080" // and addressed to this machine (no DNS rebinding)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			f.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body.String())
		}
	}
	setup(v2+"/schedules", `{"schedule_id":"h","cron":"0 * * * *","action":{"workflow_type":"w"},"overlap_policy":"allow_all"}`, http.StatusCreated)
	// 1 ScheduleCreated + 36 backfilled fires.
	setup(v2+"/schedules/h/backfill", `{"from":"2026-07-01T00:00:00Z","to":"2026-07-02T12:00:00Z"}`, http.StatusAccepted)
	f.Fuzz(func(t *testing.T, limit, after string) {
		fx := &apiFixture{t: t, db: db, clock: schedtest.NewClock(t0), h: h}
		q := url.Values{}
		if limit != "" {
			q.Set("limit", limit)
		}
		if after != "" {
			q.Set("after_sequence", after)
		}
		res := fx.do(http.MethodGet, v2+"/schedules/h/history?"+q.Encode(), "")
		if res.Status >= 500 || !json.Valid([]byte(res.Raw)) {
			t.Fatalf("limit %q after %q: %d %s", limit, after, res.Status, res.Raw)
		}

		wantLimit, limitErr := int64(100), error(nil)
		if limit != "" {
			wantLimit, limitErr = strconv.ParseInt(limit, 10, 64)
		}
		wantAfter, afterErr := int64(0), error(nil)
		if after != "" {
			wantAfter, afterErr = strconv.ParseInt(after, 10, 64)
		}
		code := ""
		if e, ok := res.Body["error"].(map[string]any); ok {
			code = fmt.Sprint(e["code"])
		}
		switch {
		case strings.ContainsRune(limit+after, 0):
			// NUL is refused before any handler sees it (web/server.go).
			if res.Status != http.StatusBadRequest || code != "bad_request" {
				t.Fatalf("limit %q after %q hold NUL: want 400 bad_request, got %d %s", limit, after, res.Status, res.Raw)
			}
			return
		case limitErr != nil || afterErr != nil || wantAfter < 0:
			if res.Status != http.StatusUnprocessableEntity || (code != "invalid_limit" && code != "invalid_after_sequence") {
				t.Fatalf("limit %q after %q: want 422 invalid_limit or invalid_after_sequence, got %d %s", limit, after, res.Status, res.Raw)
			}
			if limitErr != nil && afterErr == nil && wantAfter >= 0 && code != "invalid_limit" {
				t.Fatalf("limit %q: want invalid_limit, got %s", limit, code)
			}
			if limitErr == nil && (afterErr != nil || wantAfter < 0) && code != "invalid_after_sequence" {
				t.Fatalf("after %q: want invalid_after_sequence, got %s", after, code)
			}
			return
		}
		if res.Status != http.StatusOK {
			t.Fatalf("limit %q after %q: %d %s", limit, after, res.Status, res.Raw)
		}
		var page struct {
			Events []struct {
				Sequence int64 `json:"sequence"`
			} `json:"events"`
			NextCursor *int64 `json:"next_cursor"`
			HasMore    bool   `json:"has_more"`
		}
		if err := json.Unmarshal([]byte(res.Raw), &page); err != nil {
			t.Fatal(err)
		}
		clamped := min(max(wantLimit, 1), 500)
		first := min(wantAfter, historyEvents) + 1
		wantCount := min(clamped, historyEvents-first+1)
		if int64(len(page.Events)) != wantCount {
			t.Fatalf("limit %q after %q: %d events, want %d", limit, after, len(page.Events), wantCount)
		}
		for i, e := range page.Events {
			if e.Sequence != first+int64(i) {
				t.Fatalf("limit %q after %q: event %d has sequence %d, want %d", limit, after, i, e.Sequence, first+int64(i))
			}
		}
		wantMore := first+wantCount-1 < historyEvents
		if page.HasMore != wantMore || (page.NextCursor != nil) != wantMore ||
			(wantMore && *page.NextCursor != page.Events[len(page.Events)-1].Sequence) {
			t.Fatalf("limit %q after %q: has_more %v next_cursor %v", limit, after, page.HasMore, page.NextCursor)
		}
	})
}
