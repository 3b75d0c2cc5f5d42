package views

import (
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
)

func TestRegistryRowsShowStatusNextFireAndLastResult(t *testing.T) {
	t.Parallel()
	doc := render(t, RegistryPage(testLayout, sampleRegistry()))

	rows := doc.Find(testid("schedule-row"))
	require.Equal(t, 2, rows.Length())

	first := rows.Eq(0)
	require.Equal(t, "nightly.report", attr(t, first, "data-schedule-id"))
	require.Equal(t, "row-nightly.report", attr(t, first, "id"))
	require.Equal(t, "/waterline/schedules/nightly.report", attr(t, first.Find(testid("schedule-link")), "href"))
	require.Equal(t, "nightly.report", text(first.Find(testid("schedule-link"))))
	require.Equal(t, "reports.Nightly", text(first.Find(testid("workflow-type"))))
	require.Equal(t, "At 02:00 every day", text(first.Find(testid("spec")).Find(".line-main")))
	require.Equal(t, "America/New_York", text(first.Find(testid("timezone"))), "the zone has a line of its own")
	require.Equal(t, "overdue", attr(t, first, "data-health"))
	require.Equal(t, "overdue", text(first.Find(testid("health-state"))))
	require.Equal(t, "due 3 min ago — not fired yet", text(first.Find(testid("row-detail"))))
	require.Equal(t, "overdue", attr(t, first.Find(testid("row-detail")), "data-kind"))

	badge := first.Find(testid("status-badge"))
	require.Equal(t, "active", text(badge))
	require.True(t, badge.HasClass("badge-active"), "badge class follows the status")

	next := first.Find(testid("next-fire"))
	require.Equal(t, "2026-07-16T06:00:00.000000Z", attr(t, next.Find("time"), "datetime"))
	require.Equal(t, "2026-07-16 02:00 EDT", text(next.Find("time")))
	require.Equal(t, "3 min ago", text(next.Find(testid("relative"))))
	require.Equal(t, "overdue", text(next.Find(testid("overdue"))))

	last := first.Find(testid("last-result"))
	require.Equal(t, "triggered", text(last.Find(testid("outcome-badge"))))
	require.True(t, last.Find(testid("outcome-badge")).HasClass("badge-triggered"))
	// The last result is compact (relative), the full time in its tooltip.
	require.Equal(t, "1 day ago", text(last.Find("time")))
	require.Equal(t, "2026-07-15 02:00 EDT", attr(t, last.Find("time"), "title"))
	require.NotEmpty(t, attr(t, last.Find("time"), "datetime"))
	require.Equal(t, "41", text(first.Find(testid("fires-count"))))
	require.Equal(t, "2", text(first.Find(testid("skips-count"))))
	require.Equal(t, "team=billing", text(first.Find(testid("chip"))))

	second := rows.Eq(1)
	require.Equal(t, "paused", text(second.Find(testid("status-badge"))))
	require.True(t, second.Find(testid("status-badge")).HasClass("badge-paused"))
	require.Zero(t, second.Find(testid("overdue")).Length(), "a future next fire is not overdue")
	require.Equal(t, "in 4 min", text(second.Find(testid("next-fire")).Find(testid("relative"))))
	require.Equal(t, "upstream outage", text(second.Find(testid("schedule-note"))))
	require.Equal(t, "skipped", text(second.Find(testid("outcome-badge"))))
	require.Equal(t, "overlap policy skip", text(second.Find(testid("last-reason"))))
	// The latest error is on the page, linked to its run, not a tooltip.
	detail := second.Find(testid("row-detail"))
	require.Equal(t, "upstream: connection refused", text(detail))
	require.Equal(t, "/waterline/runs/r2", attr(t, detail.Find("a"), "href"))
	require.Equal(t, "failing", text(second.Find(testid("health-state"))))
	require.Equal(t, "2 failures in a row", text(second.Find(testid("consecutive-failures"))))
	require.Zero(t, second.Find("[title='upstream: connection refused']").Length(), "no longer only a tooltip")
}

