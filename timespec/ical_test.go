package timespec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseICalDates(t *testing.T) {
	t.Parallel()
	ics := strings.Join([]string{
		"BEGIN:VCALENDAR",
		"VERSION:2.0",
		"BEGIN:VEVENT",
		"SUMMARY:Christmas",
		"DTSTART;VALUE=DATE:20261225",
		"DTEND;VALUE=DATE:20261226",
		"END:VEVENT",
		"BEGIN:VEVENT",
		"SUMMARY:Long",
		" weekend",
		"DTSTART;VALUE=DATE:20261231",
		"DTEND;VALUE=DATE:20270102",
		"END:VEVENT",
		"BEGIN:VEVENT",
		"SUMMARY:Standup",
		"DTSTART:20261224T090000Z",
		"END:VEVENT",
		"BEGIN:VEVENT",
		"DTSTART:20240704",
		"RRULE:FREQ=YEARLY;COUNT=3",
		"END:VEVENT",
		"BEGIN:VEVENT",
		"DTSTART;VALUE=DATE:20240229",
		"RRULE:FREQ=YEARLY;UNTIL=20290101",
		"END:VEVENT",
		"END:VCALENDAR",
	}, "\r\n")
	dates, skipped, err := ParseICalDates(strings.NewReader(ics))
	require.NoError(t, err)
	require.Equal(t, 1, skipped, "the timed event")
	require.Equal(t, []string{"2024-02-29", "2024-07-04", "2025-07-04", "2026-07-04", "2026-12-25", "2026-12-31", "2027-01-01", "2028-02-29"}, dates)

	bad := []struct{ ics, want string }{
		{"hello", "line 1: \"hello\" is not an iCalendar content line"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:2026-12-25\nEND:VEVENT\nEND:VCALENDAR", "line 3: DTSTART: \"2026-12-25\" is not a date"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20261225\nRRULE:FREQ=HOURLY\nEND:VEVENT\nEND:VCALENDAR", "line 4: RRULE \"FREQ=HOURLY\" repeats within a day"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20261225\nRRULE:FREQ=FORTNIGHTLY\nEND:VEVENT\nEND:VCALENDAR", "line 4: RRULE \"FREQ=FORTNIGHTLY\" cannot be read"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20261225\nRRULE:FREQ=YEARLY\nEXDATE:2027-12-25\nEND:VEVENT\nEND:VCALENDAR", "line 5: EXDATE: \"2027-12-25\" is not a date"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20261225\nRRULE:FREQ=DAILY\nEND:VEVENT\nEND:VCALENDAR", "line 4: RRULE \"FREQ=DAILY\" gives more than 20000 dates"},
		{"BEGIN:VCALENDAR\nBEGIN:VTODO\nBEGIN:VEVENT\nEND:VEVENT\nEND:VTODO\nEND:VCALENDAR", "line 3: VEVENT inside VTODO"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20261225\nEND:VTODO\nEND:VEVENT\nEND:VCALENDAR", "line 4: END:VTODO without BEGIN:VTODO"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;X=\"unclosed:20261225\nEND:VEVENT\nEND:VCALENDAR", "line 3: "},
		{"BEGIN:VCALENDAR\n" + strings.Repeat("BEGIN:VEVENT\nDTSTART:20261225\nRRULE:FREQ=YEARLY;COUNT=1\nEND:VEVENT\n", MaxICalRecurring+1) + "END:VCALENDAR",
			fmt.Sprintf("line %d: more than %d recurring events", 2+4*MaxICalRecurring+2, MaxICalRecurring)},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nSUMMARY:x\nEND:VEVENT\nEND:VCALENDAR", "line 2: VEVENT without DTSTART"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20261225\nEND:VCALENDAR", "line 2: VEVENT without END:VEVENT"},
		{"BEGIN:VEVENT\nEND:VEVENT", "line 1: VEVENT outside BEGIN:VCALENDAR"},
		{"BEGIN:VCALENDAR\nX:" + strings.Repeat("a", MaxICalLine+10) + "\nEND:VCALENDAR", "line 2: cannot read"},
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20000101\nRRULE:FREQ=YEARLY;COUNT=20000\nEND:VEVENT\nBEGIN:VEVENT\nDTSTART:20000102\nRRULE:FREQ=YEARLY;COUNT=20000\nEND:VEVENT\nEND:VCALENDAR", ""},
	}
	for _, b := range bad {
		_, _, err := ParseICalDates(strings.NewReader(b.ics))
		if b.want == "" {
			require.NoError(t, err) // 100 + 100 dates: years end at 2099
			continue
		}
		require.Error(t, err, b.want)
		require.Contains(t, err.Error(), b.want)
	}
}

// Real holiday files write floating holidays as rules (the fourth Thursday
// of November, the last Monday of May), quote parameters, use lower-case
// names and nest alarms in events; RDATE and EXDATE move a year's date.
func TestParseICalDatesRecurrenceRules(t *testing.T) {
	t.Parallel()
	ics := strings.Join([]string{
		"begin:vcalendar",
		"BEGIN:VEVENT",
		"SUMMARY:Thanksgiving",
		`DTSTART;X-SOURCE="https://example.com/a;b:c";VALUE=DATE:20241128`,
		"RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=4TH;UNTIL=20261231",
		"BEGIN:VALARM",
		"TRIGGER:-PT15M",
		"DTSTART:19990101",
		"END:VALARM",
		"END:VEVENT",
		"BEGIN:VEVENT",
		"SUMMARY:Memorial Day",
		"DTSTART;VALUE=DATE:20250526",
		"RRULE:FREQ=YEARLY;BYMONTH=5;BYDAY=-1MO;COUNT=2",
		"END:VEVENT",
		"BEGIN:VEVENT",
		"SUMMARY:Winter break",
		"DTSTART;VALUE=DATE:20261228",
		"RRULE:FREQ=DAILY;COUNT=3",
		"EXDATE;VALUE=DATE:20261229",
		"RDATE;VALUE=DATE:20270102,20270103",
		"END:VEVENT",
		"end:vcalendar",
	}, "\r\n")
	dates, skipped, err := ParseICalDates(strings.NewReader(ics))
	require.NoError(t, err)
	require.Zero(t, skipped)
	require.Equal(t, []string{
		"2024-11-28", "2025-05-26", "2025-11-27", "2026-05-25", "2026-11-26",
		"2026-12-28", "2026-12-30", "2027-01-02", "2027-01-03",
	}, dates, "the alarm's DTSTART is not the event's")
}

// FuzzParseICalDates: any input is answered with dates or a line-numbered
// error, never a panic, and never more dates than a calendar holds.
func FuzzParseICalDates(f *testing.F) {
	f.Add("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nEND:VEVENT\nEND:VCALENDAR\n")
	f.Add("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20240229\nDTEND:20240302\nRRULE:FREQ=YEARLY;INTERVAL=4\nEND:VEVENT\nEND:VCALENDAR")
	f.Add("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:20261224T090000Z\r\n SUMMARY\r\nEND:VEVENT\r\n")
	f.Fuzz(func(t *testing.T, text string) {
		dates, _, err := ParseICalDates(strings.NewReader(text))
		if err != nil {
			var ie *ICalError
			if !errors.As(err, &ie) || ie.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		if len(dates) > MaxCalendarDates {
			t.Fatalf("%d dates", len(dates))
		}
		if _, err := NewCalendar("x", dates, nil); err != nil {
			t.Fatalf("dates do not make a calendar: %v", err)
		}
	})
}
