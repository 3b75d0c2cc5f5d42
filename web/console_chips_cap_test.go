package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// A health chip whose count stopped at its cap says "1,000+", and the
// list it links to says "of more than 1,000"; the chip still lists exactly
// the rows labelled with its state.
func TestConsoleRegistryCappedChip(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		spec := models.Spec{CronExpressions: []string{"* * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"}
		require.NoError(t, loadgen.Seed(context.Background(), db, "late", scheduling.HealthCountCap+1, spec, c.api.clock.Now().Add(-time.Hour)))

		doc := c.page200("/waterline/schedules")
		counts, _ := chipCounts(t, doc)
		require.Equal(t, "1,001", counts["all"])
		require.Equal(t, "1,000+", counts["overdue"])
		title, _ := doc.Find(`[data-chip="overdue"] ` + tid("chip-count")).Attr("title")
		require.Equal(t, "more than 1,000", title)
		_, titled := doc.Find(`[data-chip="all"] ` + tid("chip-count")).Attr("title")
		require.False(t, titled, "an exact count has no title")
		require.Contains(t, textOf(doc.Find(tid("loop-warning"))), "More than 1,000 schedules are more than")

		doc = c.page200("/waterline/schedules?health=overdue")
		require.Equal(t, "1–50 of more than 1,000", textOf(doc.Find(tid("pager-range"))))
		require.Equal(t, 50, doc.Find(`[data-testid="schedule-row"]`).Length())
	})
}
