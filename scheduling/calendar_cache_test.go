package scheduling

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/timespec"
)

// The calendar cache stays within its bound, whatever the namespaces and
// names, and forgets exactly what it is told.
func TestCalendarCacheIsBounded(t *testing.T) {
	t.Parallel()
	var c calendarCache
	for i := range 3 * maxCachedCalendars {
		cal, err := timespec.NewCalendar(fmt.Sprintf("c%d", i), []string{"2026-12-25"}, nil)
		require.NoError(t, err)
		c.put(fmt.Sprintf("ns%d", i%7), cachedCalendar{version: 1, cal: cal})
		total := 0
		for _, m := range c.ns {
			total += len(m)
		}
		require.Equal(t, c.n, total)
		require.LessOrEqual(t, total, maxCachedCalendars)
	}
	name := fmt.Sprintf("c%d", 3*maxCachedCalendars-1)
	ns := fmt.Sprintf("ns%d", (3*maxCachedCalendars-1)%7)
	require.Contains(t, c.ns[ns], name, "the newest is kept")
	c.forget(ns, name)
	require.NotContains(t, c.ns[ns], name)
	require.Equal(t, maxCachedCalendars-1, c.n)
	c.forget(ns, name) // twice: no change
	require.Equal(t, maxCachedCalendars-1, c.n)
}