func TestRegistryRowNeverFiredAndNeverFires(t *testing.T) {
	t.Parallel()
	row := ScheduleRowView{ScheduleID: "once", Status: "active", SpecDescription: "At 00:00 on day 30 of February"}
	doc, _ := renderIn(t, "<table><tbody>", "</tbody></table>", ScheduleRow("tok", row))
	require.Equal(t, "never", text(doc.Find(testid("next-fire"))))
	require.Equal(t, "never fired", text(doc.Find(testid("last-result"))))
	require.Zero(t, doc.Find(testid("bulk-select")).Length(), "not selectable")
	require.Zero(t, doc.Find(testid("schedule-actions")).Children().Length(), "no flags, no actions")
}

func TestRegistryRowActionsFollowCanFlags(t *testing.T) {
	t.Parallel()
	actions := map[string]func(*ScheduleActions) *bool{
		"action-pause":    func(a *ScheduleActions) *bool { return &a.CanPause },
		"action-resume":   func(a *ScheduleActions) *bool { return &a.CanResume },
		"action-trigger":  func(a *ScheduleActions) *bool { return &a.CanTrigger },
		"action-backfill": func(a *ScheduleActions) *bool { return &a.CanBackfill },
		"action-delete":   func(a *ScheduleActions) *bool { return &a.CanDelete },
		"action-edit":     func(a *ScheduleActions) *bool { return &a.CanEdit },
	}
	for name, flag := range actions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			only := ScheduleActions{ScheduleID: "s1"}
			all := allActions("s1")
			only.PauseURL, only.ResumeURL, only.TriggerURL = all.PauseURL, all.ResumeURL, all.TriggerURL
			only.BackfillURL, only.DeleteURL, only.EditURL = all.BackfillURL, all.DeleteURL, all.EditURL
			*flag(&only) = true
			row := ScheduleRowView{ScheduleID: "s1", Status: "active", Actions: only}
			doc, _ := renderIn(t, "<table><tbody>", "</tbody></table>", ScheduleRow("tok", row))
			for other := range actions {
				got := doc.Find(testid(other)).Length()
				if other == name {
					require.Equal(t, 1, got, "%s is allowed", other)
				} else {
					require.Zero(t, got, "%s is not allowed", other)
				}
			}
			// Every form is a real POST carrying the CSRF token.
			doc.Find("form").Each(func(_ int, f *goquery.Selection) {
				require.Equal(t, "post", attr(t, f, "method"))
				require.Equal(t, "tok", attr(t, f.Find(`input[name="_csrf"]`), "value"))
			})
		})
	}
}

func TestRegistryRowFormsPostAndSwapTheRow(t *testing.T) {
	t.Parallel()
	row := ScheduleRowView{ScheduleID: "s.1", Status: "active", Actions: allActions("s.1")}
	doc, raw := renderIn(t, "<table><tbody>", "</tbody></table>", ScheduleRow("tok", row))
	require.Regexp(t, `^<tr[ >]`, raw, "the HX answer to a row action is the row itself")

	cases := map[string]string{
		"action-pause":   "/waterline/schedules/s.1/pause",
		"action-trigger": "/waterline/schedules/s.1/trigger",
		"action-delete":  "/waterline/schedules/s.1/delete",
		"action-resume":  "/waterline/schedules/s.1/resume",
	}
	for id, url := range cases {
		form := doc.Find(testid(id))
		if !form.Is("form") {
			form = form.Find("form")
		}
		require.Equal(t, url, attr(t, form, "action"), id)
		require.Equal(t, url, attr(t, form, "hx-post"), id)
		require.Equal(t, "closest tr", attr(t, form, "hx-target"), id)
		require.Equal(t, "outerHTML", attr(t, form, "hx-swap"), id)
	}

	// Pause asks for a reason; trigger confirms in a disclosure and offers
	// an overlap override; delete needs the ID typed.
	require.Equal(t, "reason", attr(t, doc.Find(testid("pause-reason")), "name"))
	require.Equal(t, "details", goquery.NodeName(doc.Find(testid("action-trigger"))))
	require.Equal(t, 7, doc.Find(testid("trigger-overlap-policy")).Find("option").Length())
	require.Equal(t, "Schedule default (skip)", text(doc.Find(testid("trigger-overlap-policy")).Find("option").First()))
	input := doc.Find(testid("delete-confirm-input"))
	require.Equal(t, "confirm", attr(t, input, "name"))
	require.Equal(t, "s.1", attr(t, input, "data-confirm-text"))
	_, disabled := doc.Find(testid("delete-submit")).Attr("disabled")
	require.False(t, disabled, "the button must work without JavaScript")

	// History and backfill are links (full pages without JS) that htmx opens in the modal.
	for id, panel := range map[string]string{"action-history": "#history-panel", "action-backfill": "#backfill-panel"} {
		link := doc.Find(testid(id))
		require.Equal(t, "a", goquery.NodeName(link))
		require.Equal(t, attr(t, link, "href"), attr(t, link, "hx-get"))
		require.Equal(t, "#modal-body", attr(t, link, "hx-target"))
		require.Equal(t, panel, attr(t, link, "hx-select"))
	}
	require.Equal(t, "/waterline/schedules/s.1/edit", attr(t, doc.Find(testid("action-edit")), "href"))
}

