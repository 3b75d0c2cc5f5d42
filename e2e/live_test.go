package e2e

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// claim polls for up to 10 pending runs as workerID and returns their IDs.
func (a *apiClient) claim(workerID string) []string {
	a.t.Helper()
	var polled struct {
		Runs []struct {
			RunID string `json:"run_id"`
		} `json:"runs"`
	}
	a.must(http.MethodPost, "/worker/poll", map[string]any{"worker_id": workerID, "limit": 10}, http.StatusOK, &polled)
	out := make([]string, 0, len(polled.Runs))
	for _, r := range polled.Runs {
		out = append(out, r.RunID)
	}
	return out
}

func (a *apiClient) complete(workerID, runID string) {
	a.t.Helper()
	a.must(http.MethodPost, "/worker/runs/"+runID+"/complete", map[string]any{"worker_id": workerID}, http.StatusOK, nil)
}

// Scenario (issue 21 §7): the runs list and the schedule page follow a run
// while it is active — pending, then running, then completed — without a
// reload, and stop polling once nothing is active. An open Pause… form on
// the schedule page survives the refreshes with what was typed in it.
func TestRunsListAndSchedulePageAreLive(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "yearly", Cron: "0 0 1 1 *"})

		runs := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		gotoOK(t, runs, "/waterline/runs")
		must(t, "nothing active: no poller", expectCount(runs, "runs-autorefresh", 0))

		var run struct {
			RunID string `json:"run_id"`
		}
		api.must(http.MethodPost, "/schedules/yearly/trigger", map[string]any{}, http.StatusOK, &run)
		gotoOK(t, runs, "/waterline/runs")
		row := runRow(runs, run.RunID)
		must(t, "pending", expectStatus(row, "pending"))
		must(t, "a pending run: the list polls", expectCount(runs, "runs-autorefresh", 1))

		detail := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		gotoOK(t, detail, "/waterline/schedules/yearly")
		must(t, "the schedule page polls too", expectCount(detail, "schedule-autorefresh", 1))
		detailRow := runRow(detail, run.RunID)
		must(t, "pending on the schedule page", expectStatus(detailRow, "pending"))

		claimed := api.claim("live-worker")
		if len(claimed) != 1 || claimed[0] != run.RunID {
			t.Fatalf("claimed %v, want [%s]", claimed, run.RunID)
		}
		must(t, "running without a reload", expectStatus(row, "running"))
		must(t, "running on the schedule page", expectStatus(detailRow, "running"))

		// While the Pause… form is open the schedule page skips its polls
		// (console.js cancels them): the run completes, a poll comes and is
		// skipped, and the page still shows it running with the form open
		// and the half-typed reason in it. Closing the form lets the next
		// poll through.
		pause := openDetails(t, detail.Locator(".page-head"), "action-pause")
		must(t, "type a reason", pause.GetByTestId("pause-reason").Fill("half-typed"))
		// (The count goes into the DOM, where expect can wait for it:
		// WaitForFunction would need eval, which the page's CSP forbids.)
		_, err := detail.Evaluate(`() => {
			let skipped = 0;
			document.addEventListener("htmx:beforeRequest", e => {
				if (e.detail.elt.hasAttribute("data-live") && e.defaultPrevented) document.body.dataset.skippedPolls = ++skipped;
			});
		}`)
		must(t, "count skipped polls", err)
		api.complete("live-worker", run.RunID)
		must(t, "completed without a reload", expectStatus(row, "completed"))
		must(t, "a poll was skipped while the form was open",
			expect.Locator(detail.Locator("body")).ToHaveAttribute("data-skipped-polls", regexp.MustCompile(`^[1-9]`)))
		must(t, "not refreshed under the open form", expectStatus(detailRow, "running"))
		must(t, "the form is still open", expect.Locator(pause).ToHaveAttribute("open", ""))
		must(t, "close it", pause.Locator("summary").Click())
		must(t, "completed on the schedule page", expectStatus(detailRow, "completed"))
		must(t, "health follows", expectCount(detail, "run-strip", 1))
		must(t, "the reason is still there", expectValue(pause.GetByTestId("pause-reason"), "half-typed"))
		// Nothing is active any more: the fresh regions carry no poller.
		must(t, "the list stopped polling", expectCount(runs, "runs-autorefresh", 0))
		must(t, "the schedule page stopped polling", expectCount(detail, "schedule-autorefresh", 0))
	})
}

func expectCount(page playwright.Page, testid string, n int) error {
	return expect.Locator(page.GetByTestId(testid)).ToHaveCount(n)
}

func expectStatus(scope playwright.Locator, status string) error {
	return expect.Locator(scope.GetByTestId("status-badge").First()).ToHaveAttribute("data-status", status)
}

func expectValue(l playwright.Locator, v string) error {
	return expect.Locator(l).ToHaveValue(v)
}
