package views

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"
)

func sampleForm() ScheduleFormView {
	return ScheduleFormView{
		Action: "/waterline/schedules", PreviewURL: "/waterline/schedules/preview", CancelURL: "/waterline/schedules",
		Values: ScheduleFormValues{
			ScheduleID: "nightly", CronExpressions: "0 2 * * *\n30 14 * * 1-5", Intervals: "PT1H PT5M",
			Timezone: "America/New_York", WorkflowType: "reports.Nightly", Input: `{"full": true}`,
			Fields: map[string]string{"overlap_policy": "buffer_one", "jitter_seconds": "30", "labels": "team=billing", "note": "owned by billing"},
		},
		Zones: []string{"UTC", "America/New_York", "Europe/Berlin"},
	}
}

// A refused form starts with a summary of every problem, in form order,
// each linking to its input; it takes the focus on load.
func TestScheduleFormSummarisesEveryError(t *testing.T) {
	t.Parallel()
	v := sampleForm()
	v.Errors = map[string]string{
		"labels":           "line 2: write key=value",
		"cron_expressions": "line 2: minute field \"61\": 61 is outside 0-59\nline 3: \"nope\" has 1 field",
		"schedule_id":      "must be 1-200 characters",
		"namespace":        "namespace is unknown",
	}
	doc := render(t, ScheduleFormPage(testLayout, v))
	summary := doc.Find(testid("error-summary"))
	require.Equal(t, 1, summary.Length())
	_, autofocus := summary.Attr("autofocus")
	require.True(t, autofocus, "focused on load, without JavaScript too")
	require.Equal(t, "-1", attr(t, summary, "tabindex"))
	require.Equal(t, "5 problems to fix", text(summary.Find("h2")))
	var hrefs, labels []string
	summary.Find(testid("error-summary-link")).Each(func(_ int, a *goquery.Selection) {
		hrefs = append(hrefs, a.AttrOr("href", ""))
		labels = append(labels, text(a))
	})
	require.Equal(t, []string{"#f-schedule_id", "#f-cron_expressions", "#f-labels"}, hrefs, "form order")
	require.Equal(t, []string{"Schedule ID", "Cron expressions", "Labels"}, labels)
	for _, h := range hrefs {
		require.Equal(t, 1, doc.Find(h).Length(), "%s is an input", h)
	}
	require.Equal(t, 2, summary.Find(`[data-field="cron_expressions"] li`).Length(), "one item per bad line")
	require.Equal(t, "namespace: namespace is unknown", text(summary.Find(testid("form-other-errors"))))
	require.Equal(t, 2, doc.Find(testid("field-cron_expressions")).Find(testid("field-error")).Find("li").Length())

	// Every input the summary may name is there to link to.
	v.Errors = map[string]string{}
	for _, f := range scheduleFields {
		v.Errors[f.Key] = "wrong"
	}
	doc = render(t, ScheduleFormPage(testLayout, v))
	links := doc.Find(testid("error-summary-link"))
	require.Equal(t, len(scheduleFields), links.Length())
	links.Each(func(_ int, a *goquery.Selection) {
		href := a.AttrOr("href", "") // ids may hold dots: no "#id" CSS selector
		require.Equal(t, 1, doc.Find(`[id="`+strings.TrimPrefix(href, "#")+`"]`).Filter("input, textarea, select").Length(), "%s (%s) links to its input", href, text(a))
	})

	v.Errors = map[string]string{}
	require.Zero(t, render(t, ScheduleFormPage(testLayout, v)).Find(testid("error-summary")).Length())
}

