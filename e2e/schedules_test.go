package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// The console's schedule scenarios with JavaScript on (htmx): create with
// the live preview, pause/resume, trigger, backfill, delete. Each runs on
// SQLite and, when configured, PostgreSQL, on a server of its own.

// fill types value into the schedule form's input called name.
func fill(t *testing.T, page playwright.Page, name, value string) {
	t.Helper()
	must(t, "fill "+name, page.GetByTestId("input-"+name).Fill(value))
}

// weekdaysAt returns the next n instants after now at hh:mm on Monday to
// Friday in loc: what "mm hh * * 1-5" fires at, computed independently of
// the product's cron engine.
func weekdaysAt(now time.Time, loc *time.Location, hh, mm, n int) []time.Time {
	d := now.In(loc)
	day := time.Date(d.Year(), d.Month(), d.Day(), hh, mm, 0, 0, loc)
	var out []time.Time
	for len(out) < n {
		if day.After(now) && day.Weekday() != time.Saturday && day.Weekday() != time.Sunday {
			out = append(out, day)
		}
		day = day.AddDate(0, 0, 1)
	}
	return out
}

// expectTimes asserts that loc's elements show exactly the wall times
// want(now). The browser read "now" a moment after the test did; should an
// occurrence pass in between, the list is computed again and asserted once
// more.
func expectTimes(t *testing.T, what string, loc playwright.Locator, want func(now time.Time) []string) {
	t.Helper()
	first := want(time.Now())
	err := expect.Locator(loc).ToHaveText(first)
	if err != nil {
		if again := want(time.Now()); !slices.Equal(again, first) {
			err = expect.Locator(loc).ToHaveText(again)
		}
	}
	must(t, what, err)
}

// Scenario 1: create a schedule through the form. The live preview shows the
// description and the next fire times while typing, a bad cron expression
// shows an inline error, and saving puts the schedule in the registry.
func TestCreateScheduleWithLivePreview(t *testing.T) {
	forEachDatabase(t, serverOptions{}, func(t *testing.T, srv *server) {
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		holdAutoRefresh(t, page)
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		// Twelve hours from now, so that the running scheduling loop cannot
		// fire it during the test.
		hour := (time.Now().In(berlin).Hour() + 12) % 24
		cron := fmt.Sprintf("30 %d * * 1-5", hour)
		description := fmt.Sprintf("At %02d:30 on Monday through Friday", hour)
		nextTen := func(now time.Time) []string { return wallTimes(weekdaysAt(now, berlin, hour, 30, 10), berlin) }

		openRegistry(t, page, "")
		must(t, "empty registry", expect.Locator(page.GetByTestId("empty-state")).ToContainText("No schedules yet"))
		must(t, "click New schedule", page.GetByTestId("new-schedule").Click())
		must(t, "the create form", expect.Locator(page.GetByTestId("schedule-form")).ToBeVisible())
		preview := page.GetByTestId("spec-preview")
		must(t, "preview hint before typing", expect.Locator(preview.GetByTestId("preview-empty")).ToBeVisible())

		fill(t, page, "schedule_id", "weekday-digest")
		fill(t, page, "workflow_type", "reports.WeekdayDigest")
		fill(t, page, "timezone", "Europe/Berlin")
		fill(t, page, "cron_expressions", cron)

		// The live preview (htmx posts the form 400 ms after the last keystroke).
		desc := preview.GetByTestId("spec-description")
		must(t, "live description", expect.Locator(desc).ToContainText(description))
		must(t, "live description's zone", expect.Locator(desc).ToContainText("Europe/Berlin"))
		must(t, "ten fire times", expect.Locator(preview.GetByTestId("preview-fire-time")).ToHaveCount(10))
		expectTimes(t, "the next ten fire times", preview.GetByTestId("preview-fire-time").Locator("time"), nextTen)

		// A bad cron expression: the preview says what is wrong, live…
		fill(t, page, "cron_expressions", "61"+cron[2:])
		previewErr := preview.GetByTestId("preview-error")
		must(t, "live preview error", expect.Locator(previewErr).ToContainText("61 is outside 0-59"))
		must(t, "no description for a bad cron", expect.Locator(desc).ToHaveCount(0))
		must(t, "no fire times for a bad cron", expect.Locator(preview.GetByTestId("preview-fire-time")).ToHaveCount(0))
		// …and saving it anyway shows the error under the field, keeping
		// everything typed.
		must(t, "submit with a bad cron", page.GetByTestId("form-submit").Click())
		cronErr := page.GetByTestId("field-cron_expressions").GetByTestId("field-error")
		must(t, "inline cron error", expect.Locator(cronErr).ToContainText("61 is outside 0-59"))
		must(t, "cron input marked invalid", expect.Locator(page.GetByTestId("input-cron_expressions")).ToHaveAttribute("aria-invalid", "true"))
		must(t, "schedule ID kept", expect.Locator(page.GetByTestId("input-schedule_id")).ToHaveValue("weekday-digest"))
		must(t, "workflow type kept", expect.Locator(page.GetByTestId("input-workflow_type")).ToHaveValue("reports.WeekdayDigest"))
		must(t, "time zone kept", expect.Locator(page.GetByTestId("input-timezone")).ToHaveValue("Europe/Berlin"))
		must(t, "only the cron field is in error", expect.Locator(page.GetByTestId("field-error")).ToHaveCount(1))

		// Corrected, the preview is live again, and saving creates it.
		fill(t, page, "cron_expressions", cron)
		must(t, "live description after the fix", expect.Locator(desc).ToContainText(description))
		must(t, "save", page.GetByTestId("form-submit").Click())
		must(t, "created flash", expect.Locator(page.GetByTestId("flash")).ToHaveText("Created weekday-digest."))
		must(t, "detail page", expect.Locator(page.GetByTestId("schedule-id")).ToHaveText("weekday-digest"))

		must(t, "open the registry", page.GetByTestId("nav-schedules").Click())
		row := scheduleRow(page, "weekday-digest")
		must(t, "row in the registry", expect.Locator(row).ToBeVisible())
		must(t, "one row", expect.Locator(page.GetByTestId("schedule-row")).ToHaveCount(1))
		must(t, "row spec", expect.Locator(row.GetByTestId("spec")).ToContainText(description))
		must(t, "row zone", expect.Locator(row.GetByTestId("timezone")).ToContainText("Europe/Berlin"))
		must(t, "row workflow", expect.Locator(row.GetByTestId("workflow-type")).ToHaveText("reports.WeekdayDigest"))
		must(t, "row status", expect.Locator(row.GetByTestId("status-badge")).ToHaveAttribute("data-status", "active"))
		expectTimes(t, "row next fire", row.GetByTestId("next-fire").Locator("time"), func(now time.Time) []string { return nextTen(now)[:1] })
		must(t, "never fired", expect.Locator(row.GetByTestId("last-result")).ToHaveText("never fired"))
	})
}

