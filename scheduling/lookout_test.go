package scheduling_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
)

// In a served loop the housekeeping tasks decide from the period's one
// reading of the loop's work: a timed pause that the reading knew ends
// on time, even within the period; one set after the reading waits for
// the next reading, one period at most.
func TestTasksShareOneReadingAPeriod(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("hourly", "0 * * * *"))
		f.create(cronInput("five", "*/5 * * * *"))
		const period = 10 * time.Second
		scheduling.ShareLoopWork(f.svc, period)
		pause := func(id string, until time.Time) {
			t.Helper()
			_, err := f.svc.Pause(f.ctx, "default", id, scheduling.PauseInput{Reason: "x", Until: &until}, nil)
			require.NoError(t, err)
		}
		resume := func() []string {
			t.Helper()
			resumed, err := f.svc.ResumeDue(f.ctx, 10)
			require.NoError(t, err)
			return resumed
		}

		start := f.clock.Now()
		_, err := scheduling.ReadLoopWork(f.svc, f.ctx)
		require.NoError(t, err)
		pause("five", start.Add(2*time.Second))
		f.clock.Set(start.Add(3 * time.Second))
		require.Empty(t, resume(), "the period's reading saw no pause")
		f.clock.Set(start.Add(period))
		require.Equal(t, []string{"default/five"}, resume(), "a period later the tasks read again")

		pause("hourly", start.Add(period+5*time.Second))
		_, err = scheduling.ReadLoopWork(f.svc, f.ctx)
		require.NoError(t, err)
		f.clock.Set(start.Add(period + 4*time.Second))
		require.Empty(t, resume())
		f.clock.Set(start.Add(period + 5*time.Second))
		require.Equal(t, []string{"default/hourly"}, resume(), "a pause the reading knew ends at its time, within the period")
	})
}
