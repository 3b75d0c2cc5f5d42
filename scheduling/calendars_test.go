package scheduling_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/timespec"
)

func (f *fixture) calendar(name string, dates ...string) *models.Calendar {
	f.t.Helper()
	c, err := f.svc.CreateCalendar(f.ctx, "default", scheduling.CalendarInput{Name: name, Dates: dates}, nil)
	require.NoError(f.t, err)
	return c
}

func (f *fixture) setDates(name string, dates ...string) *scheduling.CalendarChange {
	f.t.Helper()
	if dates == nil {
		dates = []string{}
	}
	ch, err := f.svc.UpdateCalendar(f.ctx, "default", name, scheduling.CalendarInput{Dates: dates}, &scheduling.CommandContext{Actor: "ops", Source: "api"})
	require.NoError(f.t, err)
	return ch
}

func calendarInput(id, cron, on string, calendars ...string) scheduling.CreateInput {
	in := cronInput(id, cron)
	in.Spec.ExcludeCalendars, in.Spec.OnExcluded = calendars, on
	return in
}

func requireCodeFields(t *testing.T, err error, code string, fields ...string) {
	t.Helper()
	var v *scheduling.ValidationError
	require.True(t, errors.As(err, &v), "want a validation error, got %v", err)
	require.Equal(t, code, v.Code)
	for _, f := range fields {
		require.Contains(t, v.Fields, f, "fields: %v", v.Fields)
	}
}

// Calendars are CRUD objects with field errors, conflicts and a trail.
func TestCalendarCRUDAndHistory(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		cc := &scheduling.CommandContext{Actor: "alice", Source: "api"}
		desc := "US bank holidays"
		c, err := f.svc.CreateCalendar(f.ctx, "default", scheduling.CalendarInput{Name: "us-bank-holidays", Description: &desc, Dates: []string{"2026-12-25", "2026-07-03", "2026-12-25"}}, cc)
		require.NoError(t, err)
		require.Equal(t, []string{"2026-07-03", "2026-12-25"}, c.Dates)
		require.Equal(t, []string{"sun", "sat"}, c.Weekend, "default weekend, in week order")

		_, err = f.svc.CreateCalendar(f.ctx, "default", scheduling.CalendarInput{Name: "Bad Name", Dates: []string{"2026-02-30", "ok"}, Weekend: []string{"sat", "someday"}}, cc)
		requireCodeFields(t, err, scheduling.CodeValidationFailed, "name", "dates[0]", "dates[1]", "weekend[1]")
		_, err = f.svc.CreateCalendar(f.ctx, "default", scheduling.CalendarInput{Name: "us-bank-holidays"}, cc)
		var conf *scheduling.ConflictError
		require.ErrorAs(t, err, &conf)
		require.Equal(t, scheduling.CodeCalendarAlreadyExists, conf.Code)

		ch, err := f.svc.UpdateCalendar(f.ctx, "default", "us-bank-holidays", scheduling.CalendarInput{Dates: []string{"2026-12-25", "2027-01-01"}, Weekend: []string{"fri", "sat"}}, cc)
		require.NoError(t, err)
		require.Equal(t, []string{"2026-12-25", "2027-01-01"}, ch.Calendar.Dates)
		require.Equal(t, []string{"fri", "sat"}, ch.Calendar.Weekend)
		require.EqualValues(t, 2, ch.Calendar.Version)
		require.Equal(t, desc, ch.Calendar.Description, "a field not given stays")
		_, err = f.svc.UpdateCalendar(f.ctx, "default", "nope", scheduling.CalendarInput{}, cc)
		require.ErrorIs(t, err, scheduling.ErrNotFound)

		page, err := f.svc.ListCalendars(f.ctx, "default", "", 0)
		require.NoError(t, err)
		require.Len(t, page.Calendars, 1)
		_, err = f.svc.ListCalendars(f.ctx, "other", "", 0)
		require.NoError(t, err)

		require.NoError(t, f.svc.DeleteCalendar(f.ctx, "default", "us-bank-holidays", cc))
		_, err = f.svc.GetCalendar(f.ctx, "default", "us-bank-holidays")
		require.ErrorIs(t, err, scheduling.ErrNotFound)
		require.ErrorIs(t, f.svc.DeleteCalendar(f.ctx, "default", "us-bank-holidays", cc), scheduling.ErrNotFound)

		hist, err := f.svc.CalendarHistory(f.ctx, "default", "us-bank-holidays", "", 0)
		require.NoError(t, err)
		var types []string
		for _, e := range hist.Events {
			types = append(types, e.EventType)
			require.Equal(t, "alice", e.Actor)
		}
		require.Equal(t, []string{scheduling.EventCalendarCreated, scheduling.EventCalendarUpdated, scheduling.EventCalendarDeleted}, types)
		var edit struct {
			Added   []string `json:"dates_added"`
			Removed []string `json:"dates_removed"`
		}
		require.NoError(t, json.Unmarshal(hist.Events[1].Payload, &edit))
		require.Equal(t, []string{"2027-01-01"}, edit.Added)
		require.Equal(t, []string{"2026-07-03"}, edit.Removed)
	})
}

