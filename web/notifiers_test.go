package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// newNotifyAPI serves a service whose notifiers may reach this machine:
// the tests' receivers listen on 127.0.0.1.
func newNotifyAPI(t *testing.T) *apiFixture {
	return newNotifyAPIOn(t, dbtest.SQLite(t))
}

// newNotifyAPIOn is newNotifyAPI on a database of the caller's.
func newNotifyAPIOn(t *testing.T, db *bun.DB) *apiFixture {
	clock := schedtest.NewClock(t0)
	svc := scheduling.New(scheduling.Config{DB: db, Clock: clock, Rand: schedtest.Rand{}, Logger: slog.New(slog.DiscardHandler),
		Notify: scheduling.NotifyConfig{AllowPrivate: true, PublicURL: "https://tideline.example.com"}})
	h := web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test", Clock: clock})
	return &apiFixture{t: t, db: db, clock: clock, h: h}
}

func TestNotifierAPILifecycle(t *testing.T) {
	t.Parallel()
	f := newNotifyAPI(t)
	var hits atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		require.NotEmpty(t, r.Header.Get("Tideline-Signature"))
	}))
	t.Cleanup(rcv.Close)

	created := f.must(201, "POST", v2+"/notifiers", `{"name":"ops","url":"`+rcv.URL+`","events":["run_failed","fire_late"],"label_selector":{"team":"billing"}}`)
	secret, _ := created["secret"].(string)
	require.Len(t, secret, len("whsec_")+64, "a generated secret is shown on create")
	require.Equal(t, "json", created["format"])

	got := f.must(200, "GET", v2+"/notifiers/ops", "")
	require.NotContains(t, got, "secret", "never shown again")
	list := f.must(200, "GET", v2+"/notifiers", "")
	require.Len(t, list["notifiers"], 1)
	require.NotContains(t, list["notifiers"].([]any)[0], "secret")

	res := f.do("POST", v2+"/notifiers", `{"name":"ops","url":"`+rcv.URL+`","events":["run_failed"]}`)
	require.Equal(t, 409, res.Status, res.Raw)
	require.Equal(t, "notifier_already_exists", res.Body["error"].(map[string]any)["code"])

	res = f.do("POST", v2+"/notifiers", `{"name":"x","url":"gopher://a","events":["nope"],"format":"xml"}`)
	require.Equal(t, 422, res.Status, res.Raw)
	fields := res.Body["error"].(map[string]any)["fields"].(map[string]any)
	require.Contains(t, fields, "url")
	require.Contains(t, fields, "events")
	require.Contains(t, fields, "format")

	res = f.do("POST", v2+"/notifiers", `{"name":"x"}`, "Content-Type", "text/plain")
	require.Equal(t, 415, res.Status, res.Raw)

	patched := f.must(200, "PATCH", v2+"/notifiers/ops", `{"format":"slack","events":["backfill_finished"]}`)
	require.Equal(t, "slack", patched["format"])
	require.NotContains(t, patched, "secret")
	rotated := f.must(200, "PATCH", v2+"/notifiers/ops", `{"rotate_secret":true}`)
	require.NotEqual(t, secret, rotated["secret"])
	res = f.do("PATCH", v2+"/notifiers/ops", `{"name":"renamed"}`)
	require.Equal(t, 422, res.Status, res.Raw)

	d := f.must(200, "POST", v2+"/notifiers/ops/test", "")
	require.Equal(t, "delivered", d["status"])
	require.Equal(t, "test", d["event"])
	require.EqualValues(t, 200, d["last_status_code"])
	require.EqualValues(t, 1, hits.Load())

	log := f.must(200, "GET", v2+"/notifiers/ops/deliveries", "")
	require.Len(t, log["deliveries"], 1)
	require.Equal(t, d["id"], log["deliveries"].([]any)[0].(map[string]any)["id"])
	require.Equal(t, false, log["has_more"])
	res = f.do("GET", v2+"/notifiers/ops/deliveries?limit=1000", "")
	require.Equal(t, 422, res.Status)

	res = f.do("GET", v2+"/notifiers/ops", "", "X-Namespace", "other")
	require.Equal(t, 404, res.Status, "another namespace's notifier does not exist")
	require.Equal(t, "notifier_not_found", res.Body["error"].(map[string]any)["code"])

	res = f.do("DELETE", v2+"/notifiers/ops", "")
	require.Equal(t, 204, res.Status, res.Raw)
	require.Equal(t, 404, f.do("GET", v2+"/notifiers/ops", "").Status)
}

// Without --allow-private-notifiers a receiver on this machine is refused.
func TestNotifierAPIRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	f := newAPI(t, dbtest.SQLite(t), "")
	for _, url := range []string{"http://127.0.0.1:8080/hook", "http://[::1]/x", "http://10.0.0.5/x", "http://169.254.169.254/latest/meta-data", "http://localhost:9/x"} {
		res := f.do("POST", v2+"/notifiers", `{"name":"n","url":"`+url+`","events":["run_failed"]}`)
		require.Equal(t, 422, res.Status, "%s: %s", url, res.Raw)
		require.Contains(t, res.Body["error"].(map[string]any)["fields"], "url")
	}
}

func TestNotifierAPIShapesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	_, _, doc := openAPIFixture(t)
	f := newNotifyAPI(t)
	rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(rcv.Close)
	schema := func(name string) any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	same := func(name string, body map[string]any) {
		t.Helper()
		require.Equal(t, oapiProperties(t, doc, schema(name)), oapiKeys(body), "fields of %s", name)
	}
	// The secret is only in the answer that creates it, the health only in
	// reads: together they are the schema.
	created := f.must(201, "POST", v2+"/notifiers", `{"name":"ops","url":"`+rcv.URL+`","events":["run_failed"]}`)
	read := f.must(200, "GET", v2+"/notifiers/ops", "")
	require.Contains(t, read, "health")
	require.NotContains(t, created, "health")
	created["health"] = read["health"]
	same("Notifier", created)
	same("NotifierHealth", read["health"].(map[string]any))
	same("NotifierList", f.must(200, "GET", v2+"/notifiers", ""))
	same("Delivery", f.must(200, "POST", v2+"/notifiers/ops/test", ""))
	same("DeliveryPage", f.must(200, "GET", v2+"/notifiers/ops/deliveries", ""))
}
