package e2e

import (
	"net/url"
	"strings"
	"testing"
)

// Issue 21, point 8: forms. While typing, the live preview's errors sit
// under the inputs they are about, in plain words, one per bad line; a
// refused save lists every problem at once in a summary at the top that
// has the focus and links to each input; the time zone is a searchable list
// of IANA zones; labels are key=value in the form, on the page and in the
// registry's filter.
func TestScheduleFormSaysEverythingAtOnce(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		newAPI(t, srv).createSchedule(sched{ID: "other-team", Cron: "0 3 * * *", Labels: map[string]string{"team": "ops"}})
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		gotoOK(t, page, "/waterline/schedules/new")

		// The time zone suggests every IANA zone of Go's tzdata.
		tz := page.GetByTestId("input-timezone")
		list, err := tz.GetAttribute("list")
		must(t, "time-zone list", err)
		options := page.Locator("datalist#" + list + " option")
		must(t, "Berlin suggested", expect.Locator(options.And(page.Locator(`[value="Europe/Berlin"]`))).ToHaveCount(1))
		must(t, "Buenos Aires suggested", expect.Locator(options.And(page.Locator(`[value="America/Argentina/Buenos_Aires"]`))).ToHaveCount(1))
		if n, err := options.Count(); err != nil || n < 400 {
			t.Fatalf("time-zone suggestions: %d (%v), want every Area/City zone", n, err)
		}

		// Live: two bad cron lines and a bad zone.
		fill(t, page, "cron_expressions", "0 9 * * 1-5\n61 * * * *\nnope")
		fill(t, page, "timezone", "Mars/Olympus")
		cronField := page.GetByTestId("field-cron_expressions")
		lines := cronField.GetByTestId("field-error").Locator("li")
		must(t, "every bad line under the cron field", expect.Locator(lines).ToHaveCount(2))
		must(t, "line 2", expect.Locator(lines.Nth(0)).ToContainText(`line 2: "61 * * * *"`))
		must(t, "line 3", expect.Locator(lines.Nth(1)).ToContainText(`line 3: "nope"`))
		must(t, "the zone's own error", expect.Locator(page.GetByTestId("field-timezone").GetByTestId("field-error")).ToContainText("Mars/Olympus"))
		previewErr := page.GetByTestId("spec-preview").GetByTestId("preview-error")
		must(t, "preview names the inputs", expect.Locator(previewErr.Locator("li a")).ToHaveText([]string{"Cron expressions", "Time zone"}))
		must(t, "no internal field names", expect.Locator(page.Locator("main")).Not().ToContainText("cron_expressions"))
		must(t, "no spec paths", expect.Locator(page.Locator("main")).Not().ToContainText("spec."))
		// Fixing the zone clears its error live; the cron lines stay.
		fill(t, page, "timezone", "Europe/Berlin")
		must(t, "zone error cleared", expect.Locator(page.GetByTestId("field-timezone").GetByTestId("field-error")).ToHaveCount(0))
		must(t, "cron lines still there", expect.Locator(lines).ToHaveCount(2))

		// Save with problems the form finds (JSON, a label line) and
		// problems only the service finds (the ID, the cron lines, a
		// missing workflow type): all of them in one answer.
		fill(t, page, "schedule_id", "bad id")
		fill(t, page, "input", `{"full": tru`)
		fill(t, page, "labels", "team=data\nnovalue")
		must(t, "save", page.GetByTestId("form-submit").Click())
		summary := page.GetByTestId("error-summary")
		must(t, "summary", expect.Locator(summary).ToBeVisible())
		must(t, "the summary has the focus", expect.Locator(summary).ToBeFocused())
		must(t, "count: one per message", expect.Locator(summary.Locator("h2")).ToHaveText("6 problems to fix"))
		links := summary.GetByTestId("error-summary-link")
		must(t, "every problem, in form order", expect.Locator(links).ToHaveText(
			[]string{"Schedule ID", "Cron expressions", "Workflow type", "Input (JSON)", "Labels"}))
		items := summary.GetByTestId("error-summary-item")
		must(t, "the ID's problem", expect.Locator(items.Nth(0)).ToContainText("1-200 characters"))
		must(t, "both cron lines", expect.Locator(items.Nth(1).Locator("li")).ToHaveCount(2))
		must(t, "line 2", expect.Locator(items.Nth(1)).ToContainText(`line 2: "61 * * * *"`))
		must(t, "both cron lines", expect.Locator(items.Nth(1)).ToContainText(`line 3: "nope"`))
		must(t, "the workflow type", expect.Locator(items.Nth(2)).ToContainText("is required"))
		must(t, "the label line", expect.Locator(items.Nth(4)).ToContainText("line 2: write key=value"))
		must(t, "each under its input too", expect.Locator(page.GetByTestId("field-error")).ToHaveCount(5))
		must(t, "no internal field names after saving", expect.Locator(page.Locator("main")).Not().ToContainText("cron_expressions"))
		// A link takes the focus to its input.
		must(t, "follow the Labels link", links.Nth(4).Click())
		must(t, "labels focused", expect.Locator(page.GetByTestId("input-labels")).ToBeFocused())
		must(t, "what was typed is kept", expect.Locator(page.GetByTestId("input-labels")).ToHaveValue("team=data\nnovalue"))

		// Fixed, it saves; labels read key=value on the page and in the
		// registry's filter.
		fill(t, page, "schedule_id", "data-export")
		fill(t, page, "cron_expressions", "0 9 * * 1-5")
		fill(t, page, "workflow_type", "data.Export")
		fill(t, page, "input", `{"full": true}`)
		fill(t, page, "labels", "team=data")
		must(t, "save again", page.GetByTestId("form-submit").Click())
		must(t, "created", expect.Locator(page.GetByTestId("flash")).ToHaveText("Created data-export."))
		must(t, "label on the page", expect.Locator(page.GetByTestId("fact-labels")).ToHaveText("team=data"))
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		must(t, "label filter", page.GetByTestId("filter-label").Fill("team=data"))
		must(t, "filter", page.GetByTestId("filter-submit").Click())
		must(t, "filtered by key=value", expect.Locator(page.GetByTestId("schedule-row")).ToHaveCount(1))
		must(t, "the labelled one", expect.Locator(scheduleRow(page, "data-export")).ToBeVisible())
		if got := page.URL(); !strings.Contains(got, "label="+url.QueryEscape("team=data")) {
			t.Fatalf("registry URL %s does not carry label=team=data", got)
		}
	})
}

// Without JavaScript the refused form says the same, and the summary still
// takes the focus (autofocus).
func TestScheduleFormErrorsWithoutJavaScript(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: true})
		gotoOK(t, page, "/waterline/schedules/new")
		fill(t, page, "cron_expressions", "61 * * * *\n0 25 * * *")
		fill(t, page, "labels", "novalue")
		must(t, "save", page.GetByTestId("form-submit").Click())
		summary := page.GetByTestId("error-summary")
		must(t, "the summary has the focus", expect.Locator(summary).ToBeFocused())
		must(t, "every problem", expect.Locator(summary.GetByTestId("error-summary-link")).ToHaveText([]string{"Cron expressions", "Workflow type", "Labels"}))
		must(t, "both bad lines under the field", expect.Locator(page.GetByTestId("field-cron_expressions").GetByTestId("field-error").Locator("li")).ToHaveText(
			[]string{`line 1: "61 * * * *": minute field "61": 61 is outside 0-59`, `line 2: "0 25 * * *": hour field "25": 25 is outside 0-23`}))
		must(t, "the preview says it in plain words", expect.Locator(page.GetByTestId("preview-error").Locator("li a")).ToHaveText([]string{"Cron expressions"}))
	})
}