// A schedule that lists a calendar skips or moves its dates; a calendar
// change re-plans it in the same transaction; a calendar in use cannot be
// deleted. t0 is Thursday 2026-07-16 12:00 UTC.
func TestCalendarExcludesMovesAndReplans(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		_, err := f.svc.Create(f.ctx, calendarInput("unknown", "0 9 * * *", "", "hol"), nil)
		requireCodeFields(t, err, scheduling.CodeValidationFailed, "spec.exclude_calendars[0]")

		f.calendar("hol", "2026-07-17")
		_, err = f.svc.Create(f.ctx, calendarInput("bad-mode", "0 9 * * *", "sideways", "hol"), nil)
		requireCodeFields(t, err, scheduling.CodeValidationFailed, "spec.on_excluded")
		once := calendarInput("once", "0 9 * * *", "", "hol")
		once.Spec = models.Spec{Timezone: "UTC", At: []string{"2026-07-17T09:00:00Z"}, ExcludeCalendars: []string{"hol"}}
		_, err = f.svc.Create(f.ctx, once, nil)
		requireCodeFields(t, err, scheduling.CodeSpecNeverFires, "spec")

		daily := f.create(calendarInput("daily", "0 9 * * *", "", "hol"))
		require.Equal(t, "2026-07-18T09:00:00Z", daily.NextFireAt.UTC().Format(time.RFC3339), "Friday is excluded, Saturday is not")
		weekdays := f.create(calendarInput("weekdays", "0 9 * * 1-5", timespec.OnExcludedNext, "hol"))
		require.Equal(t, "2026-07-20T09:00:00Z", weekdays.NextFireAt.UTC().Format(time.RFC3339), "moved over the weekend to Monday")
		d, err := f.svc.Describe(f.ctx, "default", "daily")
		require.NoError(t, err)
		require.Equal(t, "At 09:00 every day (UTC), except days in hol", d.SpecDescription)

		// The calendar no longer lists Friday: both re-planned at once.
		ch := f.setDates("hol")
		require.Len(t, ch.Replanned, 2)
		require.Equal(t, "2026-07-17T09:00:00Z", f.get("daily").NextFireAt.UTC().Format(time.RFC3339))
		require.Equal(t, "2026-07-17T09:00:00Z", f.get("weekdays").NextFireAt.UTC().Format(time.RFC3339))

		// Friday and Monday listed: the weekday moves on to Tuesday.
		f.setDates("hol", "2026-07-17", "2026-07-20")
		require.Equal(t, "2026-07-18T09:00:00Z", f.get("daily").NextFireAt.UTC().Format(time.RFC3339))
		require.Equal(t, "2026-07-21T09:00:00Z", f.get("weekdays").NextFireAt.UTC().Format(time.RFC3339))

		// The moved fire is named by the time it fires.
		f.clock.Set(time.Date(2026, 7, 21, 9, 0, 0, 0, time.UTC))
		f.tick()
		w := f.get("weekdays")
		require.NotNil(t, w.LatestInstanceID)
		require.Equal(t, "schedule:weekdays:"+strconv.FormatInt(time.Date(2026, 7, 21, 9, 0, 0, 0, time.UTC).Unix(), 10), *w.LatestInstanceID)
		require.Equal(t, "2026-07-22T09:00:00Z", w.NextFireAt.UTC().Format(time.RFC3339))

		// In use: 409 naming the schedules; deleted schedules do not count.
		err = f.svc.DeleteCalendar(f.ctx, "default", "hol", nil)
		var conf *scheduling.ConflictError
		require.ErrorAs(t, err, &conf)
		require.Equal(t, scheduling.CodeCalendarInUse, conf.Code)
		require.ElementsMatch(t, []string{"daily", "weekdays"}, conf.Schedules)
		view, err := f.svc.GetCalendar(f.ctx, "default", "hol")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"daily", "weekdays"}, view.UsedBy)
		for _, id := range []string{"daily", "weekdays"} {
			_, err := f.svc.Delete(f.ctx, "default", id, nil)
			require.NoError(t, err)
		}
		require.NoError(t, f.svc.DeleteCalendar(f.ctx, "default", "hol", nil))

		// A preview lists the excluded occurrence with its calendar.
		f.calendar("hol2", "2026-07-23")
		p, err := f.svc.PreviewSpec(f.ctx, "default", models.Spec{CronExpressions: []string{"0 9 * * *"}, ExcludeCalendars: []string{"hol2"}}, f.clock.Now(), 3)
		require.NoError(t, err)
		require.Equal(t, timespec.StatusPlanned, p.Items[0].Status)
		require.Equal(t, timespec.StatusExcluded, p.Items[1].Status)
		require.Equal(t, "hol2", p.Items[1].Calendar)
	})
}

