package timespec

import (
	"errors"
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
		{"BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20261225\nRRULE:FREQ=WEEKLY\nEND:VEVENT\nEND:VCALENDAR", "line 4: RRULE FREQ \"WEEKLY\" is not supported"},
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
