package views

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/stretchr/testify/require"
)

func TestLayoutModalFlashAndHTMXConfig(t *testing.T) {
	t.Parallel()
	l := testLayout
	l.Flash = &Flash{Kind: "ok", Message: "Started run", LinkURL: "/waterline/runs/01RUN", LinkLabel: "01RUN"}
	doc := render(t, Home(l))

	flash := doc.Find(testid("flash"))
	require.True(t, flash.HasClass("flash-ok"))
	require.Equal(t, "Started run 01RUN", text(flash))
	require.Equal(t, "/waterline/runs/01RUN", attr(t, flash.Find(testid("flash-link")), "href"))

	modal := doc.Find("dialog#modal")
	require.Equal(t, 1, modal.Length())
	require.Equal(t, 1, modal.Find("#modal-body").Length())
	require.Equal(t, "dialog", attr(t, doc.Find(testid("modal-close")).Closest("form"), "method"),
		"the dialog closes without script")

	toast := doc.Find(testid("toast"))
	require.Equal(t, "alert", attr(t, toast, "role"))
	_, hidden := toast.Attr("hidden")
	require.True(t, hidden, "the toast waits for a failed htmx request")

	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(attr(t, doc.Find(`meta[name="htmx-config"]`), "content")), &cfg))
	require.Equal(t, false, cfg["allowEval"])
	require.Equal(t, false, cfg["includeIndicatorStyles"])

	var headers map[string]string
	require.NoError(t, json.Unmarshal([]byte(attr(t, doc.Find("body"), "hx-headers")), &headers))
	require.Equal(t, "tok-123", headers["X-CSRF-Token"])

	require.Equal(t, "default", text(doc.Find(testid("namespace")).Find("strong")))
	// The switcher is a GET form (redesigned from a list of links, issue
	// 21): a select of the namespaces, the current one selected.
	l.Namespaces, l.NamespaceURL, l.ReturnTo = []string{"billing", "default"}, "/waterline/namespace", "/waterline/runs"
	doc = render(t, Home(l))
	form := doc.Find(testid("namespace-switcher"))
	require.Equal(t, "get", attr(t, form, "method"))
	require.Equal(t, "/waterline/namespace", attr(t, form, "action"))
	require.Equal(t, "/waterline/runs", attr(t, form.Find(`input[name="return_to"]`), "value"))
	require.Equal(t, []string{"billing", "default"}, form.Find("option").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("value", "") }))
	require.Equal(t, "default", text(form.Find("option[selected]")))
	require.Equal(t, "default", text(form.Find(testid("namespace"))))
	require.Equal(t, 1, form.Find(testid("namespace-option")).Length())
	require.Equal(t, 1, form.Find("noscript").Length(), "a Switch button without JavaScript")
}

// Every page must live under "script-src 'self'; style-src 'self'": no inline
// scripts, no event-handler or style attributes, no htmx hx-on handlers.
func TestPagesAreCSPSafe(t *testing.T) {
	t.Parallel()
	reg := sampleRegistry()
	reg.Rows[0].Outcome = &TriggerOutcomeView{Outcome: "triggered", RunURL: "/r"}
	bf := sampleBackfill()
	bf.Result = &BackfillResultView{DryRun: true, Count: 1, Occurrences: []BackfillOccurrenceView{{Time: Moment{Text: "t"}}}}
	form := sampleForm()
	form.Errors = map[string]string{"timezone": "bad"}
	pages := map[string]templ.Component{
		"home":     Home(testLayout),
		"error":    ErrorPage(testLayout, ErrorView{Title: "Not Found", Fields: map[string]string{"a": "b"}}),
		"registry": RegistryPage(testLayout, reg),
		"empty":    RegistryPage(testLayout, RegistryView{}),
		"detail":   ScheduleDetailPage(testLayout, sampleDetail()),
		"form":     ScheduleFormPage(testLayout, form),
		"backfill": BackfillPage(testLayout, bf),
		"history":  HistoryPage(testLayout, HistoryView{Events: historyEvents(1, 3), HasMore: true, MoreURL: "/m"}),
		"runs":     RunsPage(testLayout, RunsView{Rows: []RunRowView{{RunID: "r"}}}),
		"run":      RunDetailPage(testLayout, RunDetailView{RunID: "r", CanCancel: true, CanTerminate: true}),
		"delete":   DeleteConfirmPage(testLayout, DeleteView{ScheduleID: "s"}),
	}
	for name, page := range pages {
		doc := render(t, page)
		doc.Find("script").Each(func(_ int, s *goquery.Selection) {
			src, ok := s.Attr("src")
			require.True(t, ok && strings.HasPrefix(src, "/static/"), "%s: inline script", name)
		})
		require.Zero(t, doc.Find("style").Length(), "%s: <style>", name)
		doc.Find("*").Each(func(_ int, s *goquery.Selection) {
			for _, a := range s.Nodes[0].Attr {
				require.False(t, strings.HasPrefix(a.Key, "on"), "%s: %s attribute on <%s>", name, a.Key, s.Nodes[0].Data)
				require.False(t, strings.HasPrefix(a.Key, "hx-on"), "%s: %s", name, a.Key)
				require.NotEqual(t, "style", a.Key, "%s: style attribute on <%s>", name, s.Nodes[0].Data)
				require.False(t, strings.HasPrefix(a.Val, "js:") || strings.HasPrefix(a.Val, "javascript:"), "%s: %s=%q", name, a.Key, a.Val)
			}
		})
		// Buttons are buttons and state changes are POSTs with the token.
		doc.Find(`form[method="post"]`).Each(func(_ int, f *goquery.Selection) {
			require.Equal(t, 1, f.Find(`input[name="_csrf"]`).Length(), "%s: form %s lacks _csrf", name, f.AttrOr("action", "?"))
			require.GreaterOrEqual(t, f.Find(`button[type="submit"]`).Length(), 1, "%s: form without submit button", name)
		})
		ids := map[string]bool{}
		doc.Find("[id]").Each(func(_ int, s *goquery.Selection) {
			id := s.AttrOr("id", "")
			require.False(t, ids[id], "%s: duplicate id %q", name, id)
			ids[id] = true
		})
	}
}
