package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// Issue 37, major 5, through the real router without JavaScript: a
// notifier whose receiver fails reads "failing since …" with its last
// error and pending and dead counts, on the Notifiers list, on its page
// and as a banner on the registry; its dead deliveries go back one or all;
// once a delivery gets through, it reads "delivering" and the banner goes.
func TestConsoleShowsNotifierHealthAndRedelivers(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		var status atomic.Int32
		status.Store(http.StatusBadGateway)
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(int(status.Load())) }))
		t.Cleanup(rcv.Close)
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		c := &consoleClient{t: t, api: newNotifyAPIOn(t, db), jar: jar}
		c.api.must(201, "POST", v2+"/notifiers", `{"name":"pager","url":"`+rcv.URL+`","events":["run_failed"]}`)

		doc := c.page200("/waterline/notifiers")
		require.Equal(t, "idle", attrOf(t, doc.Find(tid("notifier-health")), "data-state"))
		require.Zero(t, c.page200("/waterline/schedules").Find(tid("alerts-warning")).Length(), "nothing attempted, nothing to warn about")

		for range 2 {
			c.post("/waterline/notifiers/pager/test", url.Values{})
		}
		doc = c.page200("/waterline/notifiers")
		require.Equal(t, "failing", attrOf(t, doc.Find(tid("notifier-health")), "data-state"))
		require.Contains(t, textOf(doc.Find(tid("notifier-last-error"))), "receiver answered 502")
		require.Equal(t, "0", textOf(doc.Find(tid("notifier-pending"))))
		require.Equal(t, "2", textOf(doc.Find(tid("notifier-dead"))))

		banner := c.page200("/waterline/schedules").Find(tid("alerts-warning"))
		require.Contains(t, textOf(banner), "Alerts are not being delivered: notifier pager is failing since")
		require.Contains(t, textOf(banner), "0 pending, 2 dead. Last error: receiver answered 502.")
		require.Equal(t, "/waterline/notifiers", attrOf(t, banner.Find(tid("alerts-warning-link")), "href"))

		doc = c.page200("/waterline/notifiers/pager")
		require.Equal(t, "failing", attrOf(t, doc.Find(tid("notifier-health-panel")), "data-state"))
		rows := doc.Find(tid("delivery-row") + `[data-status="dead"]`)
		require.Equal(t, 2, rows.Length())
		require.Equal(t, 2, rows.Find(tid("redeliver")).Length(), "every dead delivery can go back")
		first := attrOf(t, rows.First(), "data-id")
		p := c.post("/waterline/notifiers/pager/deliveries/"+first+"/redeliver", formValues(rows.First().Find("form")))
		require.Equal(t, "/waterline/notifiers/pager", seeOther(t, p))
		doc = c.page200("/waterline/notifiers/pager")
		require.Equal(t, "Delivery "+first+" is pending again.", textOf(doc.Find(tid("flash"))))
		require.Equal(t, "1", textOf(doc.Find(tid("notifier-pending"))))
		require.Equal(t, "1", textOf(doc.Find(tid("notifier-dead"))))

		p = c.post("/waterline/notifiers/pager/redeliver", formValues(doc.Find(tid("redeliver-all-form"))))
		require.Equal(t, "/waterline/notifiers/pager", seeOther(t, p))
		doc = c.page200("/waterline/notifiers/pager")
		require.Equal(t, "1 dead delivery is pending again.", textOf(doc.Find(tid("flash"))))
		require.Equal(t, "2", textOf(doc.Find(tid("notifier-pending"))))
		require.Zero(t, doc.Find(tid("redeliver-all-form")).Length(), "nothing dead: no redeliver-all")

		// The API's face of the same.
		health := c.api.must(200, "GET", v2+"/notifiers/pager", "")["health"].(map[string]any)
		require.Equal(t, "failing", health["state"])
		require.EqualValues(t, 2, health["pending"])
		require.EqualValues(t, 0, health["dead"])
		res := c.api.must(200, "POST", v2+"/notifiers/pager/redeliver", `{"reason":"again"}`)
		require.Equal(t, map[string]any{"redelivered": 0.0, "more": false}, res)
		conflict := c.api.do("POST", v2+"/notifiers/pager/deliveries/"+first+"/redeliver", "")
		require.Equal(t, 409, conflict.Status, conflict.Raw)
		require.Equal(t, "delivery_not_dead", conflict.Body["error"].(map[string]any)["code"])
		require.Equal(t, 404, c.api.do("POST", v2+"/notifiers/pager/deliveries/01ZZZZZZZZZZZZZZZZZZZZZZZZ/redeliver", "").Status)

		// The receiver is back: one delivery gets through.
		status.Store(http.StatusOK)
		c.post("/waterline/notifiers/pager/test", url.Values{})
		doc = c.page200("/waterline/notifiers")
		require.Equal(t, "ok", attrOf(t, doc.Find(tid("notifier-health")), "data-state"))
		require.Zero(t, c.page200("/waterline/schedules").Find(tid("alerts-warning")).Length(), "the banner goes once alerts get through")
	})
}
