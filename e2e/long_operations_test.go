package e2e

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// Issue 21, point 6: long operations. A 10,000-occurrence backfill: the dry
// run marks the occurrences an earlier backfill already started and counts
// them, its Start button is on screen without scrolling, and while the
// backfill runs the button is disabled with a spinner; the result counts
// what started and what was skipped.
func TestBackfillOf10000ShowsItsWork(t *testing.T) {
	// With the loop: the server's backfill worker finishes the job.
	forEachDatabase(t, serverOptions{}, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "every-minute", Cron: "* * * * *", WorkflowType: "e2e.Minutely", Overlap: "allow_all"})
		t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
		// The first two occurrences of the window were backfilled before.
		earlier := api.backfill("every-minute", t0, t0.Add(2*time.Minute))
		if earlier.Started != 2 {
			t.Fatalf("earlier backfill: %+v", earlier)
		}

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		must(t, "open Backfill", rowAction(t, scheduleRow(page, "every-minute"), "action-backfill").Click())
		modal := page.GetByTestId("modal")
		panel := modal.GetByTestId("backfill-panel")
		must(t, "backfill modal", expect.Locator(panel).ToBeVisible())
		// The range is typed as 24-hour wall times in the zone the labels name.
		must(t, "From names its zone", expect.Locator(panel.Locator(`label[for="f-from"]`)).ToHaveText("From (UTC)"))
		must(t, "a 24-hour default", expect.Locator(panel.GetByTestId("input-from")).ToHaveValue(regexp.MustCompile(`^\d{4}-\d\d-\d\d [0-2]\d:\d\d$`)))
		must(t, "from", panel.GetByTestId("input-from").Fill("2026-01-05 00:00"))
		// 10,000 minutes: the largest backfill allowed.
		must(t, "to", panel.GetByTestId("input-to").Fill(t0.Add(10000*time.Minute).Format("2006-01-02 15:04")))
		must(t, "preview", panel.GetByTestId("backfill-preview").Click())

		result := modal.GetByTestId("backfill-result")
		must(t, "dry run", expect.Locator(result).ToHaveAttribute("data-dry-run", "true"))
		must(t, "dry-run count", expect.Locator(result.GetByTestId("backfill-count")).ToHaveText("10000"))
		must(t, "dry-run summary", expect.Locator(result.GetByTestId("backfill-summary")).ToHaveText("would start 9998 · skipped 2: 2 already started"))
		rows := result.GetByTestId("backfill-occurrence")
		for i := range earlier.Started {
			row := rows.Nth(i)
			must(t, fmt.Sprintf("occurrence %d marked", i), expect.Locator(row.GetByTestId("outcome-badge")).ToHaveText("skipped"))
			must(t, fmt.Sprintf("occurrence %d reason", i), expect.Locator(row.GetByTestId("backfill-reason")).ToHaveText("already started"))
			must(t, fmt.Sprintf("occurrence %d run", i), expect.Locator(row.Locator("a")).ToHaveText(regexp.MustCompile(`^[0-9A-Z]{26}$`)))
		}
		must(t, "the third would start", expect.Locator(rows.Nth(2).GetByTestId("backfill-planned")).ToHaveText("would start"))
		must(t, "500 listed", expect.Locator(rows).ToHaveCount(500))
		must(t, "the rest counted", expect.Locator(result.GetByTestId("backfill-not-listed")).ToHaveText("…and 9500 more."))

		confirm := result.GetByTestId("backfill-confirm")
		must(t, "Start names what starts", expect.Locator(confirm).ToHaveText("Start 9998 runs"))
		must(t, "Start on screen without scrolling", expect.Locator(confirm).ToBeInViewport())

		must(t, "start", confirm.Click())
		// A job now: the answer comes at once with its first slices done;
		// the panel follows the server's worker until the job ends.
		job := result.GetByTestId("backfill-job")
		must(t, "started", expect.Locator(result).ToHaveAttribute("data-dry-run", "false"))
		must(t, "a progress bar", expect.Locator(job.GetByTestId("backfill-progress")).ToBeVisible())
		long := playwright.LocatorAssertionsToHaveAttributeOptions{Timeout: playwright.Float(180_000)}
		must(t, "the job ends", expect.Locator(job).ToHaveAttribute("data-status", "completed", long))
		must(t, "started count", expect.Locator(result.GetByTestId("backfill-count")).ToHaveText("10000"))
		must(t, "all started", expect.Locator(job.GetByTestId("backfill-started")).ToHaveText("9998"))
		must(t, "the earlier two skipped", expect.Locator(job.GetByTestId("backfill-skipped")).ToHaveText("2"))
		must(t, "none remaining", expect.Locator(job.GetByTestId("backfill-remaining")).ToHaveText("0"))
		must(t, "nothing left to confirm", expect.Locator(result.GetByTestId("backfill-confirm")).ToHaveCount(0))
	})
}
