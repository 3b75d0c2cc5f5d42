package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// Scenario "why didn't it fire": the schedule page's ledger shows the
// occurrences that did not start — missed while the scheduler was down,
// paused while an operator had paused it — as hour squares, legend counts
// and the text table; "Backfill the N missed" opens the dry run with exactly those
// occurrences, and starting it leaves none missed or paused.
//
// The server runs on the real clock, so the history is made in real time:
// the server runs without its scheduling loop (the scheduler is down), the
// schedule fires every second, and the test waits — reloading, as a user
// would — until an occurrence has gone by unfired, pauses it in the
// console, waits until one goes by while paused, and resumes it. The
// schedule is created daily and then changed to every second (the ledger
// starts at the schedule's creation, so it holds the few seconds of the
// dense spec).
func TestLedgerBackfillsTheMissedOnes(t *testing.T) {
	forEachDatabase(t, noLoop, func(t *testing.T, srv *server) {
		const id = "ledger-export"
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: id, Cron: "0 3 * * *", Overlap: "allow_all"})
		api.must(http.MethodPatch, "/schedules/"+id, map[string]any{
			"spec": map[string]any{"intervals": []any{map[string]string{"every": "PT1S"}}},
		}, http.StatusOK, nil)

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		gotoOK(t, page, "/waterline/schedules/"+id)
		ledger := page.GetByTestId("ledger")
		must(t, "ledger", expect.Locator(ledger).ToBeVisible())
		actions := page.GetByTestId("schedule-actions")
		status := page.Locator("h1").GetByTestId("status-badge")

		// The first occurrence of the new spec goes by with no loop to fire
		// it: the ledger shows it as due (the overdue next fire).
		reloadUntil(t, page, "an overdue occurrence in the ledger", func(o playwright.LocatorAssertionsToBeVisibleOptions) error {
			return expect.Locator(ledger.GetByTestId("ledger-count-due")).ToBeVisible(o)
		})

		// Pause it in the console; the overdue occurrence is now missed.
		pause := openDetails(t, actions, "action-pause")
		must(t, "pause", pause.GetByTestId("pause-submit").Click())
		must(t, "paused", expect.Locator(status).ToHaveAttribute("data-status", "paused"))
		reloadUntil(t, page, "a paused occurrence in the ledger", func(o playwright.LocatorAssertionsToBeVisibleOptions) error {
			return expect.Locator(ledger.GetByTestId("ledger-count-paused")).ToBeVisible(o)
		})
		must(t, "resume", actions.GetByTestId("resume-submit").Click())
		must(t, "resumed", expect.Locator(status).ToHaveAttribute("data-status", "active"))

		// Why didn't it fire: the legend, the cells and the table agree.
		gotoOK(t, page, "/waterline/schedules/"+id)
		missed := legendCount(t, ledger, "missed")
		paused := legendCount(t, ledger, "paused")
		if missed < 1 || paused < 1 {
			t.Fatalf("ledger legend: %d missed, %d paused; want at least one of each", missed, paused)
		}
		n := missed + paused
		t.Logf("ledger: %d missed, %d paused", missed, paused)
		// The heatmap's hour squares: the hour is as bad as its worst
		// occurrence, so one with a missed one reads missed.
		before := ledgerFates(t, ledger)
		if countOf(before, "missed") < 1 {
			t.Fatalf("no missed square in %v with %d missed occurrences", before, missed)
		}
		must(t, "open the table of occurrences that did not start", ledger.GetByTestId("ledger-table").Locator("summary").Click())
		notStarted := ledger.Locator(`[data-testid="ledger-row"][data-fate="missed"], [data-testid="ledger-row"][data-fate="paused"]`)
		must(t, "missed and paused rows", expect.Locator(notStarted).ToHaveCount(n))
		must(t, "rows visible", expect.Locator(notStarted.First()).ToBeVisible())
		want := datetimes(t, notStarted)
		slices.Sort(want)

		link := ledger.GetByTestId("backfill-missed")
		must(t, "backfill link", expect.Locator(link).ToHaveText(fmt.Sprintf("Backfill the %d missed", n)))
		must(t, "open the backfill", link.Click())

		// The dry run selects exactly the missed and paused occurrences.
		modal := page.GetByTestId("modal")
		panel := modal.GetByTestId("backfill-panel")
		must(t, "backfill modal", expect.Locator(panel).ToBeVisible())
		must(t, "only the missed", expect.Locator(panel.GetByTestId("backfill-only")).ToContainText(fmt.Sprintf("Only the %d missed", n)))
		result := panel.GetByTestId("backfill-result")
		must(t, "dry run", expect.Locator(result).ToHaveAttribute("data-dry-run", "true"))
		must(t, "dry-run count", expect.Locator(result.GetByTestId("backfill-count")).ToHaveText(strconv.Itoa(n)))
		listed := result.GetByTestId("backfill-occurrence")
		must(t, "dry-run rows", expect.Locator(listed).ToHaveCount(n))
		got := datetimes(t, listed)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("the dry run lists %v, want exactly the ledger's missed and paused %v", got, want)
		}

		// Start them.
		must(t, "confirm", result.GetByTestId("backfill-confirm").Click())
		must(t, "started", expect.Locator(result).ToHaveAttribute("data-dry-run", "false"))
		must(t, "started count", expect.Locator(result.GetByTestId("backfill-count")).ToHaveText(strconv.Itoa(n)))
		must(t, "the job is done", expect.Locator(result.GetByTestId("backfill-job")).ToHaveAttribute("data-status", "completed"))
		must(t, "every one started", expect.Locator(result.GetByTestId("backfill-started")).ToHaveText(strconv.Itoa(n)))
		must(t, "close the modal", modal.GetByTestId("modal-close").Click())

		// Reloaded, nothing is left to backfill.
		gotoOK(t, page, "/waterline/schedules/"+id)
		must(t, "no missed left", expect.Locator(ledger.GetByTestId("ledger-count-missed")).ToHaveCount(0))
		must(t, "no paused left", expect.Locator(ledger.GetByTestId("ledger-count-paused")).ToHaveCount(0))
		must(t, "no backfill link", expect.Locator(ledger.GetByTestId("backfill-missed")).ToHaveCount(0))
		// The squares have as many hours as before (one more if the clock
		// went past an hour); none is missed or paused now: the backfilled
		// runs wait for a worker, so the legend counts them pending.
		after := ledgerFates(t, ledger)
		if len(after) < len(before) || countOf(after, "missed")+countOf(after, "paused") > 0 {
			t.Fatalf("squares before the backfill %v, after %v: want no missed or paused one left", before, after)
		}
		if got := legendCount(t, ledger, "pending"); got != n {
			t.Fatalf("legend: %d pending, want the %d backfilled", got, n)
		}
		startedCells := ledger.Locator(`a[data-testid="ledger-cell"][data-fate="pending"]`)
		must(t, "a pending square links to its run", expect.Locator(startedCells.First()).ToBeVisible())
		must(t, "a started cell opens its run", startedCells.First().Click())
		must(t, "run page", expect.Page(page).ToHaveURL(regexp.MustCompile(`/waterline/runs/[0-9A-Z]{26}$`)))
	})
}