// Scenario 2: pause with a reason, the badge says Paused; resume, it says
// Active; the History lists both, with the reason and who did it.
func TestPauseAndResume(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "billing-export", Cron: "0 2 * * *", Timezone: "America/New_York", WorkflowType: "billing.Export"})
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		row := scheduleRow(page, "billing-export")
		badge := row.GetByTestId("status-badge")
		must(t, "active at first", expect.Locator(badge).ToHaveAttribute("data-status", "active"))
		must(t, "no Resume while active", expect.Locator(row.GetByTestId("action-resume")).ToHaveCount(0))

		pause := openDetails(t, row, "action-pause")
		must(t, "pause reason", pause.GetByTestId("pause-reason").Fill("upstream outage INC-4711"))
		must(t, "pause", pause.GetByTestId("pause-submit").Click())
		must(t, "badge paused", expect.Locator(badge).ToHaveAttribute("data-status", "paused"))
		must(t, "badge reads paused", expect.Locator(badge).ToHaveText("paused", playwright.LocatorAssertionsToHaveTextOptions{IgnoreCase: playwright.Bool(true)}))
		must(t, "pause notice", expect.Locator(row.GetByTestId("row-notice")).ToContainText("Paused billing-export: upstream outage INC-4711"))
		must(t, "no Pause while paused", expect.Locator(row.GetByTestId("action-pause")).ToHaveCount(0))
		must(t, "no Trigger while paused", expect.Locator(row.GetByTestId("action-trigger")).ToHaveCount(0))

		must(t, "resume", row.GetByTestId("resume-submit").Click())
		must(t, "badge active", expect.Locator(badge).ToHaveAttribute("data-status", "active"))
		must(t, "badge reads active", expect.Locator(badge).ToHaveText("active", playwright.LocatorAssertionsToHaveTextOptions{IgnoreCase: playwright.Bool(true)}))
		must(t, "resume notice", expect.Locator(row.GetByTestId("row-notice")).ToContainText("Resumed billing-export"))

		// Stored, not just swapped in: a reload shows the same.
		openRegistry(t, page, "")
		must(t, "active after reload", expect.Locator(badge).ToHaveAttribute("data-status", "active"))

		must(t, "open History", rowAction(t, row, "action-history").Click())
		modal := page.GetByTestId("modal")
		must(t, "history modal open", expect.Locator(modal).ToBeVisible())
		must(t, "modal title", expect.Locator(modal.Locator("#modal-title")).ToHaveText("History · billing-export"))
		must(t, "oldest first", modal.GetByTestId("history-order-toggle").Click())
		must(t, "oldest first shown", expect.Locator(modal.GetByTestId("history-order")).ToHaveText("oldest first"))
		events := modal.GetByTestId("history-event")
		must(t, "event types", expect.Locator(events.GetByTestId("event-type")).ToHaveText([]string{"ScheduleCreated", "SchedulePaused", "ScheduleResumed"}))
		paused := events.Nth(1)
		must(t, "pause reason in history", expect.Locator(paused.GetByTestId("event-summary")).ToHaveText("reason: upstream outage INC-4711"))
		must(t, "pause actor in history", expect.Locator(paused.GetByTestId("event-actor")).ToHaveText("by ui · local"))
		must(t, "resume actor in history", expect.Locator(events.Nth(2).GetByTestId("event-actor")).ToHaveText("by ui · local"))
		checkIncreasing(t, "history", sequences(t, modal))

		must(t, "close the modal", modal.GetByTestId("modal-close").Click())
		must(t, "modal closed", expect.Locator(modal).ToBeHidden())
	})
}

