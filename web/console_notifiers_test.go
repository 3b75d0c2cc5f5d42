package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Notifiers page without JavaScript: create (the secret shown once),
// send test, see the delivery in the log, edit, delete.
func TestConsoleNotifiers(t *testing.T) {
	t.Parallel()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &consoleClient{t: t, api: newNotifyAPI(t), jar: jar}
	var up atomic.Bool
	up.Store(true)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(rcv.Close)

	doc := c.page200("/waterline/notifiers")
	require.Equal(t, 1, doc.Find(tid("nav-notifiers")).Length(), "admins see the link")
	require.Equal(t, 1, doc.Find(tid("empty-state")).Length())
	form := formValues(doc.Find(tid("notifier-form")))
	require.Equal(t, []string{"run_failed", "run_timed_out"}, form["events"], "sensible default events")

	form.Set("name", "ops")
	form.Set("url", "gopher://nope")
	p := c.post("/waterline/notifiers", form)
	require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
	require.Contains(t, fieldError(p.Doc, "url"), "http")
	require.Equal(t, "ops", p.Doc.Find(tid("notifier-name")).AttrOr("value", ""), "the form keeps what was typed")

	form.Set("url", rcv.URL+"/hook")
	form.Set("label_selector", "team=billing\n")
	p = c.post("/waterline/notifiers", form)
	require.Equal(t, http.StatusCreated, p.Status, p.Raw)
	secret := textOf(p.Doc.Find(tid("secret-value")))
	require.True(t, strings.HasPrefix(secret, "whsec_"), secret)
	doc = c.page200("/waterline/notifiers/ops")
	require.Zero(t, doc.Find(tid("notifier-secret")).Length(), "the secret is shown once")
	require.Equal(t, 1, doc.Find(tid("deliveries-empty")).Length())

	loc := seeOther(t, c.post("/waterline/notifiers/ops/test", nil))
	require.Equal(t, "/waterline/notifiers/ops", loc)
	doc = c.page200(loc)
	require.Contains(t, textOf(doc.Find(tid("flash"))), "Test event delivered to ops (HTTP 200)")
	rows := doc.Find(tid("delivery-row"))
	require.Equal(t, 1, rows.Length())
	require.Equal(t, "delivered", rows.AttrOr("data-status", ""))
	require.Equal(t, "200", textOf(rows.Find(tid("delivery-http"))))

	up.Store(false)
	doc = c.page200(seeOther(t, c.post("/waterline/notifiers/ops/test", nil)))
	require.Contains(t, textOf(doc.Find(tid("flash"))), "failed (HTTP 500): receiver answered 500")
	require.Equal(t, "dead", doc.Find(tid("delivery-row")).First().AttrOr("data-status", ""), "newest first")

	edit := formValues(doc.Find(tid("notifier-form")))
	require.Equal(t, "team=billing", edit.Get("label_selector"))
	edit.Set("format", "slack")
	edit["events"] = []string{"backfill_finished"}
	doc = c.page200(seeOther(t, c.post("/waterline/notifiers/ops", edit)))
	require.Contains(t, textOf(doc.Find(tid("flash"))), "Notifier saved.")
	require.Equal(t, []string{"backfill_finished"}, formValues(doc.Find(tid("notifier-form")))["events"])
	edit["events"] = nil
	p = c.post("/waterline/notifiers/ops", edit)
	require.Equal(t, http.StatusUnprocessableEntity, p.Status)
	require.Contains(t, fieldError(p.Doc, "events"), "at least one")

	doc = c.page200("/waterline/notifiers")
	require.Equal(t, "slack", textOf(doc.Find(tid("notifier-row")).Find(tid("notifier-format"))))

	doc = c.page200(seeOther(t, c.post("/waterline/notifiers/ops/delete", url.Values{})))
	require.Contains(t, textOf(doc.Find(tid("flash"))), "Notifier ops deleted.")
	require.Equal(t, 1, doc.Find(tid("empty-state")).Length())
}