// reloadUntil reloads page until check passes, for what the server derives
// from the real clock (the ledger has no auto-refresh). check gets a short
// timeout per attempt; the whole wait gives up after ledgerWait.
func reloadUntil(t *testing.T, page playwright.Page, what string, check func(playwright.LocatorAssertionsToBeVisibleOptions) error) {
	t.Helper()
	deadline := time.Now().Add(ledgerWait)
	opt := playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(1_000)}
	for {
		err := check(opt)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not there after reloading for %s: %v", what, ledgerWait, err)
		}
		_, err = page.Reload()
		must(t, "reload", err)
	}
}

// ledgerWait bounds reloadUntil: an every-second schedule needs about a
// second of real time per step.
const ledgerWait = 20 * time.Second

// legendCount reads the ledger legend's count of fate (0 when absent).
func legendCount(t *testing.T, ledger playwright.Locator, fate string) int {
	t.Helper()
	item := ledger.GetByTestId("ledger-count-" + fate)
	if n, err := item.Count(); err != nil || n == 0 {
		must(t, "count legend items", err)
		return 0
	}
	text, err := item.Locator("strong").TextContent()
	must(t, "legend count of "+fate, err)
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		t.Fatalf("legend count of %s: %q is not a number", fate, text)
	}
	return n
}

// ledgerFates returns the data-fate of every heatmap square (one per hour
// since the schedule was created), in page order.
func ledgerFates(t *testing.T, ledger playwright.Locator) []string {
	t.Helper()
	raw, err := ledger.GetByTestId("ledger-cell").EvaluateAll(`els => els.map(e => e.getAttribute("data-fate"))`)
	must(t, "read the ledger cells", err)
	list, ok := raw.([]any)
	if !ok {
		t.Fatalf("e2e: ledger cells: unexpected %T", raw)
	}
	var out []string
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// datetimes returns the datetime attribute of the <time> in each element
// of rows (the occurrence instant, to the second).
func datetimes(t *testing.T, rows playwright.Locator) []string {
	t.Helper()
	raw, err := rows.EvaluateAll(`els => els.map(e => e.querySelector("time").getAttribute("datetime"))`)
	must(t, "read the occurrence times", err)
	list, ok := raw.([]any)
	if !ok {
		t.Fatalf("e2e: occurrence times: unexpected %T", raw)
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}
