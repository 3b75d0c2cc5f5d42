package e2e

import (
	"net/http"
	"regexp"
	"testing"
	"time"
)

// Scenario (issue 21 §10): "Request cancellation" asks first, with and
// without JavaScript: opening it explains what happens and changes
// nothing; only the confirm button asks the worker to stop.
func TestRequestCancellationAsksFirst(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "long", Cron: "0 0 1 1 *"})
		for _, js := range []bool{true, false} {
			var run struct {
				RunID string `json:"run_id"`
			}
			api.must(http.MethodPost, "/schedules/long/trigger", map[string]any{"overlap_policy": "allow_all"}, http.StatusOK, &run)
			if claimed := api.claim("cancel-worker"); len(claimed) != 1 {
				t.Fatalf("claimed %v, want one run", claimed)
			}
			page := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: !js})
			gotoOK(t, page, "/waterline/runs/"+run.RunID)
			cancel := page.GetByTestId("run-cancel")
			must(t, "confirm step hidden at first", expect.Locator(page.GetByTestId("run-cancel-submit")).Not().ToBeVisible())
			must(t, "open Request cancellation…", cancel.Locator("summary").Click())
			must(t, "the confirm step explains", expect.Locator(page.GetByTestId("run-cancel-form")).ToContainText("next heartbeat"))
			must(t, "nothing requested yet", expect.Locator(page.GetByTestId("cancel-requested")).ToHaveCount(0))
			var got struct {
				CancelRequested bool `json:"cancel_requested"`
			}
			api.must(http.MethodGet, "/runs/"+run.RunID, nil, http.StatusOK, &got)
			if got.CancelRequested {
				t.Fatalf("opening the confirmation requested cancellation already (js=%v)", js)
			}
			must(t, "confirm", page.GetByTestId("run-cancel-submit").Click())
			must(t, "requested", expect.Locator(page.GetByTestId("cancel-requested")).ToBeVisible())
			api.must(http.MethodGet, "/runs/"+run.RunID, nil, http.StatusOK, &got)
			if !got.CancelRequested {
				t.Fatalf("confirming did not request cancellation (js=%v)", js)
			}
		}
	})
}

// Scenario (issue 21 §10): fire lag reads like every duration ("1 d 18 h",
// "2.3 s", "120 ms"), never as raw milliseconds.
func TestFireLagReadsAsADuration(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "hourly", Cron: "0 * * * *", Overlap: "allow_all"})
		to := time.Now().UTC().Truncate(time.Hour).Add(-40 * time.Hour)
		api.backfill("hourly", to.Add(-3*time.Hour), to)
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		gotoOK(t, page, "/waterline/schedules/hourly")
		lags := page.GetByTestId("recent-action").Locator("td.num")
		must(t, "recent actions", expect.Locator(lags.First()).ToBeVisible())
		texts, err := lags.AllTextContents()
		must(t, "read the lags", err)
		for _, lag := range texts {
			if !regexp.MustCompile(`^(\d+ ms|\d+\.\d s|\d+ min( \d+ s)?|\d+ h( \d+ min)?|\d+ d( \d+ h)?)$`).MatchString(lag) {
				t.Errorf("fire lag %q does not read as a duration", lag)
			}
		}
		must(t, "a backfill 40 h late reads in days and hours", expect.Locator(lags.First()).ToHaveText(regexp.MustCompile(`^1 d 1[6-9] h$`)))
	})
}

// Scenario (issue 21 §10): on a phone (390×844) the schedule page, the run
// page and the runs list never scroll sideways; wide tables scroll inside
// their frame.
func TestPhonePagesDoNotOverflow(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "nightly-billing-export-with-a-long-name", Cron: "0 2 * * *", Timezone: "America/New_York",
			WorkflowType: "billing.ExportInvoicesForEveryRegion", Labels: map[string]string{"team": "billing"}})
		var run struct {
			RunID string `json:"run_id"`
		}
		api.must(http.MethodPost, "/schedules/nightly-billing-export-with-a-long-name/trigger", map[string]any{}, http.StatusOK, &run)
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		must(t, "phone viewport", page.SetViewportSize(390, 844))
		for _, path := range []string{"/waterline/schedules/nightly-billing-export-with-a-long-name", "/waterline/runs/" + run.RunID, "/waterline/runs"} {
			gotoOK(t, page, path)
			wide, err := page.Evaluate(`() => document.documentElement.scrollWidth - document.documentElement.clientWidth`)
			must(t, "measure "+path, err)
			if n, _ := wide.(int); n > 0 {
				t.Errorf("%s: the page is %d px wider than a 390 px phone", path, n)
			}
		}
	})
}
