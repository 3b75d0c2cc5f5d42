package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// The Calendars pages without JavaScript: create (a bad date named), the
// calendar's page with the schedule using it, an edit's impact shown
// before saving (nothing saved), the save, a refused delete, the history.
func TestConsoleCalendars(t *testing.T) {
	t.Parallel()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &consoleClient{t: t, api: newNotifyAPI(t), jar: jar}

	doc := c.page200("/waterline/calendars")
	require.Equal(t, 1, doc.Find(tid("nav-calendars")).Length())
	require.Equal(t, 1, doc.Find(tid("empty-state")).Length())
	form := formValues(doc.Find(tid("calendar-form")))
	require.ElementsMatch(t, []string{"sat", "sun"}, form["weekend"], "the default weekend")

	form.Set("name", "hol")
	form.Set("dates", "2026-07-17\n2026-13-01\n")
	p := c.post("/waterline/calendars", form)
	require.Equal(t, http.StatusUnprocessableEntity, p.Status, p.Raw)
	require.Contains(t, fieldError(p.Doc, "dates"), "2026-13-01")
	form.Set("dates", "2026-07-17\n")
	loc := seeOther(t, c.post("/waterline/calendars", form))
	require.Equal(t, "/waterline/calendars/hol", loc)

	c.api.must(201, "POST", v2+"/schedules", `{"schedule_id":"daily","spec":{"cron_expressions":["0 9 * * *"],"exclude_calendars":["hol"]},"action":{"workflow_type":"w"}}`)
	doc = c.page200(loc)
	require.Equal(t, "daily", textOf(doc.Find(tid("calendar-used-by"))))
	require.Equal(t, "1", textOf(doc.Find(tid("calendar-date-count"))))

	edit := formValues(doc.Find(tid("calendar-form")))
	edit.Set("dates", "2026-07-18")
	edit.Set("intent", "impact")
	p = c.post(loc, edit)
	require.Equal(t, http.StatusOK, p.Status, p.Raw)
	impact := textOf(p.Doc.Find(tid("impact-schedule")))
	require.Contains(t, impact, "daily")
	require.Equal(t, "2026-07-17 09:00 UTC", textOf(p.Doc.Find(tid("impact-added"))), "in the schedule's zone")
	require.Equal(t, "2026-07-18 09:00 UTC", textOf(p.Doc.Find(tid("impact-removed"))))
	year := p.Doc.Find(tid("calendar-year"))
	require.Equal(t, 1, year.Find(tid("calendar-month")).Length(), "only the month the edit changes")
	require.True(t, year.Find(`td[data-date="2026-07-17"]`).HasClass("removed"))
	require.True(t, year.Find(`td[data-date="2026-07-18"]`).HasClass("added"))
	require.Equal(t, "2026-07-18", strings.TrimSpace(p.Doc.Find(tid("calendar-dates")).Text()), "the form keeps the proposed dates")
	require.Equal(t, "1", textOf(c.page200(loc).Find(tid("calendar-date-count"))))
	require.Contains(t, c.page200(loc).Find(tid("calendar-dates")).Text(), "2026-07-17", "nothing saved")

	edit.Set("intent", "save")
	loc = seeOther(t, c.post(loc, edit))
	doc = c.page200(loc)
	require.Contains(t, textOf(doc.Find(tid("flash"))), "1 schedule re-planned")
	require.Contains(t, doc.Find(tid("calendar-dates")).Text(), "2026-07-18")

	loc = seeOther(t, c.post("/waterline/calendars/hol/delete", nil))
	doc = c.page200(loc)
	require.Contains(t, textOf(doc.Find(tid("flash"))), "used by 1 schedule: daily")
	history := textOf(doc.Find(tid("calendar-history")))
	require.Contains(t, history, "CalendarCreated")
	require.Contains(t, history, "CalendarUpdated")
}

// The schedule form's calendar inputs: the live preview says what the
// calendar does, an unknown calendar is an error under its input, and an
// edit keeps (and shows) the spec's calendars.
func TestConsoleScheduleFormCalendars(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.api.must(201, "POST", v2+"/calendars", `{"name":"hol","dates":["2026-07-17"]}`)

		p := c.post("/waterline/schedules/preview", url.Values{"cron_expressions": {"0 9 * * 1-5"}, "exclude_calendars": {"hol"}, "on_excluded": {"next_business_day"}})
		require.Equal(t, http.StatusOK, p.Status, p.Raw)
		require.Contains(t, textOf(p.Doc.Find(tid("spec-description"))), "except days in hol (moved to the next business day)")
		require.Equal(t, "Fri 2026-07-17 09:00 moved to Mon 2026-07-20 09:00 (hol)", textOf(p.Doc.Find(tid("preview-calendar-note")).First()))

		p = c.post("/waterline/schedules/preview", url.Values{"cron_expressions": {"0 9 * * *"}, "exclude_calendars": {"hol, nope"}})
		require.Equal(t, http.StatusUnprocessableEntity, p.Status)
		require.Contains(t, textOf(p.Doc.Find(`[data-testid="preview-error"] li[data-field="exclude_calendars"]`)), `nope: unknown calendar "nope"`)

		c.create("default", `{"schedule_id":"cal-user","spec":{"cron_expressions":["0 9 * * *"],"exclude_calendars":["hol"],"on_excluded":"previous_business_day"},"action":{"workflow_type":"w"}}`)
		doc := c.page200("/waterline/schedules/cal-user/edit")
		edit := formValues(doc.Find(tid("schedule-form")))
		require.Equal(t, "hol", edit.Get("exclude_calendars"))
		require.Equal(t, "previous_business_day", edit.Get("on_excluded"))
		edit.Set("note", "kept")
		seeOther(t, c.post("/waterline/schedules/cal-user/edit", edit))
		got := c.api.must(200, "GET", v2+"/schedules/cal-user", "")
		spec := got["spec"].(map[string]any)
		require.Equal(t, []any{"hol"}, spec["exclude_calendars"], "an edit of another field keeps the calendars")
		require.Equal(t, "previous_business_day", spec["on_excluded"])
	})
}

// A calendar apply wrote last says so — managed_by in the API, the apply
// badge on its console page — until a change by anyone else takes it over.
func TestCalendarManagedByApply(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		managed := func() (string, int) {
			t.Helper()
			body := c.api.must(200, "GET", v2+"/calendars/hol", "")
			by, _ := body["managed_by"].(string)
			return by, c.page200("/waterline/calendars/hol").Find(tid("managed-by-apply")).Length()
		}
		c.api.must(201, "POST", v2+"/calendars", `{"name":"hol","dates":["2026-12-25"]}`, "X-Tideline-Source", "apply")
		by, badges := managed()
		require.Equal(t, "apply", by)
		require.Equal(t, 1, badges)

		c.api.must(200, "PATCH", v2+"/calendars/hol", `{"description":"by hand"}`)
		by, badges = managed()
		require.Empty(t, by, "a change by hand takes it over")
		require.Zero(t, badges)

		c.api.must(200, "PATCH", v2+"/calendars/hol", `{"dates":["2026-12-24"]}`, "X-Tideline-Source", "apply")
		by, _ = managed()
		require.Equal(t, "apply", by, "apply changed it again")
		c.api.must(200, "PATCH", v2+"/calendars/hol", `{"description":"cli"}`, "X-Tideline-Source", "cli")
		by, _ = managed()
		require.Empty(t, by)
	})
}