// Scenario 3: Trigger shows the outcome (the started run) and the run is in
// Runs; triggering again under overlap policy skip while that run is still
// pending is skipped, and the row says why.
func TestTriggerThenSkipWhileRunning(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "inventory-sync", Every: "PT1H", Offset: "PT5M", WorkflowType: "inventory.Sync", Overlap: "allow_all"})
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		row := scheduleRow(page, "inventory-sync")

		trigger := openDetails(t, row, "action-trigger")
		must(t, "trigger confirmation names the schedule", expect.Locator(trigger).ToContainText("Start a run of inventory-sync now?"))
		must(t, "trigger", trigger.GetByTestId("trigger-submit").Click())
		outcome := row.GetByTestId("trigger-outcome")
		must(t, "outcome triggered", expect.Locator(outcome).ToHaveAttribute("data-outcome", "triggered"))
		must(t, "outcome text", expect.Locator(outcome).ToContainText("Started run"))
		runLink := outcome.GetByTestId("trigger-run-link")
		must(t, "run link", expect.Locator(runLink).ToBeVisible())
		runID, err := runLink.TextContent()
		must(t, "run ID", err)
		runID = strings.TrimSpace(runID)
		if runID == "" || runID == "—" {
			t.Fatalf("trigger outcome names no run: %q", runID)
		}
		must(t, "fires count", expect.Locator(row.GetByTestId("fires-count")).ToHaveText("1"))

		must(t, "open Runs", page.GetByTestId("nav-runs").Click())
		run := runRow(page, runID)
		must(t, "the run is listed", expect.Locator(run).ToBeVisible())
		must(t, "run pending", expect.Locator(run.GetByTestId("status-badge")).ToHaveAttribute("data-status", "pending"))
		must(t, "run's schedule", expect.Locator(run.GetByTestId("run-schedule-link")).ToHaveText("inventory-sync"))
		must(t, "one run", expect.Locator(page.GetByTestId("run-row")).ToHaveCount(1))

		// Again, overriding the policy with skip: the pending run blocks it.
		openRegistry(t, page, "")
		trigger = openDetails(t, row, "action-trigger")
		_, err = trigger.GetByTestId("trigger-overlap-policy").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("skip")})
		must(t, "choose skip", err)
		must(t, "trigger again", trigger.GetByTestId("trigger-submit").Click())
		must(t, "outcome skipped", expect.Locator(outcome).ToHaveAttribute("data-outcome", "skipped"))
		must(t, "skip reason", expect.Locator(outcome.GetByTestId("skip-reason")).ToHaveText("overlap policy skip"))
		must(t, "skips count", expect.Locator(row.GetByTestId("skips-count")).ToHaveText("1"))
		must(t, "fires count unchanged", expect.Locator(row.GetByTestId("fires-count")).ToHaveText("1"))
		must(t, "last result skipped", expect.Locator(row.GetByTestId("last-result").GetByTestId("outcome-badge")).ToHaveAttribute("data-outcome", "skipped"))
		must(t, "last result reason", expect.Locator(row.GetByTestId("last-reason")).ToHaveText("overlap policy skip"))

		must(t, "open Runs again", page.GetByTestId("nav-runs").Click())
		must(t, "still one run", expect.Locator(page.GetByTestId("run-row")).ToHaveCount(1))
		must(t, "the same run", expect.Locator(runRow(page, runID)).ToBeVisible())
	})
}