func TestRegistryRowShowsNoticeAndTriggerOutcome(t *testing.T) {
	t.Parallel()
	row := ScheduleRowView{
		ScheduleID: "s1", Status: "active",
		Notice:  &Flash{Kind: "error", Message: "schedule is not paused"},
		Outcome: &TriggerOutcomeView{Outcome: "triggered", RunID: "01RUN", RunURL: "/waterline/runs/01RUN"},
	}
	doc, _ := renderIn(t, "<table><tbody>", "</tbody></table>", ScheduleRow("tok", row))
	require.Equal(t, "schedule is not paused", text(doc.Find(testid("row-notice"))))
	require.True(t, doc.Find(testid("row-notice")).HasClass("flash-error"))
	require.Equal(t, "/waterline/runs/01RUN", attr(t, doc.Find(testid("trigger-run-link")), "href"))
}

func TestTriggerOutcome(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   TriggerOutcomeView
		want string
	}{
		{TriggerOutcomeView{Outcome: "triggered", RunID: "01RUN", RunURL: "/waterline/runs/01RUN"}, "Started run 01RUN"},
		{TriggerOutcomeView{Outcome: "buffered", BufferDepth: 2}, "Buffered: it starts when the running one finishes (2 waiting)."},
		{TriggerOutcomeView{Outcome: "skipped", Reason: "overlap_policy_skip"}, "Skipped: overlap policy skip"},
	}
	for _, c := range cases {
		doc := render(t, TriggerOutcome(c.in))
		out := doc.Find(testid("trigger-outcome"))
		require.Equal(t, c.want, text(out))
		require.Equal(t, c.in.Outcome, attr(t, out, "data-outcome"))
	}
}