// Calendar edits while ticks run leave every schedule's next fire as the
// final calendar says (PostgreSQL, where they run at once; SQLite too).
func TestCalendarEditsWhileTicksRun(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.clock.Set(t0.Add(-24 * time.Hour))
		f.calendar("flip")
		const n = 40
		for i := range n {
			f.create(calendarInput(fmt.Sprintf("s%02d", i), "0 9 * * *", "", "flip"))
		}
		f.clock.Set(t0) // every schedule is due (09:00 today) and fires from now on
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		edits := 12
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range edits {
				dates := []string{}
				if i%2 == 0 {
					dates = []string{"2026-07-17"}
				}
				if _, err := f.svc.UpdateCalendar(f.ctx, "default", "flip", scheduling.CalendarInput{Dates: dates}, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 30 {
				if _, err := f.svc.Tick(f.ctx, 7); err != nil {
					errs <- err
					return
				}
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		for len(f.tick()) > 0 {
		}
		// The last edit (i = 11) listed no date: every next fire is Friday's.
		for i := range n {
			s := f.get(fmt.Sprintf("s%02d", i))
			require.EqualValues(t, 1, s.FiresCount, s.ScheduleID)
			require.Equal(t, "2026-07-17T09:00:00Z", s.NextNominalAt.UTC().Format(time.RFC3339), s.ScheduleID)
		}
	})
}

// The ledger lists what calendars did: an excluded occurrence, a moved one
// with where it went, and the fire it became with where it came from.
func TestLedgerShowsExcludedAndMoved(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.clock.Set(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
		f.calendar("hol", "2026-07-03", "2026-07-10")
		f.create(calendarInput("skipper", "0 9 * * 5", "", "hol"))
		mover := calendarInput("mover", "0 9 * * 5", timespec.OnExcludedNext, "hol")
		mover.OverlapPolicy = scheduling.OverlapAllowAll // no worker ends the first run
		f.create(mover)
		for _, at := range []time.Time{time.Date(2026, 7, 6, 9, 0, 0, 0, time.UTC), time.Date(2026, 7, 13, 9, 0, 0, 0, time.UTC)} {
			f.clock.Set(at)
			f.tick()
		}
		from, to := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 7, 14, 0, 0, 0, 0, time.UTC)
		fates := func(id string) []string {
			var out []string
			for _, o := range f.ledger(id, scheduling.LedgerQuery{From: &from, To: &to}).Occurrences {
				s := o.Time.Format("01-02") + " " + o.Fate
				if o.MovedTo != nil {
					s += " to " + o.MovedTo.Format("01-02")
				}
				if o.MovedFrom != nil {
					s += " from " + o.MovedFrom.Format("01-02")
				}
				if o.Calendar != "" {
					s += " (" + o.Calendar + ")"
				}
				out = append(out, s)
			}
			return out
		}
		require.Equal(t, []string{"07-03 excluded (hol)", "07-10 excluded (hol)"}, fates("skipper"))
		require.Equal(t, []string{"07-03 moved to 07-06 (hol)", "07-06 started from 07-03 (hol)", "07-10 moved to 07-13 (hol)", "07-13 started from 07-10 (hol)"}, fates("mover"))
	})
}