// Scenario 4: the backfill dry run lists exactly the occurrences of the
// range; confirming starts them; the History shows each fire.
func TestBackfillDryRunThenConfirm(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "ledger-hourly", Cron: "0 * * * *", Timezone: "Europe/Berlin", WorkflowType: "ledger.Close"})
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		// [00:00, 06:00) Berlin time on 5 January 2026: six hourly occurrences.
		var occurrences []time.Time
		var instances []string
		for h := range 6 {
			o := time.Date(2026, 1, 5, h, 0, 0, 0, berlin)
			occurrences = append(occurrences, o)
			instances = append(instances, "schedule:ledger-hourly:backfill:"+strconv.FormatInt(o.Unix(), 10))
		}

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		row := scheduleRow(page, "ledger-hourly")
		must(t, "open Backfill", rowAction(t, row, "action-backfill").Click())
		modal := page.GetByTestId("modal")
		must(t, "backfill modal open", expect.Locator(modal).ToBeVisible())
		panel := modal.GetByTestId("backfill-panel")
		must(t, "backfill zone", expect.Locator(panel.GetByTestId("backfill-timezone")).ToHaveText("Europe/Berlin"))
		must(t, "from", panel.GetByTestId("input-from").Fill("2026-01-05T00:00"))
		must(t, "to", panel.GetByTestId("input-to").Fill("2026-01-05T06:00"))
		_, err = panel.GetByTestId("input-overlap_policy").SelectOption(playwright.SelectOptionValues{Values: playwright.StringSlice("allow_all")})
		must(t, "overlap override", err)
		must(t, "preview", panel.GetByTestId("backfill-preview").Click())

		result := modal.GetByTestId("backfill-result")
		must(t, "dry run", expect.Locator(result).ToHaveAttribute("data-dry-run", "true"))
		must(t, "dry-run count", expect.Locator(result.GetByTestId("backfill-count")).ToHaveText("6"))
		rows := result.GetByTestId("backfill-occurrence")
		must(t, "the exact occurrences", expect.Locator(rows.Locator("time")).ToHaveText(wallTimes(occurrences, berlin)))
		must(t, "their instance IDs", expect.Locator(rows.Locator("td.mono")).ToHaveText(instances))
		// Nothing started yet.
		if seqs := api.historySequences("ledger-hourly"); len(seqs) != 1 {
			t.Fatalf("after the dry run the history has %d events, want 1 (ScheduleCreated)", len(seqs))
		}

		confirm := result.GetByTestId("backfill-confirm")
		must(t, "confirm button", expect.Locator(confirm).ToHaveText("Start 6 runs"))
		must(t, "confirm", confirm.Click())
		must(t, "started", expect.Locator(result).ToHaveAttribute("data-dry-run", "false"))
		must(t, "started count", expect.Locator(result).ToContainText("Backfill started: 6 occurrences"))
		job := result.GetByTestId("backfill-job")
		must(t, "the job is done", expect.Locator(job).ToHaveAttribute("data-status", "completed"))
		must(t, "every occurrence started", expect.Locator(job.GetByTestId("backfill-started")).ToHaveText("6"))
		must(t, "none remaining", expect.Locator(job.GetByTestId("backfill-remaining")).ToHaveText("0"))

		must(t, "close the modal", modal.GetByTestId("modal-close").Click())
		must(t, "modal closed", expect.Locator(modal).ToBeHidden())
		must(t, "open History", rowAction(t, row, "action-history").Click())
		must(t, "history modal open", expect.Locator(modal).ToBeVisible())
		must(t, "oldest first", modal.GetByTestId("history-order-toggle").Click())
		must(t, "oldest first shown", expect.Locator(modal.GetByTestId("history-order")).ToHaveText("oldest first"))
		events := modal.GetByTestId("history-event")
		must(t, "event types", expect.Locator(events.GetByTestId("event-type")).ToHaveText(
			[]string{"ScheduleCreated", "ScheduleTriggered", "ScheduleTriggered", "ScheduleTriggered", "ScheduleTriggered", "ScheduleTriggered", "ScheduleTriggered"}))
		must(t, "the backfilled instances", expect.Locator(events.GetByTestId("event-instance")).ToHaveText(instances))
		must(t, "a run per fire", expect.Locator(events.GetByTestId("event-run-link")).ToHaveCount(6))
		var summaries []string
		for i := range 6 {
			summaries = append(summaries, fmt.Sprintf("backfilled fire #%d, overlap policy allow_all", i+1))
		}
		must(t, "fire summaries", expect.Locator(events.GetByTestId("event-summary").Filter(playwright.LocatorFilterOptions{HasText: "backfilled"})).ToHaveText(summaries))
	})
}

