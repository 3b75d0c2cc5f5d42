package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The calendar commands on both dialects and in both modes: import from an
// .ics file, a schedule that excludes the calendar, an update that re-plans
// it, describe, list, and a removal refused while the schedule uses it.
func TestCalendarCommands(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		dir := t.TempDir()
		ics := filepath.Join(dir, "holidays.ics")
		require.NoError(t, os.WriteFile(ics, []byte("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20991225\r\nEND:VEVENT\r\n"+
			"BEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20990101\r\nDTEND;VALUE=DATE:20990103\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"), 0o600))
		out := d.run(t, "calendar", "import", "hol", ics, "--description", "holidays")
		require.Contains(t, out, "Created calendar hol in namespace default from "+ics+": 3 dates, weekend sun,sat.")
		require.Contains(t, d.run(t, "calendar", "add", "none-yet", "--weekend", "fri,sat"), "Created calendar none-yet in namespace default: 0 dates, weekend fri,sat.")
		require.Contains(t, d.run(t, "calendar", "add", "no-weekend", "--weekend", "none"), "0 dates, weekend none.")
		require.Contains(t, d.run(t, "calendar", "update", "no-weekend", "--date", "2099-01-01"), "1 dates, weekend none")
		require.Contains(t, d.run(t, "calendar", "update", "no-weekend", "--dates-file", emptyFile(t)), "Updated calendar no-weekend: 0 dates")

		d.run(t, "schedule", "add", "s1", "--workflow-type", "w", "--cron", "0 9 * * *", "--exclude-calendar", "hol")
		var s struct {
			NextFireAt string `json:"next_fire_at"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "describe", "s1", "--output", "json")), &s))
		next, err := time.Parse(time.RFC3339, s.NextFireAt)
		require.NoError(t, err)
		out = d.run(t, "calendar", "update", "hol", "--date", next.UTC().Format(time.DateOnly))
		require.Contains(t, out, "Updated calendar hol: 1 dates, weekend sun,sat (version 2).")
		require.Contains(t, out, "Re-planned 1 schedule:\n  s1: ")

		out = d.run(t, "calendar", "describe", "hol")
		require.Contains(t, out, "Used by:     s1")
		require.Contains(t, out, "Description: holidays")
		require.Contains(t, d.run(t, "schedule", "describe", "s1"), "except days in hol")
		list := d.run(t, "calendar", "list")
		require.Contains(t, list, "hol")
		require.Contains(t, list, "none-yet")

		_, err = d.fail(t, "calendar", "remove", "hol")
		require.Contains(t, err.Error(), "calendar_in_use")
		require.Contains(t, err.Error(), "s1")
		d.run(t, "schedule", "remove", "s1")
		require.Contains(t, d.run(t, "calendar", "remove", "hol"), "Removed calendar hol.")

		bad := filepath.Join(dir, "bad.ics")
		require.NoError(t, os.WriteFile(bad, []byte("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:2099-12-25\nEND:VEVENT\nEND:VCALENDAR\n"), 0o600))
		_, _, err = runCLI(t, d.environ, "calendar", "import", "x", bad)
		require.Error(t, err)
		require.Contains(t, err.Error(), "line 3: DTSTART")
		_, _, err = runCLI(t, d.environ, "calendar", "add", "y", "--date", "tomorrow")
		require.Error(t, err)
		require.True(t, strings.Contains(err.Error(), "dates[0]"), err.Error())
	})
}

func emptyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "none.txt")
	require.NoError(t, os.WriteFile(p, []byte("# no dates\n"), 0o600))
	return p
}
