package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// Issue 31 in a real Chromium: a calendar's page (its year, month by
// month, and the schedules using it), the schedule form with the calendar
// chosen whose live preview names the days it moves, and the impact of an
// edit shown before saving — each at 1440×900 and 390×844, the phone with
// no sideways scroll. Screenshots go to /tmp (docs/ with
// TIDELINE_SCREENSHOTS=1).
func TestCalendarConsole(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		ny, err := time.LoadLocation("America/New_York")
		must(t, "zone", err)
		now := time.Now().In(ny)
		year := now.Year()
		day := func(m time.Month, d int) string {
			return time.Date(year, m, d, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
		}
		// A year of bank holidays, and two office closures in the coming
		// days, so the next fires of a weekday schedule meet them.
		soon := nextWeekdays(now, 2, 2)
		dates := []string{day(1, 1), day(1, 19), day(2, 16), day(5, 25), day(6, 19), day(7, 3), day(9, 7), day(10, 12),
			day(11, 11), day(11, 26), day(12, 25), soon[0], soon[1]}
		// Written as schedule apply writes it: the page wears the apply badge.
		asApply := *api
		asApply.Source = "apply"
		asApply.must(http.MethodPost, "/calendars", map[string]any{"name": "us-bank-holidays", "description": "US bank holidays and office closures",
			"dates": dates, "weekend": []string{"sat", "sun"}}, http.StatusCreated, nil)
		for _, s := range []struct{ id, cron, on string }{
			{"payroll-run", "0 9 * * 1-5", "next_business_day"},
			{"settlement-report", "30 17 * * 1-5", "skip"},
		} {
			api.must(http.MethodPost, "/schedules", map[string]any{"schedule_id": s.id,
				"spec":   map[string]any{"cron_expressions": []string{s.cron}, "timezone": "America/New_York", "exclude_calendars": []string{"us-bank-holidays"}, "on_excluded": s.on},
				"action": map[string]any{"workflow_type": "finance." + strings.ReplaceAll(s.id, "-", ".")}}, http.StatusCreated, nil)
		}

		for _, vp := range []struct {
			suffix        string
			width, height int
		}{{"", 1440, 900}, {"-phone", phoneWidth, phoneHeight}} {
			phone := vp.suffix != ""
			page := newPage(t, pageOptions{BaseURL: srv.BaseURL, TimezoneID: "America/New_York"})
			must(t, "viewport", page.SetViewportSize(vp.width, vp.height))

			// The list, then the calendar's page: its year and its users.
			gotoOK(t, page, "/waterline/calendars")
			row := page.GetByTestId("calendar-row")
			must(t, "listed", expect.Locator(row).ToHaveCount(1))
			must(t, "its dates counted", expect.Locator(row).ToContainText("13 dates"))
			if phone {
				noHorizontalScroll(t, page, "the calendars list")
			} else {
				shootJob(t, page, "console-calendars.png")
			}
			must(t, "open it", row.GetByTestId("calendar-link").Click())
			must(t, "used by both", expect.Locator(page.GetByTestId("calendar-used-by").Locator("a")).ToHaveText([]string{"payroll-run", "settlement-report"}))
			must(t, "managed by apply", expect.Locator(page.GetByTestId("managed-by-apply")).ToBeVisible())
			yearView := page.GetByTestId("calendar-year")
			must(t, "twelve months", expect.Locator(yearView.GetByTestId("calendar-month")).ToHaveCount(12))
			must(t, "Christmas marked", expect.Locator(yearView.Locator(`td[data-date="`+day(12, 25)+`"]`)).ToHaveClass(regexp.MustCompile(`\blisted\b`)))
			must(t, "a Saturday is weekend", expect.Locator(yearView.Locator(`td[data-date="`+firstSaturday(year)+`"]`)).ToHaveClass(regexp.MustCompile(`\bwe\b`)))
			if phone {
				noHorizontalScroll(t, page, "the calendar page")
			} else {
				checkA11y(t, page, "the calendar page")
			}
			shootJob(t, page, "console-calendar"+vp.suffix+".png")

			// The impact of an edit, before saving: one closure removed,
			// another day added.
			added := nextWeekdays(now, 9, 1)[0]
			edited := strings.Join(append(slicesWithout(dates, soon[0]), added), "\n")
			must(t, "edit the dates", page.GetByTestId("calendar-dates").Fill(edited))
			must(t, "show what changes", page.GetByTestId("calendar-impact").Click())
			impact := page.GetByTestId("calendar-impact-result")
			must(t, "both schedules change", expect.Locator(impact.GetByTestId("impact-schedule")).ToHaveCount(2))
			must(t, "nothing saved", expect.Locator(impact).ToContainText("Nothing was saved yet"))
			if added[:4] == soon[0][:4] { // the edit's months are shown for one year: the first it changes
				must(t, "the added day in the year", expect.Locator(page.GetByTestId("calendar-year").Locator(`td[data-date="`+added+`"]`)).ToHaveClass(regexp.MustCompile(`\badded\b`)))
			}
			must(t, "the removed day in the year", expect.Locator(page.GetByTestId("calendar-year").Locator(`td[data-date="`+soon[0]+`"]`)).ToHaveClass(regexp.MustCompile(`\bremoved\b`)))
			must(t, "the stored dates are unchanged", expect.Locator(page.GetByTestId("calendar-date-count")).ToHaveText("13"))
			if phone {
				noHorizontalScroll(t, page, "the impact")
			} else {
				checkA11y(t, page, "the impact of an edit")
			}
			must(t, "scroll to the impact", impact.ScrollIntoViewIfNeeded())
			shootJob(t, page, "console-calendar-impact"+vp.suffix+".png")

			// The schedule form with the calendar chosen: the live preview
			// says which fires move.
			gotoOK(t, page, "/waterline/schedules/new")
			fill(t, page, "schedule_id", "vendor-payments")
			fill(t, page, "cron_expressions", "0 9 * * 1-5")
			fill(t, page, "timezone", "America/New_York")
			more := page.GetByTestId("more-when")
			must(t, "open the calendar fields", more.Locator("summary").Click())
			fill(t, page, "exclude_calendars", "us-bank-holidays")
			_, err := page.GetByTestId("input-on_excluded").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("next_business_day")})
			must(t, "on a calendar day", err)
			preview := page.GetByTestId("spec-preview")
			must(t, "described with the calendar", expect.Locator(preview.GetByTestId("spec-description")).ToContainText("except days in us-bank-holidays"))
			notes := preview.GetByTestId("preview-calendar-note")
			for _, d := range soon {
				note := notes.Filter(playwright.LocatorFilterOptions{HasText: d + " 09:00 moved to"})
				must(t, "the closure "+d+" moved", expect.Locator(note).ToHaveCount(1))
				must(t, "named with its calendar", expect.Locator(note).ToContainText("(us-bank-holidays)"))
			}
			for _, d := range soon {
				day, err := time.Parse(time.DateOnly, d)
				must(t, "date", err)
				moved := preview.GetByTestId("preview-moved").Filter(playwright.LocatorFilterOptions{HasText: "moved from " + day.Format("Mon 01-02")})
				must(t, "the fire moved off "+d+" marked in the list", expect.Locator(moved).ToHaveCount(1))
			}
			if phone {
				noHorizontalScroll(t, page, "the form with a calendar")
				// The calendar fields, then the preview under them.
				_, err := page.GetByTestId("field-exclude_calendars").Evaluate(`el => el.scrollIntoView({block: "start"})`, nil)
				must(t, "scroll to the calendar fields", err)
			} else {
				must(t, "scroll to the preview", preview.ScrollIntoViewIfNeeded())
			}
			shootJob(t, page, "console-form-calendar"+vp.suffix+".png")
		}
	})
}

// nextWeekdays are n Monday-to-Friday dates after now, the first at least
// skip days ahead and each three weekdays after the one before (so the
// business days they move to are distinct).
func nextWeekdays(now time.Time, skip, n int) []string {
	weekday := func(d time.Time) bool { return d.Weekday() != time.Saturday && d.Weekday() != time.Sunday }
	var out []string
	d := now.AddDate(0, 0, skip)
	for !weekday(d) {
		d = d.AddDate(0, 0, 1)
	}
	for len(out) < n {
		out = append(out, d.Format(time.DateOnly))
		for k := 0; k < 3; {
			if d = d.AddDate(0, 0, 1); weekday(d) {
				k++
			}
		}
	}
	return out
}

func firstSaturday(year int) string {
	d := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
	for d.Weekday() != time.Saturday {
		d = d.AddDate(0, 0, 1)
	}
	return d.Format(time.DateOnly)
}

func slicesWithout(s []string, drop string) []string {
	var out []string
	for _, v := range s {
		if v != drop {
			out = append(out, v)
		}
	}
	return out
}
