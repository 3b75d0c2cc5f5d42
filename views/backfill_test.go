package views

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleBackfill() BackfillView {
	return BackfillView{
		ScheduleID: "nightly", ScheduleURL: "/waterline/schedules/nightly",
		Action: "/waterline/schedules/nightly/backfill", Timezone: "America/New_York",
		From: "2026-07-01T00:00", To: "2026-07-04T00:00", OverlapPolicy: "allow_all", DefaultOverlapPolicy: "skip",
	}
}

func TestBackfillDryRunListsOccurrencesAndOffersToStart(t *testing.T) {
	t.Parallel()
	v := sampleBackfill()
	v.Result = &BackfillResultView{DryRun: true, Count: 3, Started: 3, Occurrences: []BackfillOccurrenceView{
		{Time: Moment{Text: "2026-07-01 02:00 EDT"}, InstanceID: "schedule:nightly:backfill:1"},
		{Time: Moment{Text: "2026-07-02 02:00 EDT"}, InstanceID: "schedule:nightly:backfill:2"},
		{Time: Moment{Text: "2026-07-03 02:00 EDT"}, InstanceID: "schedule:nightly:backfill:3"},
	}}
	doc := render(t, BackfillPage(testLayout, v))

	form := doc.Find(testid("backfill-form"))
	require.Equal(t, "post", attr(t, form, "method"))
	require.Equal(t, v.Action, attr(t, form, "action"))
	require.Equal(t, "1", attr(t, form.Find(`input[name="dry_run"]`), "value"))
	// 24-hour text, not datetime-local (whose clock is the browser's): issue 21.
	require.Equal(t, "text", attr(t, form.Find(`input[name="from"]`), "type"))
	require.Equal(t, "From (America/New_York)", text(form.Find(`label[for="f-from"]`)), "the label names the zone")
	require.Equal(t, "2026-07-01T00:00", attr(t, form.Find(`input[name="from"]`), "value"))
	require.Equal(t, "allow_all", attr(t, form.Find(`select[name="overlap_policy"] option[selected]`), "value"))
	require.Equal(t, "America/New_York", text(doc.Find(testid("backfill-timezone"))))

	require.Equal(t, "3", text(doc.Find(testid("backfill-count"))))
	occ := doc.Find(testid("backfill-occurrence"))
	require.Equal(t, 3, occ.Length())
	require.Equal(t, "2026-07-01 02:00 EDT", text(occ.Eq(0).Find("time")))

	confirm := doc.Find(testid("backfill-confirm-form"))
	require.Equal(t, v.Action, attr(t, confirm, "action"))
	require.Zero(t, confirm.Find(`[name="dry_run"]`).Length(), "confirming starts the runs")
	require.Equal(t, "2026-07-04T00:00", attr(t, confirm.Find(`input[name="to"]`), "value"))
	require.Equal(t, "allow_all", attr(t, confirm.Find(`input[name="overlap_policy"]`), "value"))
	require.Equal(t, "tok-123", attr(t, confirm.Find(`input[name="_csrf"]`), "value"))
	require.Equal(t, "Start 3 runs", text(doc.Find(testid("backfill-confirm"))))

	// In the modal the panel re-renders itself.
	require.Equal(t, "#backfill-panel", attr(t, form, "hx-target"))
	require.Equal(t, "#backfill-panel", attr(t, confirm, "hx-select"))
}

func TestBackfillStartedAndEmptyAndErrors(t *testing.T) {
	t.Parallel()
	v := sampleBackfill()
	v.Result = &BackfillResultView{Count: 1, Occurrences: []BackfillOccurrenceView{
		{Time: Moment{Text: "t"}, Outcome: "started", RunID: "01RUN", RunURL: "/waterline/runs/01RUN"},
	}}
	doc := render(t, BackfillPanel("tok", v))
	require.Equal(t, "1", text(doc.Find(testid("backfill-count"))))
	require.Equal(t, "started", text(doc.Find(testid("backfill-occurrence")).Find(testid("outcome-badge"))))
	require.Equal(t, "/waterline/runs/01RUN", attr(t, doc.Find(testid("backfill-occurrence")).Find("a"), "href"))
	require.Zero(t, doc.Find(testid("backfill-confirm")).Length(), "nothing left to confirm")

	v.Result = &BackfillResultView{DryRun: true}
	doc = render(t, BackfillPanel("tok", v))
	require.Equal(t, "0", text(doc.Find(testid("backfill-count"))))
	require.Equal(t, 1, doc.Find(testid("backfill-none")).Length())
	require.Zero(t, doc.Find(testid("backfill-confirm")).Length())

	v.Result = nil
	v.Errors = map[string]string{"to": "must be after from"}
	doc = render(t, BackfillPanel("tok", v))
	require.True(t, doc.Find(testid("field-to")).HasClass("invalid"))
	require.Equal(t, "must be after from", text(doc.Find(testid("field-to")).Find(testid("field-error"))))
	require.Zero(t, doc.Find(testid("backfill-result")).Length())
}