func TestRegistryFiltersBulkPagerAndRefresh(t *testing.T) {
	t.Parallel()
	v := sampleRegistry()
	doc := render(t, RegistryPage(testLayout, v))

	filters := doc.Find(testid("registry-filters"))
	require.Equal(t, "get", attr(t, filters, "method"))
	require.Equal(t, "paused", attr(t, doc.Find(testid("filter-status")).Find("option[selected]"), "value"))
	require.Equal(t, 5, doc.Find(testid("filter-status")).Find("option").Length())
	require.Equal(t, "sync", attr(t, doc.Find(testid("filter-q")), "value"))
	require.Equal(t, "team:billing", attr(t, doc.Find(testid("filter-label")), "value"))
	doc.Find("label[for]").Each(func(_ int, l *goquery.Selection) {
		id, _ := l.Attr("for")
		require.Equal(t, 1, doc.Find(`[id="`+id+`"]`).Length(), "label for=%q points at one input", id)
	})

	bulk := doc.Find(testid("bulk-form"))
	require.Equal(t, "bulk-form", attr(t, bulk, "id"))
	require.Equal(t, "/waterline/schedules/bulk", attr(t, bulk, "action"))
	require.Equal(t, "tok-123", attr(t, bulk.Find(`input[name="_csrf"]`), "value"))
	require.Equal(t, "pause", attr(t, doc.Find(testid("bulk-pause")), "value"))
	require.Equal(t, "resume", attr(t, doc.Find(testid("bulk-resume")), "value"))
	boxes := doc.Find(testid("bulk-select"))
	require.Equal(t, 2, boxes.Length())
	boxes.Each(func(i int, b *goquery.Selection) {
		require.Equal(t, "bulk-form", attr(t, b, "form"))
		require.Equal(t, "ids", attr(t, b, "name"))
		require.Equal(t, v.Rows[i].ScheduleID, attr(t, b, "value"))
	})

	require.Equal(t, v.Pager.NextURL, attr(t, doc.Find(testid("next-page")), "href"))
	require.Zero(t, doc.Find(testid("first-page")).Length())

	refresh := doc.Find(testid("autorefresh"))
	require.Equal(t, v.RefreshURL, attr(t, refresh, "hx-get"), "refresh keeps the filters")
	require.Equal(t, "every 10s", attr(t, refresh, "hx-trigger"))
	require.Equal(t, "#registry-results", attr(t, refresh, "hx-select"))
	require.Equal(t, "#registry-results", attr(t, refresh, "hx-target"))
	require.Equal(t, 1, doc.Find("#registry-results").Find(testid("schedules-table")).Length())
	require.Equal(t, "/waterline/schedules/new", attr(t, doc.Find(testid("new-schedule")), "href"))

	// A viewer sees neither the bulk bar nor checkboxes nor "New schedule".
	v.CanBulk, v.NewURL = false, ""
	for i := range v.Rows {
		v.Rows[i].Selectable, v.Rows[i].SelectColumn = false, false
	}
	doc = render(t, RegistryPage(testLayout, v))
	require.Zero(t, doc.Find("th.select, td.select").Length(), "no empty checkbox column for a viewer")
	require.Zero(t, doc.Find(testid("bulk-form")).Length())
	require.Zero(t, doc.Find(testid("bulk-select")).Length())
	require.Zero(t, doc.Find(testid("new-schedule")).Length())
	require.Equal(t, doc.Find("thead th").Length(), doc.Find(testid("schedule-row")).First().Find("td").Length(),
		"header and rows keep the same columns")
}

func TestRegistryEmptyStates(t *testing.T) {
	t.Parallel()
	v := RegistryView{Filters: RegistryFilters{Action: "/waterline/schedules"}, NewURL: "/waterline/schedules/new"}
	doc := render(t, RegistryPage(testLayout, v))
	empty := doc.Find(testid("empty-state"))
	require.Contains(t, text(empty), "No schedules yet.")
	require.Equal(t, "/waterline/schedules/new", attr(t, empty.Find(testid("empty-create")), "href"))
	require.Equal(t, "Create one", text(empty.Find(testid("empty-create"))))
	require.Zero(t, doc.Find(testid("schedules-table")).Length())
	require.Zero(t, doc.Find(testid("pager")).Length())

	v.NewURL = ""
	doc = render(t, RegistryPage(testLayout, v))
	require.Zero(t, doc.Find(testid("empty-create")).Length())
	require.Contains(t, text(doc.Find(testid("empty-state"))), "tideline schedule add")

	v.Filtered, v.ClearFiltersURL = true, "/waterline/schedules"
	doc = render(t, RegistryPage(testLayout, v))
	require.Contains(t, text(doc.Find(testid("empty-state"))), "No schedules match these filters.")
	require.Equal(t, "/waterline/schedules", attr(t, doc.Find(testid("clear-filters")), "href"))
}

func TestRegistryResultsIsTheRefreshFragment(t *testing.T) {
	t.Parallel()
	doc := render(t, RegistryResults("tok", sampleRegistry()))
	require.Equal(t, 1, doc.Find("#registry-results").Length())
	require.Equal(t, 2, doc.Find("#registry-results "+testid("schedule-row")).Length())
	require.Zero(t, doc.Find("header").Length(), "no layout in the fragment")
}

