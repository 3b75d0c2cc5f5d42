package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// Scenario 9: the core flows with JavaScript disabled. Every action is a
// plain form post answered by a redirect and a flash message, the
// confirmations are <details> disclosures, the modals are pages, and the
// history pages through links.
func TestWithoutJavaScript(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: true})
		flash := page.GetByTestId("flash")

		step(t, "create", func(t *testing.T) {
			openRegistry(t, page, "")
			must(t, "create from the empty state", page.GetByTestId("empty-create").Click())
			must(t, "the create form", expect.Locator(page.GetByTestId("schedule-form")).ToBeVisible())
			fill(t, page, "schedule_id", "nojs-nightly")
			fill(t, page, "workflow_type", "reports.Nightly")
			fill(t, page, "timezone", "UTC")
			fill(t, page, "cron_expressions", "0 25 * * *")
			fill(t, page, "labels", "team=data\ntier=gold")
			must(t, "save with a bad cron", page.GetByTestId("form-submit").Click())
			// The server answers with the form again: the error under the
			// field, and the preview (refreshed on submit) saying the same.
			must(t, "inline cron error", expect.Locator(page.GetByTestId("field-cron_expressions").GetByTestId("field-error")).ToContainText("25 is outside 0-23"))
			must(t, "preview error", expect.Locator(page.GetByTestId("preview-error")).ToContainText("25 is outside 0-23"))
			must(t, "labels kept", expect.Locator(page.GetByTestId("input-labels")).ToHaveValue("team=data\ntier=gold"))

			fill(t, page, "cron_expressions", "0 3 * * *")
			must(t, "save", page.GetByTestId("form-submit").Click())
			must(t, "created flash", expect.Locator(flash).ToHaveText("Created nojs-nightly."))
			must(t, "detail page", expect.Locator(page.GetByTestId("schedule-id")).ToHaveText("nojs-nightly"))
			must(t, "description", expect.Locator(page.GetByTestId("spec-description")).ToContainText("At 03:00 every day"))
			// The next fire times, as the preview would have shown them.
			expectTimes(t, "next fire time listed", page.GetByTestId("future-fire-time").First().Locator("time"), func(now time.Time) []string {
				next := time.Date(now.Year(), now.Month(), now.Day(), 3, 0, 0, 0, time.UTC)
				if !next.After(now) {
					next = next.AddDate(0, 0, 1)
				}
				return wallTimes([]time.Time{next}, time.UTC)
			})

			must(t, "open the registry", page.GetByTestId("nav-schedules").Click())
			row := scheduleRow(page, "nojs-nightly")
			must(t, "row listed", expect.Locator(row).ToBeVisible())
			must(t, "labels shown", expect.Locator(row.GetByTestId("schedule-labels").GetByTestId("chip")).ToHaveText([]string{"team=data", "tier=gold"}))
		})

		step(t, "pause and resume", func(t *testing.T) {
			openRegistry(t, page, "")
			row := scheduleRow(page, "nojs-nightly")
			pause := openDetails(t, row, "action-pause")
			must(t, "reason", pause.GetByTestId("pause-reason").Fill("maintenance window"))
			must(t, "pause", pause.GetByTestId("pause-submit").Click())
			must(t, "pause flash", expect.Locator(flash).ToHaveText("Paused nojs-nightly: maintenance window"))
			must(t, "paused", expect.Locator(row.GetByTestId("status-badge")).ToHaveAttribute("data-status", "paused"))
			must(t, "resume", row.GetByTestId("resume-submit").Click())
			must(t, "resume flash", expect.Locator(flash).ToContainText("Resumed nojs-nightly"))
			must(t, "active", expect.Locator(row.GetByTestId("status-badge")).ToHaveAttribute("data-status", "active"))
			// The flash is shown once.
			openRegistry(t, page, "")
			must(t, "flash gone after a reload", expect.Locator(flash).ToHaveCount(0))
		})

		step(t, "trigger", func(t *testing.T) {
			openRegistry(t, page, "")
			row := scheduleRow(page, "nojs-nightly")
			trigger := openDetails(t, row, "action-trigger")
			must(t, "trigger", trigger.GetByTestId("trigger-submit").Click())
			must(t, "trigger flash", expect.Locator(flash).ToContainText("Triggered nojs-nightly: started run"))
			link := page.GetByTestId("flash-link")
			runID, err := link.TextContent()
			must(t, "run ID", err)
			runID = strings.TrimSpace(runID)
			must(t, "fires count", expect.Locator(row.GetByTestId("fires-count")).ToHaveText("1"))

			// Under skip, the pending run blocks a second one.
			trigger = openDetails(t, row, "action-trigger")
			_, err = trigger.GetByTestId("trigger-overlap-policy").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("skip")})
			must(t, "choose skip", err)
			must(t, "trigger again", trigger.GetByTestId("trigger-submit").Click())
			must(t, "skip flash", expect.Locator(flash).ToHaveText("Did not start nojs-nightly: skipped (overlap policy skip)."))
			must(t, "skips count", expect.Locator(row.GetByTestId("skips-count")).ToHaveText("1"))

			must(t, "open Runs", page.GetByTestId("nav-runs").Click())
			run := runRow(page, runID)
			must(t, "the run is listed", expect.Locator(run).ToBeVisible())
			must(t, "one run", expect.Locator(page.GetByTestId("run-row")).ToHaveCount(1))
			must(t, "open the run", run.GetByTestId("run-link").Click())
			must(t, "run page", expect.Locator(page.GetByTestId("run-id")).ToHaveText(runID))
			must(t, "run's schedule", expect.Locator(page.GetByTestId("run-facts").GetByTestId("run-schedule-link")).ToHaveText("nojs-nightly"))
		})

		step(t, "backfill", func(t *testing.T) {
			openRegistry(t, page, "")
			row := scheduleRow(page, "nojs-nightly")
			must(t, "open Backfill", rowAction(t, row, "action-backfill").Click())
			panel := page.GetByTestId("backfill-panel")
			must(t, "backfill page", expect.Locator(panel).ToBeVisible())
			must(t, "from", panel.GetByTestId("input-from").Fill("2026-03-01T00:00"))
			must(t, "to", panel.GetByTestId("input-to").Fill("2026-03-04T00:00"))
			_, err := panel.GetByTestId("input-overlap_policy").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("allow_all")})
			must(t, "overlap override", err)
			must(t, "preview", panel.GetByTestId("backfill-preview").Click())
			result := page.GetByTestId("backfill-result")
			must(t, "dry run", expect.Locator(result).ToHaveAttribute("data-dry-run", "true"))
			must(t, "occurrences", expect.Locator(result.GetByTestId("backfill-occurrence").Locator("time")).ToHaveText(
				[]string{"2026-03-01 03:00 UTC", "2026-03-02 03:00 UTC", "2026-03-03 03:00 UTC"}))
			must(t, "confirm", result.GetByTestId("backfill-confirm").Click())
			must(t, "started", expect.Locator(result).ToHaveAttribute("data-dry-run", "false"))
			must(t, "all started", expect.Locator(result.GetByTestId("backfill-started")).ToHaveText("3"))
			must(t, "the job is done", expect.Locator(result.GetByTestId("backfill-job")).ToHaveAttribute("data-status", "completed"))
		})

		step(t, "history paging via links", func(t *testing.T) {
			want := historyFixture(t, api, "nojs-busy", 130) // 132 events: pages of 100 and 32
			openRegistry(t, page, "")
			must(t, "open History", rowAction(t, scheduleRow(page, "nojs-busy"), "action-history").Click())
			panel := page.GetByTestId("history-panel")
			must(t, "history page", expect.Page(page).ToHaveURL(regexp.MustCompile(`/waterline/schedules/nojs-busy/history$`)))
			// It opens newest first; the order toggle is a plain link.
			must(t, "switch to oldest first", panel.GetByTestId("history-order-toggle").Click())
			must(t, "oldest first", expect.Locator(panel.GetByTestId("history-order")).ToHaveText("oldest first"))
			events := panel.GetByTestId("history-event")
			must(t, "first page", expect.Locator(events).ToHaveCount(100))
			first := sequences(t, panel)
			more := panel.GetByTestId("history-load-more")
			must(t, "Load more link", expect.Locator(more).ToBeVisible())
			must(t, "no From the start on the first page", expect.Locator(panel.GetByTestId("history-from-start")).ToHaveCount(0))

			must(t, "Load more", more.Click())
			must(t, "From the start link", expect.Locator(panel.GetByTestId("history-from-start")).ToBeVisible())
			must(t, "second page", expect.Locator(events).ToHaveCount(len(want)-100))
			must(t, "no Load more at the end", expect.Locator(more).ToHaveCount(0))
			second := sequences(t, panel)
			all := append(first, second...)
			checkIncreasing(t, "history pages", all)
			if !equalInts(all, want) {
				t.Fatalf("the two pages show %d sequences, not the API's %d (first page ends at %d, second starts at %d)", len(all), len(want), first[len(first)-1], second[0])
			}

			must(t, "From the start", panel.GetByTestId("history-from-start").Click())
			must(t, "first page again", expect.Locator(events).ToHaveCount(100))
			must(t, "starts at the first event", expect.Locator(events.First()).ToHaveAttribute("data-sequence", strconv.FormatInt(want[0], 10)))
		})

		step(t, "delete", func(t *testing.T) {
			openRegistry(t, page, "")
			row := scheduleRow(page, "nojs-nightly")
			del := openDetails(t, row, "action-delete")
			// Without JavaScript the button is enabled; the server checks.
			must(t, "wrong ID", del.GetByTestId("delete-confirm-input").Fill("nojs"))
			must(t, "delete", del.GetByTestId("delete-submit").Click())
			confirm := page.GetByTestId("delete-page")
			must(t, "asked again", expect.Locator(confirm.GetByTestId("field-error")).ToContainText("Type the schedule ID exactly (nojs-nightly)"))
			must(t, "the ID", confirm.GetByTestId("delete-confirm-input").Fill("nojs-nightly"))
			must(t, "delete", confirm.GetByTestId("delete-submit").Click())
			must(t, "deleted flash", expect.Locator(flash).ToContainText("Deleted nojs-nightly."))
			// (The page under the flash is the confirmation page again; see
			// TestDeleteConfirmPageAfterDelete.)
			must(t, "history link", page.GetByTestId("flash-link").Click())
			must(t, "oldest first", page.GetByTestId("history-order-toggle").Click())
			must(t, "oldest first shown", expect.Locator(page.GetByTestId("history-order")).ToHaveText("oldest first"))
			must(t, "deleted schedule's history", expect.Locator(page.GetByTestId("history-event").Last().GetByTestId("event-type")).ToHaveText("ScheduleDeleted"))
			must(t, "open the registry", page.GetByTestId("nav-schedules").Click())
			must(t, "the other stays", expect.Locator(scheduleRow(page, "nojs-busy")).ToBeVisible())
			must(t, "gone from the registry", expect.Locator(scheduleRow(page, "nojs-nightly")).ToHaveCount(0))
		})
	})
}

