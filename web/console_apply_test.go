package web_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
)

// A schedule that `schedule apply` manages carries a badge and warns before
// an edit: the next apply would undo it.
func TestConsoleEditWarnsOnAppliedSchedule(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", dailyBody)
		require.Zero(t, c.page200("/waterline/schedules/daily-sync/edit").Find(tid("flash")).Length())

		c.create("default", strings.Replace(strings.Replace(dailyBody, `"daily-sync"`, `"applied"`, 1),
			`"team":"billing"`, `"team":"billing","tideline.dev/managed-by":"apply"`, 1))
		flash := c.page200("/waterline/schedules/applied/edit").Find(tid("flash"))
		require.Equal(t, 1, flash.Length())
		require.Contains(t, flash.Text(), "Managed by apply: applied is kept in a schedules file")

		// The registry and the schedule page mark it; others are unmarked.
		registry := c.page200("/waterline/schedules")
		require.Equal(t, 1, rowOf(registry, "applied").Find(tid("managed-by-apply")).Length())
		require.Zero(t, rowOf(registry, "daily-sync").Find(tid("managed-by-apply")).Length())
		require.Equal(t, "apply", textOf(c.page200("/waterline/schedules/applied").Find("h1 "+tid("managed-by-apply"))))
	})
}
