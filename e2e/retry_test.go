package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// fail fails a claimed run as workerID.
func (a *apiClient) fail(workerID, runID, message string) {
	a.t.Helper()
	a.must(http.MethodPost, "/worker/runs/"+runID+"/fail", map[string]any{"worker_id": workerID, "message": message, "type": "io"}, http.StatusOK, nil)
}

// Issue 37, major 6, in a real Chromium: a failed run's page offers Retry
// now (the same run, pending again for one more attempt) and Run again (a
// new run with its input); the runs list filtered to failed runs offers
// Retry all matching. Screenshots of the failed run with its actions at
// 1440×900 and 390×844 (docs/ with TIDELINE_SCREENSHOTS=1).
func TestFailedRunRetryInTheConsole(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "nightly-ledger-export", Cron: "0 2 * * *", WorkflowType: "ledger.Export", Overlap: "allow_all"})
		var tr struct {
			RunID string `json:"run_id"`
		}
		api.must(http.MethodPost, "/schedules/nightly-ledger-export/trigger", map[string]any{}, http.StatusOK, &tr)
		api.claim("w1")
		api.fail("w1", tr.RunID, "upload to s3://ledger-exports refused: 403 AccessDenied")

		for _, vp := range []struct {
			name          string
			width, height int
		}{{"desktop", 1440, 900}, {"phone", 390, 844}} {
			page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
			must(t, "viewport", page.SetViewportSize(vp.width, vp.height))
			gotoOK(t, page, "/waterline/runs/"+tr.RunID)
			must(t, "open Retry now", page.GetByTestId("run-retry").Locator("summary").Click())
			must(t, "its form", expect.Locator(page.GetByTestId("run-retry-form")).ToBeVisible())
			shootJob(t, page, "console-run-retry-"+vp.name+".png")
		}

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		gotoOK(t, page, "/waterline/runs/"+tr.RunID)
		must(t, "open Retry now", page.GetByTestId("run-retry").Locator("summary").Click())
		must(t, "reason", page.GetByTestId("run-retry-form").Locator(`input[name="reason"]`).Fill("bucket policy fixed"))
		must(t, "retry", page.GetByTestId("run-retry-submit").Click())
		must(t, "flash", expect.Locator(page.GetByTestId("flash")).ToContainText("Retried"))
		must(t, "pending again", expect.Locator(page.Locator("#run-head-status [data-status]")).ToHaveAttribute("data-status", "pending"))
		must(t, "no second retry", expect.Locator(page.GetByTestId("run-retry")).ToHaveCount(0))
		must(t, "the retry in the history", expect.Locator(page.GetByText("RunRetried").First()).ToBeVisible())

		api.claim("w1")
		api.fail("w1", tr.RunID, "still refused")
		gotoOK(t, page, "/waterline/runs/"+tr.RunID)
		must(t, "open Run again", page.GetByTestId("run-again").Locator("summary").Click())
		must(t, "run again", page.GetByTestId("run-again-submit").Click())
		must(t, "the new run's page", expect.Page(page).Not().ToHaveURL(regexp.MustCompile(regexp.QuoteMeta(tr.RunID)+"$")))
		must(t, "started again", expect.Locator(page.GetByTestId("flash")).ToContainText("Started again"))

		gotoOK(t, page, "/waterline/runs?status=failed")
		must(t, "retry all matching", page.GetByTestId("runs-retry-matching").Locator("summary").Click())
		must(t, "retry them", page.GetByTestId("runs-retry-matching-submit").Click())
		must(t, "counted", expect.Locator(page.GetByTestId("flash")).ToHaveText(regexp.MustCompile(`Retried 1 run`)))
		must(t, "none failed now", expect.Locator(page.GetByTestId("empty-state")).ToBeVisible())
	})
}

// Issue 37, major 4: under every overlap policy, chosen in the dialog, the
// dry run's "would start" is what the backfill then starts, for a skip
// schedule whose last run is still pending (the case the old dry run got
// wrong: it promised every occurrence).
func TestBackfillDryRunMatchesTheBackfillUnderEveryPolicy(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "viewport", page.SetViewportSize(1440, 900))
		summary := regexp.MustCompile(`^would start (\d+)(?: · buffered (\d+))? · skipped (\d+)`)
		for _, c := range []struct{ policy, state string }{
			{"", "idle"}, {"", "pending"}, {"skip", "pending"}, {"buffer_one", "idle"}, {"buffer_one", "pending"},
			{"buffer_all", "pending"}, {"allow_all", "pending"}, {"cancel_other", "pending"}, {"terminate_other", "idle"},
		} {
			policy := c.policy
			id := "hourly-" + strings.ReplaceAll(policy, "_", "-") + "-" + c.state
			if policy == "" {
				id = "hourly-default-" + c.state
			}
			api.createSchedule(sched{ID: id, Cron: "0 * * * *", WorkflowType: "e2e.Hourly"})
			if c.state == "pending" {
				api.must(http.MethodPost, "/schedules/"+id+"/trigger", map[string]any{}, http.StatusOK, nil) // no worker: it stays pending
			}

			gotoOK(t, page, "/waterline/schedules/"+id+"/backfill")
			panel := page.GetByTestId("backfill-panel")
			must(t, "from", panel.GetByTestId("input-from").Fill("2026-07-01 00:00"))
			must(t, "to", panel.GetByTestId("input-to").Fill("2026-07-01 06:00"))
			if policy != "" {
				_, err := panel.GetByTestId("input-overlap_policy").SelectOption(playwright.SelectOptionValues{Values: &[]string{policy}})
				must(t, "policy "+policy, err)
			}
			must(t, "preview", panel.GetByTestId("backfill-preview").Click())
			result := page.GetByTestId("backfill-result")
			must(t, "dry run", expect.Locator(result).ToHaveAttribute("data-dry-run", "true"))
			text, err := result.GetByTestId("backfill-summary").TextContent()
			must(t, "summary", err)
			m := summary.FindStringSubmatch(strings.TrimSpace(text))
			if m == nil {
				t.Fatalf("%s: summary %q", id, text)
			}
			if m[1] == "0" {
				// Nothing would start: the dialog says so and offers no Start.
				must(t, id+": nothing", expect.Locator(result.GetByTestId("backfill-nothing")).ToBeVisible())
				continue
			}
			must(t, id+": start", result.GetByTestId("backfill-confirm").Click())
			job := page.GetByTestId("backfill-result").GetByTestId("backfill-job")
			must(t, id+": done", expect.Locator(job).ToHaveAttribute("data-status", "completed", playwright.LocatorAssertionsToHaveAttributeOptions{Timeout: playwright.Float(10_000)}))
			must(t, fmt.Sprintf("%s: started as predicted (%s)", id, text), expect.Locator(job.GetByTestId("backfill-started")).ToHaveText(m[1]))
			must(t, fmt.Sprintf("%s: skipped as predicted (%s)", id, text), expect.Locator(job.GetByTestId("backfill-skipped")).ToHaveText(m[3]))
			if m[2] != "" {
				must(t, fmt.Sprintf("%s: buffered as predicted (%s)", id, text), expect.Locator(job.GetByTestId("backfill-buffered")).ToHaveText(m[2]))
			}
		}
	})
}