// A registry row keeps Resume/Pause… inline and puts the rest behind one ⋯
// menu (a <details> disclosure: no JavaScript needed); a lone History (a
// viewer's row) stays a button, and the detail page's bar has no menu.
func TestRegistryRowMenu(t *testing.T) {
	t.Parallel()
	row := ScheduleRowView{ScheduleID: "s.1", Status: "active", Actions: allActions("s.1")}
	doc, _ := renderIn(t, "<table><tbody>", "</tbody></table>", ScheduleRow("tok", row))
	actions := doc.Find(testid("schedule-actions"))
	menu := actions.Find(testid("row-menu"))
	require.Equal(t, "details", goquery.NodeName(menu))
	_, marked := menu.Attr("data-menu")
	require.True(t, marked, "console.js closes menus marked data-menu")
	require.Equal(t, "More actions for s.1", attr(t, menu.Find("summary").First(), "aria-label"))
	for _, id := range []string{"action-trigger", "action-backfill", "action-history", "action-edit", "action-delete"} {
		require.Equal(t, 1, menu.Find(testid(id)).Length(), "%s is in the menu", id)
	}
	for _, id := range []string{"action-pause", "action-resume"} {
		require.Equal(t, 1, actions.Find(testid(id)).Length(), id)
		require.Zero(t, menu.Find(testid(id)).Length(), "%s stays inline", id)
	}

	viewer := ScheduleRowView{ScheduleID: "v", Status: "active", Actions: ScheduleActions{ScheduleID: "v", HistoryURL: "/waterline/schedules/v/history"}}
	doc, _ = renderIn(t, "<table><tbody>", "</tbody></table>", ScheduleRow("tok", viewer))
	require.Zero(t, doc.Find(testid("row-menu")).Length(), "no menu for one action")
	require.Equal(t, "a", goquery.NodeName(doc.Find(testid("schedule-actions")).Children().First()))

	bar := render(t, ScheduleActionsBar("tok", allActions("s.1"), false))
	require.Zero(t, bar.Find(testid("row-menu")).Length(), "the detail page shows every action")
	require.Equal(t, 1, bar.Find(testid("action-trigger")).Length())
}

// A row action's result is a message beside the row, with a dismiss button.
func TestRegistryRowMessage(t *testing.T) {
	t.Parallel()
	row := ScheduleRowView{ScheduleID: "s1", Status: "paused", Notice: &Flash{Kind: "ok", Message: "Paused s1."}}
	doc, _ := renderIn(t, "<table><tbody>", "</tbody></table>", ScheduleRow("tok", row))
	msg := doc.Find(testid("row-message"))
	require.Equal(t, "Paused s1.", text(msg.Find(testid("row-notice"))))
	require.Equal(t, "button", attr(t, msg.Find("[data-dismiss]"), "type"))
	require.Equal(t, "Dismiss this message", attr(t, msg.Find("[data-dismiss]"), "aria-label"))

	quiet, _ := renderIn(t, "<table><tbody>", "</tbody></table>", ScheduleRow("tok", ScheduleRowView{ScheduleID: "s1", Status: "active"}))
	require.Zero(t, quiet.Find(testid("row-message")).Length())
}

// "Select all N matching" says how many it takes when more match than one
// request changes.
func TestBulkAllSaysHowMany(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b    BulkAll
		want string
	}{
		{BulkAll{Count: 3, Total: 3, Exact: true, Limit: 500}, "Select all 3 matching…"},
		{BulkAll{Count: 500, Total: 1234, Exact: true, Limit: 500}, "Select the first 500 of 1234 matching…"},
		{BulkAll{Count: 500, Total: 500, Exact: false, Limit: 500}, "Select the first 500 matching (more match)…"},
	} {
		doc := render(t, bulkAllForm("tok", tc.b))
		require.Equal(t, tc.want, text(doc.Find(testid("bulk-all-open"))))
		require.Contains(t, text(doc.Find(testid("bulk-all-count"))), map[bool]string{true: "all", false: "the first"}[tc.b.Exact && tc.b.Total <= int64(tc.b.Count)])
	}
}
