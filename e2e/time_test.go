package e2e

import (
	"regexp"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// Scenario: the header's time setting changes every visible time: a New
// York schedule's next fire reads in its own zone, then in UTC, then in the
// browser's zone (Tokyo here), and the choice is kept on the next page.
func TestTimeSetting(t *testing.T) {
	forEachDatabase(t, serverOptions{}, func(t *testing.T, srv *server) {
		newAPI(t, srv).createSchedule(sched{ID: "ny-nightly", Cron: "0 2 * * *", Timezone: "America/New_York", WorkflowType: "w"})
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL, TimezoneID: "Asia/Tokyo"})
		gotoOK(t, page, "/waterline/schedules")
		next := scheduleRow(page, "ny-nightly").GetByTestId("next-fire").Locator("time")
		choose := func(pref string) {
			t.Helper()
			_, err := page.GetByTestId("time-pref").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice(pref)})
			must(t, "choose "+pref, err)
		}

		must(t, "schedule's zone", expect.Locator(next).ToHaveText(regexp.MustCompile(`^\d{4}-\d\d-\d\d 02:00 E[SD]T$`)))
		choose("utc")
		must(t, "UTC", expect.Locator(next).ToHaveText(regexp.MustCompile(`^\d{4}-\d\d-\d\d 0[67]:00 UTC$`)))
		choose("local")
		must(t, "browser local", expect.Locator(next).ToHaveText(regexp.MustCompile(`^\d{4}-\d\d-\d\d 1[56]:00 GMT\+9$`)))

		must(t, "open the schedule", scheduleRow(page, "ny-nightly").GetByTestId("schedule-link").Click())
		must(t, "kept across pages", expect.Locator(page.GetByTestId("time-pref")).ToHaveValue("local"))
	})
}