// A backfill over a range with a moved occurrence starts it once, at the
// time it fires, and a second backfill over the range starts nothing.
func TestBackfillOverMovedOccurrencesIsIdempotent(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.clock.Set(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
		f.calendar("hol", "2026-07-10")
		in := calendarInput("weekdays", "0 9 * * 1-5", timespec.OnExcludedNext, "hol")
		in.OverlapPolicy = scheduling.OverlapAllowAll
		f.create(in)
		f.clock.Set(time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC))
		window := scheduling.BackfillInput{From: time.Date(2026, 7, 6, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 7, 14, 0, 0, 0, 0, time.UTC)}
		first, err := f.svc.Backfill(f.ctx, "default", "weekdays", window)
		require.NoError(t, err)
		var times []string
		for _, r := range first.Results {
			require.Equal(t, "started", r.Outcome, r.OccurrenceTime)
			times = append(times, r.OccurrenceTime.Format("01-02"))
		}
		require.Equal(t, []string{"07-06", "07-07", "07-08", "07-09", "07-13"}, times, "Friday moved onto Monday's own fire: once")
		again, err := f.svc.Backfill(f.ctx, "default", "weekdays", window)
		require.NoError(t, err)
		for _, r := range again.Results {
			require.Equal(t, "skipped", r.Outcome)
			require.Equal(t, scheduling.SkipAlreadyStart, r.Reason)
		}
		require.Len(t, again.Results, 5)
	})
}

// The impact of a proposed change lists the fires it adds and removes for
// each schedule using the calendar, and writes nothing.
func TestCalendarImpact(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.calendar("hol", "2026-07-17")
		f.create(calendarInput("daily", "0 9 * * *", "", "hol"))
		f.create(calendarInput("other", "0 9 * * *", "")) // uses no calendar
		im, err := f.svc.CalendarImpact(f.ctx, "default", "hol", scheduling.CalendarInput{Dates: []string{"2026-07-18"}})
		require.NoError(t, err)
		require.Len(t, im.Schedules, 1)
		require.Equal(t, "daily", im.Schedules[0].ScheduleID)
		require.Equal(t, []time.Time{time.Date(2026, 7, 17, 9, 0, 0, 0, time.UTC)}, im.Schedules[0].Added)
		require.Equal(t, []time.Time{time.Date(2026, 7, 18, 9, 0, 0, 0, time.UTC)}, im.Schedules[0].Removed)
		view, err := f.svc.GetCalendar(f.ctx, "default", "hol")
		require.NoError(t, err)
		require.Equal(t, []string{"2026-07-17"}, view.Calendar.Dates, "nothing written")
		_, err = f.svc.CalendarImpact(f.ctx, "default", "hol", scheduling.CalendarInput{Dates: []string{"bad"}})
		requireCodeFields(t, err, scheduling.CodeValidationFailed, "dates[0]")
	})
}