// Scenario 7: delete asks for the schedule ID typed out; the schedule
// leaves the registry, and its history stays reachable by its deep link.
func TestDeleteWithTypedConfirmation(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		// A dot in the ID: the console must not build CSS selectors from it.
		api.createSchedule(sched{ID: "legacy.cleanup-v1", Cron: "15 3 * * 0", WorkflowType: "maintenance.Cleanup"})
		api.createSchedule(sched{ID: "keep-me", Cron: "0 4 * * *", WorkflowType: "maintenance.Vacuum"})
		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		row := scheduleRow(page, "legacy.cleanup-v1")

		del := openDetails(t, row, "action-delete")
		submit := del.GetByTestId("delete-submit")
		input := del.GetByTestId("delete-confirm-input")
		must(t, "delete disabled until typed", expect.Locator(submit).ToBeDisabled())
		must(t, "type a wrong ID", input.Fill("legacy.cleanup"))
		must(t, "still disabled", expect.Locator(submit).ToBeDisabled())
		must(t, "type the ID", input.Fill("legacy.cleanup-v1"))
		must(t, "enabled", expect.Locator(submit).ToBeEnabled())
		must(t, "delete", submit.Click())
		must(t, "badge deleted", expect.Locator(row.GetByTestId("status-badge")).ToHaveAttribute("data-status", "deleted"))
		notice := row.GetByTestId("row-notice")
		must(t, "delete notice", expect.Locator(notice).ToContainText("Deleted legacy.cleanup-v1."))
		must(t, "no actions but History", expect.Locator(row.GetByTestId("schedule-actions").Locator("form, details, a")).ToHaveCount(1))
		historyURL, err := notice.Locator("a").GetAttribute("href")
		must(t, "history link in the notice", err)
		if historyURL != "/waterline/schedules/legacy.cleanup-v1/history" {
			t.Fatalf("history link %q, want /waterline/schedules/legacy.cleanup-v1/history", historyURL)
		}

		openRegistry(t, page, "")
		must(t, "gone from the registry", expect.Locator(row).ToHaveCount(0))
		must(t, "the other schedule stays", expect.Locator(scheduleRow(page, "keep-me")).ToBeVisible())
		openRegistry(t, page, "?status=deleted")
		must(t, "listed under Deleted", expect.Locator(row.GetByTestId("status-badge")).ToHaveAttribute("data-status", "deleted"))

		gotoOK(t, page, historyURL)
		panel := page.GetByTestId("history-panel")
		must(t, "history page", expect.Locator(panel).ToBeVisible())
		must(t, "oldest first", panel.GetByTestId("history-order-toggle").Click())
		must(t, "oldest first shown", expect.Locator(panel.GetByTestId("history-order")).ToHaveText("oldest first"))
		must(t, "history events", expect.Locator(panel.GetByTestId("event-type")).ToHaveText([]string{"ScheduleCreated", "ScheduleDeleted"}))
		must(t, "deleted by", expect.Locator(panel.GetByTestId("history-event").Last().GetByTestId("event-actor")).ToHaveText("by ui · local"))

		// The API agrees: the schedule is gone (404), its history is not.
		if status, body := api.do(http.MethodGet, "/schedules/legacy.cleanup-v1", nil); status != http.StatusNotFound {
			t.Fatalf("GET the deleted schedule: %d %s, want 404", status, body)
		}
	})
}
