package views

import (
	"bytes"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/stretchr/testify/require"
)

// render renders a component and parses it as a whole HTML document.
func render(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, c.Render(t.Context(), &buf))
	doc, err := goquery.NewDocumentFromReader(&buf)
	require.NoError(t, err)
	return doc
}

// renderIn renders a fragment inside a wrapper, e.g. a <tr> inside a table,
// which an HTML parser would otherwise drop; it also returns the raw HTML.
func renderIn(t *testing.T, open, close string, c templ.Component) (*goquery.Document, string) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, c.Render(t.Context(), &buf))
	raw := buf.String()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(open + raw + close))
	require.NoError(t, err)
	return doc, raw
}

func testid(id string) string { return `[data-testid="` + id + `"]` }

func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

func attr(t *testing.T, s *goquery.Selection, name string) string {
	t.Helper()
	require.Equal(t, 1, s.Length(), "expected exactly one element to read %q from", name)
	v, ok := s.Attr(name)
	require.True(t, ok, "attribute %q missing", name)
	return v
}

var testLayout = LayoutView{Title: "Schedules", Version: "test", Nav: "schedules", Namespace: "default", CSRFToken: "tok-123"}

func allActions(id string) ScheduleActions {
	base := "/waterline/schedules/" + id
	return ScheduleActions{
		ScheduleID: id,
		CanPause:   true, CanResume: true, CanTrigger: true, CanBackfill: true, CanDelete: true, CanEdit: true,
		PauseURL: base + "/pause", ResumeURL: base + "/resume", TriggerURL: base + "/trigger",
		BackfillURL: base + "/backfill", HistoryURL: base + "/history", DeleteURL: base + "/delete",
		EditURL: base + "/edit", OverlapPolicy: "skip",
	}
}

func sampleRows() []ScheduleRowView {
	nightly := allActions("nightly.report")
	nightly.CanResume = false
	hourly := allActions("hourly-sync")
	hourly.CanPause = false
	return []ScheduleRowView{
		{
			ScheduleID: "nightly.report", DetailURL: "/waterline/schedules/nightly.report",
			WorkflowType: "reports.Nightly", SpecDescription: "At 02:00 every day", Timezone: "America/New_York",
			Status: "active", Labels: []KV{{"team", "billing"}},
			NextFire: Moment{Text: "2026-07-16 02:00 EDT", ISO: "2026-07-16T06:00:00.000000Z", Relative: "3 min ago"},
			Overdue:  true, State: "overdue", StateLabel: "overdue", LastOutcome: "triggered",
			Detail:     &RowDetail{Kind: "overdue", Text: "due 3 min ago — not fired yet"},
			LastAt:     Moment{Text: "2026-07-15 02:00 EDT", ISO: "2026-07-15T06:00:00.000000Z", Relative: "1 day ago"},
			FiresCount: 41, SkipsCount: 2, Selectable: true, SelectColumn: true, Actions: nightly,
		},
		{
			ScheduleID: "hourly-sync", DetailURL: "/waterline/schedules/hourly-sync",
			WorkflowType: "sync.Hourly", SpecDescription: "Every hour at :05", Timezone: "UTC",
			Status: "paused", Note: "upstream outage", State: "failing", StateLabel: "failing",
			Health:      HealthView{Consecutive: 2, Failures: 3, LastError: "upstream: connection refused", Recent: []RecentRunView{{Status: "failed", URL: "/waterline/runs/r2"}}},
			Detail:      &RowDetail{Kind: "error", Text: "upstream: connection refused", URL: "/waterline/runs/r2"},
			NextFire:    Moment{Text: "2026-07-16 10:05 UTC", ISO: "2026-07-16T10:05:00.000000Z", Relative: "in 4 min"},
			LastOutcome: "skipped", LastReason: "overlap_policy_skip",
			LastAt:     Moment{Text: "2026-07-16 09:05 UTC", ISO: "2026-07-16T09:05:00.000000Z", Relative: "56 min ago"},
			FiresCount: 7, SkipsCount: 3, Selectable: true, SelectColumn: true, Actions: hourly,
		},
	}
}

func sampleRegistry() RegistryView {
	return RegistryView{
		Filters:    RegistryFilters{Action: "/waterline/schedules", Status: "paused", Q: "sync", Label: "team:billing"},
		Rows:       sampleRows(),
		Pager:      Pager{NextURL: "/waterline/schedules?status=paused&cursor=abc"},
		RefreshURL: "/waterline/schedules?status=paused&q=sync&label=team%3Abilling",
		BulkURL:    "/waterline/schedules/bulk",
		NewURL:     "/waterline/schedules/new",
		CanBulk:    true,
	}
}