// The live preview's answer carries each spec input's errors out of band,
// an empty slot clearing a fixed one.
func TestLivePreviewPutsErrorsUnderTheirInputs(t *testing.T) {
	t.Parallel()
	_, raw := renderIn(t, "", "", SpecPreview(SpecPreviewView{Live: true, FieldErrors: map[string]string{"cron_expressions": "line 1: bad\nline 2: worse"}}))
	doc := render(t, SpecPreview(SpecPreviewView{Live: true, FieldErrors: map[string]string{"cron_expressions": "line 1: bad\nline 2: worse"}}))
	require.True(t, strings.HasPrefix(raw, `<div id="spec-preview"`), "the preview first: it is what hx-target replaces")
	for _, name := range []string{"cron_expressions", "intervals", "timezone"} {
		slot := doc.Find("#f-" + name + "-error")
		require.Equal(t, 1, slot.Length(), name)
		require.Equal(t, "true", attr(t, slot, "hx-swap-oob"), name)
	}
	require.Equal(t, []string{"line 1: bad", "line 2: worse"}, doc.Find("#f-cron_expressions-error li").Map(func(_ int, s *goquery.Selection) string { return text(s) }))
	_, hidden := doc.Find("#f-timezone-error").Attr("hidden")
	require.True(t, hidden, "no error: an empty, hidden slot")
	require.Equal(t, "Cron expressions", text(doc.Find(testid("preview-error")).Find("li a")))
	require.NotContains(t, doc.Text(), "cron_expressions")

	doc = render(t, SpecPreview(SpecPreviewView{FieldErrors: map[string]string{"cron_expressions": "bad"}}))
	require.Zero(t, doc.Find("[hx-swap-oob]").Length(), "a page's preview has no out-of-band parts")
}

func TestScheduleFormShowsErrorsNextToTheirFields(t *testing.T) {
	t.Parallel()
	v := sampleForm()
	v.Errors = map[string]string{
		"cron_expressions": "line 2: 6-field expressions are not supported",
		"timezone":         "unknown time zone Mars/Olympus",
		"spec":             "a spec needs at least one cron expression or interval",
		"":                 "Fix the fields below.",
	}
	doc := render(t, ScheduleFormPage(testLayout, v))

	for name, msg := range map[string]string{"cron_expressions": v.Errors["cron_expressions"], "timezone": v.Errors["timezone"]} {
		field := doc.Find(testid("field-" + name))
		require.True(t, field.HasClass("invalid"), name)
		require.Equal(t, msg, text(field.Find(testid("field-error"))), name)
		input := field.Find(`[name="` + name + `"]`)
		require.Equal(t, "true", attr(t, input, "aria-invalid"), name)
		errID := attr(t, field.Find(testid("field-error")), "id")
		require.Contains(t, strings.Fields(attr(t, input, "aria-describedby")), errID, name)
		// The message follows its own input, not another one.
		require.Equal(t, 1, input.NextAllFiltered(testid("field-error")).Length(), name)
	}
	require.Equal(t, 2, doc.Find(testid("field-error")).Length(), "only the two fields with errors show one")
	require.False(t, doc.Find(testid("field-workflow_type")).HasClass("invalid"))
	_, invalid := doc.Find(testid("input-workflow_type")).Attr("aria-invalid")
	require.False(t, invalid)

	require.Equal(t, "Fix the fields below.", text(doc.Find(testid("form-error"))))
	require.Equal(t, "spec: a spec needs at least one cron expression or interval", text(doc.Find(testid("form-other-errors"))))
}

func TestScheduleFormKeepsValuesAndOffersChoices(t *testing.T) {
	t.Parallel()
	v := sampleForm()
	doc := render(t, ScheduleFormPage(testLayout, v))

	form := doc.Find(testid("schedule-form"))
	require.Equal(t, "post", attr(t, form, "method"))
	require.Equal(t, "/waterline/schedules", attr(t, form, "action"))
	require.Equal(t, "tok-123", attr(t, form.Find(`input[name="_csrf"]`), "value"))

	require.Equal(t, "nightly", attr(t, doc.Find(testid("input-schedule_id")), "value"))
	_, readonly := doc.Find(testid("input-schedule_id")).Attr("readonly")
	require.False(t, readonly, "the ID is editable on create")
	require.Equal(t, "0 2 * * *\n30 14 * * 1-5", doc.Find(testid("input-cron_expressions")).Text())
	require.Equal(t, "PT1H PT5M", doc.Find(testid("input-intervals")).Text())
	require.Equal(t, `{"full": true}`, doc.Find(testid("input-input")).Text())
	require.Equal(t, "team=billing", doc.Find(testid("input-labels")).Text())
	require.Equal(t, "buffer_one", attr(t, doc.Find(testid("input-overlap_policy")).Find("option[selected]"), "value"))
	require.Equal(t, len(OverlapPolicies), doc.Find(testid("input-overlap_policy")).Find("option").Length())
	require.Equal(t, "30", attr(t, doc.Find(testid("input-jitter_seconds")), "value"))

	tz := doc.Find(testid("input-timezone"))
	require.Equal(t, "America/New_York", attr(t, tz, "value"))
	list := attr(t, tz, "list")
	require.Equal(t, len(v.Zones), doc.Find("datalist#"+list+" option").Length())
	require.Equal(t, 1, doc.Find(testid("input-paused")).Length(), "start paused on create")

	// Every input has a label.
	doc.Find("form input:not([type=hidden]), form select, form textarea").Each(func(_ int, in *goquery.Selection) {
		id, hasID := in.Attr("id")
		labelled := (hasID && doc.Find(`label[for="`+id+`"]`).Length() == 1) || in.ParentsFiltered("label").Length() == 1
		require.True(t, labelled, "input %v has a label", in.AttrOr("name", "?"))
	})

	// The preview posts the form as it changes.
	aside := doc.Find("aside.form-aside")
	require.Equal(t, "/waterline/schedules/preview", attr(t, aside, "hx-post"))
	require.Contains(t, attr(t, aside, "hx-trigger"), "from:closest form")
	require.Equal(t, "#spec-preview", attr(t, aside, "hx-target"))
	require.Equal(t, 1, aside.ParentsFiltered("form").Length(), "the preview sits inside the form so htmx posts its fields")
	require.Equal(t, 1, doc.Find(testid("preview-empty")).Length())
}

