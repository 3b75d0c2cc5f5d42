package views

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/stretchr/testify/require"
)

const evil = `<script>alert(1)</script>`

// User-controlled text (IDs, notes, labels, payloads, form values, errors)
// renders as text: no element is created from it.
func TestUserTextIsEscaped(t *testing.T) {
	t.Parallel()
	row := ScheduleRowView{
		ScheduleID: evil, DetailURL: "/waterline/schedules/x", Status: "active", Note: evil,
		SpecDescription: evil, Timezone: evil, WorkflowType: evil, Labels: []KV{{evil, evil}},
		LastOutcome: "skipped", LastReason: evil, Selectable: true, SelectColumn: true, Actions: allActions(evil),
		Notice: &Flash{Kind: "error", Message: evil},
	}
	reg := RegistryView{Filters: RegistryFilters{Q: evil, Label: evil}, Rows: []ScheduleRowView{row}, CanBulk: true}
	detail := sampleDetail()
	detail.ScheduleID, detail.Note, detail.Labels, detail.Memo = evil, evil, []KV{{evil, evil}}, []KV{{"k", evil}}
	form := sampleForm()
	form.Values.Fields["note"], form.Values.Fields["labels"], form.Values.Input, form.Values.ScheduleID = evil, "team="+evil, evil, evil
	form.Errors = map[string]string{"note": evil, evil: evil}
	history := HistoryView{ScheduleID: evil, Events: []HistoryEventView{{
		Sequence: 1, EventType: evil, Actor: evil, Summary: evil, Payload: `{"note": "` + evil + `"}`,
	}}}
	run := RunDetailView{RunID: evil, Input: evil, Output: evil, FailureMessage: evil,
		Events: []RunEventView{{Sequence: 1, EventType: evil, Summary: evil, Payload: evil}}}

	cases := map[string]struct {
		c    templ.Component
		text string // a data-testid whose text must be the raw string
	}{
		"registry note":   {RegistryPage(testLayout, reg), "schedule-note"},
		"registry id":     {RegistryPage(testLayout, reg), "schedule-link"},
		"registry labels": {RegistryPage(testLayout, reg), "chip"},
		"detail note":     {ScheduleDetailPage(testLayout, detail), "fact-note"},
		"detail id":       {ScheduleDetailPage(testLayout, detail), "schedule-id"},
		"form note error": {ScheduleFormPage(testLayout, form), "field-error"},
		"form input":      {ScheduleFormPage(testLayout, form), "input-input"},
		"history summary": {HistoryPage(testLayout, history), "event-summary"},
		"history actor":   {HistoryPage(testLayout, history), "event-actor"},
		"run failure":     {RunDetailPage(testLayout, run), "run-failure"},
		"flash":           {Home(LayoutView{Flash: &Flash{Kind: "ok", Message: evil}}), "flash"},
	}
	for name, tc := range cases {
		doc := render(t, tc.c)
		// Only the layout's two external scripts exist.
		require.Equal(t, 2, doc.Find("script").Length(), name)
		doc.Find("script").Each(func(_ int, s *goquery.Selection) {
			require.Empty(t, strings.TrimSpace(s.Text()), name)
		})
		found := false
		doc.Find(testid(tc.text)).Each(func(_ int, s *goquery.Selection) {
			if strings.Contains(s.Text(), evil) {
				found = true
			}
		})
		require.True(t, found, "%s: %q shows the text literally", name, tc.text)
	}

	// Attributes keep the raw value too (escaped on the wire, intact in the DOM).
	doc := render(t, RegistryPage(testLayout, reg))
	require.Equal(t, evil, attr(t, doc.Find(testid("schedule-row")), "data-schedule-id"))
	require.Equal(t, evil, attr(t, doc.Find(testid("delete-confirm-input")), "data-confirm-text"))
	require.Equal(t, evil, attr(t, doc.Find(testid("bulk-select")), "value"))
	require.Equal(t, evil, attr(t, doc.Find(testid("filter-q")), "value"))
}

func TestUnsafeURLsAreNeutralised(t *testing.T) {
	t.Parallel()
	row := ScheduleRowView{ScheduleID: "s", Status: "active", DetailURL: "javascript:alert(1)"}
	doc, _ := renderIn(t, "<table><tbody>", "</tbody></table>", ScheduleRow("tok", row))
	require.NotContains(t, attr(t, doc.Find(testid("schedule-link")), "href"), "javascript:")
}
