package views

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleDetail() ScheduleDetailView {
	actions := allActions("nightly")
	actions.CanResume = false
	return ScheduleDetailView{
		ID: "01J0SCHEDULE", ScheduleID: "nightly", Namespace: "default", Status: "active",
		SpecDescription: "At 02:00 every day", Timezone: "America/New_York",
		CronExpressions: []string{"0 2 * * *"}, Intervals: []string{"every PT1H, offset PT5M"},
		WorkflowType: "reports.Nightly", Input: "{\n  \"full\": true\n}", OverlapPolicy: "skip",
		Jitter: "30 s", MaxRuns: "100", RemainingActions: "59", Labels: []KV{{"team", "billing"}},
		FiresCount: 41, FailuresCount: 1, SkippedCount: 2, LastSkipReason: "overlap_policy_skip",
		LastSkippedAt:   Moment{Text: "2026-07-14 02:00 EDT"},
		NextFire:        Moment{Text: "2026-07-16 02:00 EDT", ISO: "2026-07-16T06:00:00.000000Z", Relative: "in 4 min"},
		LatestRun:       Link{Label: "01RUN", URL: "/waterline/runs/01RUN"},
		FutureFireTimes: []Moment{{Text: "a"}, {Text: "b"}, {Text: "c"}, {Text: "d"}, {Text: "e"}},
		BufferedActions: []BufferedActionView{{InstanceID: "schedule:nightly:1", OccurrenceTime: Moment{Text: "x"}}},
		RecentActions: []RecentActionView{
			{Outcome: "triggered", Run: Link{Label: "01RUN", URL: "/waterline/runs/01RUN"}, FiredAt: Moment{Text: "f"}, FireLag: "120 ms"},
			{Outcome: "skipped", InstanceID: "schedule:nightly:2", Reason: "overlap_policy_skip"},
		},
		Runs:       []RunRowView{{RunID: "01RUN", RunURL: "/waterline/runs/01RUN", Status: "completed"}},
		RunsURL:    "/waterline/runs?schedule_id=nightly",
		HistoryURL: "/waterline/schedules/nightly/history",
		Actions:    actions,
	}
}

func TestScheduleDetailShowsEveryFact(t *testing.T) {
	t.Parallel()
	doc := render(t, ScheduleDetailPage(testLayout, sampleDetail()))

	facts := doc.Find(testid("schedule-facts"))
	for key, want := range map[string]string{
		"schedule-id": "nightly", "id": "01J0SCHEDULE", "namespace": "default", "status": "active",
		"cron-expressions": "0 2 * * *", "intervals": "every PT1H, offset PT5M", "timezone": "America/New_York",
		"workflow-type": "reports.Nightly", "overlap-policy": "skip", "jitter": "30 s",
		"max-runs": "100 (59 remaining)", "labels": "team=billing", "counts": "41 / 1 / 2",
		"last-skip": "overlap policy skip · 2026-07-14 02:00 EDT", "next-fire": "2026-07-16 02:00 EDT in 4 min",
		"latest-run": "01RUN",
	} {
		require.Equal(t, want, text(facts.Find(testid("fact-"+key))), key)
	}
	// Facts without a value are left out (issue 21: they used to read "—"),
	// and the rest come in groups.
	for _, key := range []string{"workflow-class", "memo", "execution-timeout", "queue", "deleted-at", "paused-at", "search-attributes"} {
		require.Zero(t, facts.Find(testid("fact-"+key)).Length(), key)
	}
	require.NotContains(t, text(facts), "—")
	for _, group := range []string{"facts-state", "facts-when", "facts-action", "facts-about"} {
		require.Equal(t, 1, facts.Find(testid(group)).Length(), group)
	}
	require.Equal(t, "reports.Nightly", text(facts.Find(testid("facts-action")).Find(testid("fact-workflow-type"))))
	require.Equal(t, "{\n  \"full\": true\n}", facts.Find(testid("fact-input")).Find("pre").Text())
	require.Equal(t, "/waterline/runs/01RUN", attr(t, facts.Find(testid("fact-latest-run")).Find("a"), "href"))

	require.Equal(t, 5, doc.Find(testid("future-fire-time")).Length())
	require.Equal(t, 1, doc.Find(testid("buffered-action")).Length())
	recent := doc.Find(testid("recent-action"))
	require.Equal(t, 2, recent.Length())
	require.Equal(t, "triggered", text(recent.Eq(0).Find(testid("outcome-badge"))))
	require.Equal(t, "/waterline/runs/01RUN", attr(t, recent.Eq(0).Find("a"), "href"))
	require.Equal(t, 1, doc.Find(testid("run-row")).Length())
	require.Equal(t, "/waterline/runs?schedule_id=nightly", attr(t, doc.Find(testid("all-runs-link")), "href"))
	// One History button: the action bar's (the panel's "Audit history" is gone).
	require.Equal(t, 1, doc.Find(`a[href="/waterline/schedules/nightly/history"]`).Length())
	require.Equal(t, "/waterline/schedules/nightly/history", attr(t, doc.Find(testid("action-history")), "href"))

	// Outside the registry the action forms post and redirect: no row swap.
	form := doc.Find(testid("action-pause")).Find("form")
	require.Equal(t, "/waterline/schedules/nightly/pause", attr(t, form, "action"))
	_, hx := form.Attr("hx-post")
	require.False(t, hx)
	require.Zero(t, doc.Find(testid("action-resume")).Length())
}

func TestScheduleDetailEmptySections(t *testing.T) {
	t.Parallel()
	doc := render(t, ScheduleDetailPage(testLayout, ScheduleDetailView{ScheduleID: "fresh", Status: "paused"}))
	require.Equal(t, 1, doc.Find(testid("no-future-fires")).Length())
	require.Equal(t, 1, doc.Find(testid("no-buffered")).Length())
	require.Equal(t, 1, doc.Find(testid("no-recent-actions")).Length())
	require.Equal(t, 1, doc.Find(testid("no-runs")).Length())
	require.Equal(t, "never", text(doc.Find(testid("fact-next-fire"))))
	require.Equal(t, "unlimited", text(doc.Find(testid("fact-max-runs"))))
}

func TestDeleteConfirmPage(t *testing.T) {
	t.Parallel()
	doc := render(t, DeleteConfirmPage(testLayout, DeleteView{
		ScheduleID: "nightly", ScheduleURL: "/waterline/schedules/nightly",
		Action: "/waterline/schedules/nightly/delete", Error: "Type nightly to confirm.",
	}))
	form := doc.Find(testid("delete-form"))
	require.Equal(t, "/waterline/schedules/nightly/delete", attr(t, form, "action"))
	require.Equal(t, "nightly", attr(t, form.Find(testid("delete-confirm-input")), "data-confirm-text"))
	require.Equal(t, "true", attr(t, form.Find(testid("delete-confirm-input")), "aria-invalid"))
	require.Equal(t, "Type nightly to confirm.", text(form.Find(testid("field-error"))))
	_, hx := form.Attr("hx-post")
	require.False(t, hx)
}