func TestScheduleFormEditShowsWhatWillChange(t *testing.T) {
	t.Parallel()
	v := sampleForm()
	v.Editing, v.Action = true, "/waterline/schedules/nightly/edit"
	v.Changes = []FieldChange{{Field: "overlap_policy", From: "skip", To: "buffer_one"}, {Field: "note", From: "", To: "owned by billing"}}
	doc := render(t, ScheduleFormPage(testLayout, v))

	_, readonly := doc.Find(testid("input-schedule_id")).Attr("readonly")
	require.True(t, readonly, "the ID is read-only on edit")
	require.Zero(t, doc.Find(testid("input-paused")).Length(), "no start paused on edit")
	require.Equal(t, "Save changes", text(doc.Find(testid("form-submit"))))
	changes := doc.Find(testid("form-changes")).Find(testid("change"))
	require.Equal(t, 2, changes.Length())
	require.Equal(t, "overlap_policy", attr(t, changes.Eq(0), "data-field"))
	require.Equal(t, "overlap_policy: skip → buffer_one", text(changes.Eq(0)))
	require.Equal(t, "note: — → owned by billing", text(changes.Eq(1)))
}

func TestSpecPreview(t *testing.T) {
	t.Parallel()
	times := make([]Moment, 10)
	for i := range times {
		times[i] = Moment{Text: "2026-07-" + string(rune('1'+i%9)) + " 02:00 EDT", ISO: "x"}
	}
	doc, raw := renderIn(t, "", "", SpecPreview(SpecPreviewView{Description: "At 02:00 every day", Timezone: "America/New_York", FireTimes: times}))
	require.True(t, strings.HasPrefix(raw, `<div id="spec-preview"`), "the fragment replaces #spec-preview")
	require.Equal(t, "At 02:00 every day · America/New_York", text(doc.Find(testid("spec-description"))))
	require.Equal(t, 10, doc.Find(testid("preview-fire-time")).Length())
	require.Zero(t, doc.Find(testid("preview-error")).Length())

	doc = render(t, SpecPreview(SpecPreviewView{
		Error:       "The spec is not valid.",
		FieldErrors: map[string]string{"cron_expressions": "expected 5 fields"},
	}))
	perr := doc.Find(testid("preview-error"))
	require.Equal(t, "The spec is not valid.", text(perr.Find("p")))
	// Plain words: the input's label, not its field name (issue 21).
	require.Equal(t, "Cron expressions: expected 5 fields", text(perr.Find(`li[data-field="cron_expressions"]`)))
	require.Zero(t, doc.Find(testid("preview-fire-time")).Length())
	require.Zero(t, doc.Find(testid("spec-description")).Length())

	doc = render(t, SpecPreview(SpecPreviewView{Description: "At 00:00 on day 30 of February"}))
	require.Equal(t, "It never fires.", text(doc.Find(testid("preview-never"))))

	doc = render(t, SpecPreview(SpecPreviewView{Description: "Every hour", Changes: []FieldChange{{Field: "spec", From: "a", To: "b"}}}))
	require.Equal(t, 1, doc.Find(testid("preview-changes")).Find(testid("change")).Length())
}
