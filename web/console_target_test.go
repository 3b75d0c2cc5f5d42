package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// The console's target: chosen in the form, the secret write-only (never
// rendered, shown as "set", kept by an edit that leaves it empty), the
// schedule page naming the kind and host only.
func TestConsoleHTTPTarget(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		const secret = "console-secret-0123456789"
		form := url.Values{"schedule_id": {"hook"}, "cron_expressions": {"0 2 * * *"}, "workflow_type": {"billing.Close"},
			"target.kind": {"http"}, "target.url": {"http://127.0.0.1:9/run"}, "target.method": {"PUT"}}
		p := c.post("/waterline/schedules", form)
		require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
		require.Contains(t, fieldError(p.Doc, "target.url"), "--allow-private-targets")

		form.Set("target.url", "https://hooks.example.com/close?token=abc")
		form.Set("target.secret", secret)
		form.Set("target.headers", "X-Team=billing")
		form.Set("target.timeout_seconds", "45")
		p = c.post("/waterline/schedules", form)
		require.Equal(t, "/waterline/schedules/hook", seeOther(t, p))

		page := c.get("/waterline/schedules/hook")
		require.NotContains(t, page.Raw, secret)
		require.NotContains(t, page.Raw, "token=abc", "the schedule page shows the host, not the path")
		require.Equal(t, "HTTP PUT to hooks.example.com (timeout 45 s) · signed (secret set)", textOf(page.Doc.Find(tid("fact-target"))))

		edit := c.page200("/waterline/schedules/hook/edit")
		require.Equal(t, "", attrOf(t, edit.Find(tid("input-target.secret")), "value"), "the secret is never rendered")
		require.Equal(t, 1, edit.Find(tid("target-secret-set")).Length())
		values := formValues(edit.Find(tid("schedule-form")))
		require.Equal(t, "http", values.Get("target.kind"))
		require.Equal(t, "X-Team=billing", values.Get("target.headers"))

		p = c.post("/waterline/schedules/hook/edit", values)
		require.Equal(t, "/waterline/schedules/hook", seeOther(t, p))
		require.Contains(t, textOf(c.page200("/waterline/schedules/hook").Find(tid("flash"))), "Nothing to save", "an empty secret keeps the stored one")

		values.Set("target.secret", "rotated-secret-0123456789")
		p = c.post("/waterline/schedules/hook/edit", values)
		require.Equal(t, "/waterline/schedules/hook", seeOther(t, p))
		events := c.history("default", "hook")
		require.Len(t, events, 2)
		require.Equal(t, []any{"action"}, events[1]["payload"].(map[string]any)["changed_fields"], "a rotation is recorded as a change")
		s := c.api.must(200, "GET", v2+"/schedules/hook/history", "")
		raw := c.api.do("GET", v2+"/schedules/hook/history", "").Raw
		require.NotContains(t, raw, "rotated-secret")
		require.NotContains(t, raw, secret)
		require.NotNil(t, s)

		values.Set("target.kind", "worker")
		values.Del("target.secret")
		p = c.post("/waterline/schedules/hook/edit", values)
		require.Equal(t, "/waterline/schedules/hook", seeOther(t, p))
		got := c.api.must(200, "GET", v2+"/schedules/hook", "")
		require.Equal(t, map[string]any{"kind": "worker"}, got["action"].(map[string]any)["target"])
	})
}