// TestDeleteConfirmPageAfterDelete: without JavaScript, a delete confirmed
// on the full-page confirmation (reached after a mistyped ID, or by its deep
// link) leaves that page for the registry instead of offering to delete the
// deleted schedule again.
func TestDeleteConfirmPageAfterDelete(t *testing.T) {
	srv := startServer(t, serverOptions{})
	newAPI(t, srv).createSchedule(sched{ID: "short-lived", Cron: "0 5 * * *"})
	page := newPage(t, pageOptions{BaseURL: srv.BaseURL, NoJavaScript: true})
	gotoOK(t, page, "/waterline/schedules/short-lived/delete")
	confirm := page.GetByTestId("delete-page")
	must(t, "the ID", confirm.GetByTestId("delete-confirm-input").Fill("short-lived"))
	must(t, "delete", confirm.GetByTestId("delete-submit").Click())
	must(t, "deleted flash", expect.Locator(page.GetByTestId("flash")).ToContainText("Deleted short-lived."))
	must(t, "left the confirmation page", expect.Page(page).Not().ToHaveURL(regexp.MustCompile(`/delete$`)))
	must(t, "no delete form for a deleted schedule", expect.Locator(page.GetByTestId("delete-form")).ToHaveCount(0))
}

// step runs fn as sub-test name; the steps of a scenario build on each
// other, so the first one that fails ends the scenario.
func step(t *testing.T, name string, fn func(t *testing.T)) {
	t.Helper()
	if !t.Run(name, fn) {
		t.FailNow()
	}
}
