package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// Issue 33: a running backfill job in a real Chromium. A year of minutes,
// paced at 600 a minute, on a server without its loop (so the job stays
// where its first slice left it): the schedule page shows its progress bar,
// counts and ETA; Pause, Resume and Cancel work through htmx; the
// Backfills page lists it. It writes /tmp screenshots at 1440×900 and
// 390×844 (docs/ too with TIDELINE_SCREENSHOTS=1).
func TestBackfillJobProgressInTheConsole(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "per-minute-ingest", Cron: "* * * * *", WorkflowType: "ingest.Minutely", Overlap: "allow_all"})
		now := time.Now().UTC().Truncate(time.Minute)
		var env struct {
			Backfill backfillJob `json:"backfill"`
		}
		api.must(http.MethodPost, "/schedules/per-minute-ingest/backfill", map[string]any{
			"from": now.AddDate(-1, 0, 0).Format(time.RFC3339), "to": now.Format(time.RFC3339), "max_per_minute": 600,
			"reason": "replay after the ingest outage",
		}, http.StatusAccepted, &env)
		if env.Backfill.Status != "running" || env.Backfill.Started != 60 {
			t.Fatalf("the job: %+v, want running with 60 started", env.Backfill)
		}

		for _, vp := range []struct {
			name          string
			width, height int
		}{{"desktop", 1440, 900}, {"phone", 390, 844}} {
			page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
			must(t, "viewport", page.SetViewportSize(vp.width, vp.height))
			gotoOK(t, page, "/waterline/schedules/per-minute-ingest")
			job := page.GetByTestId("schedule-backfills").GetByTestId("backfill-job")
			must(t, "the job on the schedule page", expect.Locator(job).ToHaveAttribute("data-status", "running"))
			must(t, "started", expect.Locator(job.GetByTestId("backfill-started")).ToHaveText("60"))
			must(t, "remaining", expect.Locator(job.GetByTestId("backfill-remaining")).ToHaveText("525540"))
			must(t, "ETA", expect.Locator(job.GetByTestId("backfill-eta")).ToContainText("ETA"))
			must(t, "bar", expect.Locator(job.GetByTestId("backfill-progress")).ToBeVisible())
			must(t, "scroll to it", job.ScrollIntoViewIfNeeded())
			shootJob(t, page, "console-backfill-job-"+vp.name+".png")
		}

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		gotoOK(t, page, "/waterline/schedules/per-minute-ingest")
		job := page.GetByTestId("schedule-backfills").GetByTestId("backfill-job")
		must(t, "pause", job.GetByTestId("backfill-pause").Click())
		must(t, "paused", expect.Locator(job).ToHaveAttribute("data-status", "paused"))
		must(t, "resume", job.GetByTestId("backfill-resume").Click())
		must(t, "running again", expect.Locator(job).ToHaveAttribute("data-status", "running"))
		page.OnDialog(func(d playwright.Dialog) { _ = d.Accept() })
		must(t, "cancel", job.GetByTestId("backfill-cancel").Click())
		must(t, "cancelled", expect.Locator(job).ToHaveAttribute("data-status", "cancelled"))
		must(t, "no actions left", expect.Locator(job.GetByTestId("backfill-pause")).ToHaveCount(0))

		must(t, "Backfills in the navigation", page.GetByTestId("nav-backfills").Click())
		row := page.GetByTestId("backfill-row")
		must(t, "listed", expect.Locator(row).ToHaveCount(1))
		must(t, "its status", expect.Locator(row).ToHaveAttribute("data-status", "cancelled"))
		shootJob(t, page, "console-backfills-list.png")
	})
}

// shootJob writes a screenshot to the test's temporary folder (looked at
// while developing) and, with TIDELINE_SCREENSHOTS=1, to docs/.
func shootJob(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "tideline-backfill-shots")
	must(t, "shots dir", os.MkdirAll(dir, 0o755))
	_, err := page.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(filepath.Join(dir, name)), Animations: playwright.ScreenshotAnimationsDisabled})
	must(t, "screenshot "+name, err)
	if os.Getenv(screenshotsEnv) == "1" {
		shoot(t, page, name)
	}
}
