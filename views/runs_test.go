package views

import (
	"github.com/PuerkitoBio/goquery"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunsListAndEmptyState(t *testing.T) {
	t.Parallel()
	v := RunsView{
		Filters: RunFilters{Action: "/waterline/runs", Status: "failed", ScheduleID: "nightly"},
		Rows: []RunRowView{
			{RunID: "01A", RunURL: "/waterline/runs/01A", Status: "failed", Schedule: Link{Label: "nightly", URL: "/waterline/schedules/nightly"},
				StartedAt: Moment{Text: "s"}, Duration: "1.2 s"},
			{RunID: "01B", RunURL: "/waterline/runs/01B", Status: "pending", CreatedAt: Moment{Text: "c"}},
		},
		Pager: Pager{FirstURL: "/waterline/runs", NextURL: "/waterline/runs?cursor=x"},
	}
	doc := render(t, RunsPage(testLayout, v))
	rows := doc.Find(testid("run-row"))
	require.Equal(t, 2, rows.Length())
	require.Equal(t, "01A", attr(t, rows.Eq(0), "data-run-id"))
	require.Equal(t, "failed", text(rows.Eq(0).Find(testid("status-badge"))))
	require.True(t, rows.Eq(0).Find(testid("status-badge")).HasClass("badge-failed"))
	require.Equal(t, "/waterline/schedules/nightly", attr(t, rows.Eq(0).Find(testid("run-schedule-link")), "href"))
	require.Equal(t, "by hand", text(rows.Eq(1).Find("td").Eq(3)))
	require.Equal(t, "failed", attr(t, doc.Find(testid("filter-status")).Find("option[selected]"), "value"))
	require.Equal(t, "nightly", attr(t, doc.Find(testid("filter-schedule-id")), "value"))
	require.Equal(t, "/waterline/runs?cursor=x", attr(t, doc.Find(testid("next-page")), "href"))
	require.Equal(t, "/waterline/runs", attr(t, doc.Find(testid("first-page")), "href"))

	doc = render(t, RunsPage(testLayout, RunsView{Filters: RunFilters{Action: "/waterline/runs"}}))
	require.Contains(t, text(doc.Find(testid("empty-state"))), "No runs yet.")
}

func TestRunDetail(t *testing.T) {
	t.Parallel()
	v := RunDetailView{
		RunID: "01A", InstanceID: "schedule:nightly:1784181600", Status: "failed", WorkflowType: "reports.Nightly",
		Schedule: Link{Label: "nightly", URL: "/waterline/schedules/nightly"}, Trigger: "scheduled",
		Input: "{\n  \"full\": true\n}", FailureMessage: "boom", FailureType: "RuntimeError",
		Events: []RunEventView{{
			Sequence: 1, EventType: "ScheduleTriggered", Payload: "{}",
			Links: []Link{{Label: "Schedule nightly", URL: "/waterline/schedules/nightly"}},
		}, {Sequence: 2, EventType: "RunFailed"}},
		CanCancel: true, CanTerminate: true,
		CancelURL: "/waterline/runs/01A/cancel", TerminateURL: "/waterline/runs/01A/terminate",
	}
	doc := render(t, RunDetailPage(testLayout, v))
	require.Equal(t, "failed", text(doc.Find(".page-head").Find(testid("status-badge"))))
	require.Equal(t, "/waterline/schedules/nightly", attr(t, doc.Find(testid("run-facts")).Find(testid("run-schedule-link")), "href"))
	require.Equal(t, "RuntimeError: boom", doc.Find(testid("run-failure")).Text())
	require.Equal(t, "{\n  \"full\": true\n}", doc.Find(testid("run-input")).Text())
	require.Zero(t, doc.Find(testid("run-output")).Length())
	events := doc.Find(testid("run-event"))
	require.Equal(t, 2, events.Length())
	require.Equal(t, "ScheduleTriggered", text(events.Eq(0).Find(testid("event-type"))))
	require.Equal(t, "/waterline/schedules/nightly", attr(t, events.Eq(0).Find(testid("event-link")), "href"))

	cancel := doc.Find(testid("run-cancel-form"))
	require.Equal(t, "/waterline/runs/01A/cancel", attr(t, cancel, "action"))
	require.Equal(t, "tok-123", attr(t, cancel.Find(`input[name="_csrf"]`), "value"))
	// Cancelling asks first: the form sits in a closed disclosure.
	require.Equal(t, "details", goquery.NodeName(doc.Find(testid("run-cancel"))))
	_, open := doc.Find(testid("run-cancel")).Attr("open")
	require.False(t, open)
	require.Equal(t, "submit", attr(t, cancel.Find(testid("run-cancel-submit")), "type"))
	require.Equal(t, "/waterline/runs/01A/terminate", attr(t, doc.Find(testid("run-terminate-form")), "action"))

	v.CanCancel, v.CanTerminate = false, false
	doc = render(t, RunDetailPage(testLayout, v))
	require.Zero(t, doc.Find(testid("run-cancel-form")).Length())
	require.Zero(t, doc.Find(testid("run-terminate")).Length())
}
