package e2e

import (
	"net/http"
	"testing"
)

// Scenario 6: namespace scoping. A schedule in another namespace is
// invisible: not in the registry, not found by search, its pages answer
// 404; only that namespace's own view shows it. A server pinned to a third
// namespace on the same database sees neither.
func TestNamespaceScoping(t *testing.T) {
	forEachDatabase(t, serverOptions{}, func(t *testing.T, srv *server) {
		api := newAPI(t, srv)
		api.createSchedule(sched{ID: "orders-rollup", Cron: "0 * * * *", WorkflowType: "orders.Rollup"})
		api.in("team-b").createSchedule(sched{ID: "team-b-payroll", Cron: "0 6 * * 1", WorkflowType: "payroll.Run"})

		page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
		holdAutoRefresh(t, page)
		openRegistry(t, page, "")
		must(t, "namespace shown", expect.Locator(page.GetByTestId("namespace")).ToContainText("default"))
		must(t, "own schedule listed", expect.Locator(scheduleRow(page, "orders-rollup")).ToBeVisible())
		must(t, "only its own", expect.Locator(page.GetByTestId("schedule-row")).ToHaveCount(1))
		must(t, "other namespace's schedule absent", expect.Locator(scheduleRow(page, "team-b-payroll")).ToHaveCount(0))

		// Searching for it by name finds nothing either.
		must(t, "search", page.GetByTestId("filter-q").Fill("team-b-payroll"))
		must(t, "filter", page.GetByTestId("filter-submit").Click())
		must(t, "no match", expect.Locator(page.GetByTestId("empty-state")).ToContainText("No schedules match these filters."))
		must(t, "search kept", expect.Locator(page.GetByTestId("filter-q")).ToHaveValue("team-b-payroll"))
		openRegistry(t, page, "?status=all")
		must(t, "not even among all statuses", expect.Locator(scheduleRow(page, "team-b-payroll")).ToHaveCount(0))

		// Its pages answer 404, like a schedule that does not exist.
		for _, path := range []string{"/waterline/schedules/team-b-payroll", "/waterline/schedules/team-b-payroll/history"} {
			resp, err := page.Goto(path)
			must(t, "open "+path, err)
			if resp.Status() != http.StatusNotFound {
				t.Fatalf("%s: status %d, want 404", path, resp.Status())
			}
			must(t, path+" error page", expect.Locator(page.GetByTestId("error-title")).ToBeVisible())
		}
		// Likewise over the API without the namespace.
		if status, body := api.do(http.MethodGet, "/schedules/team-b-payroll", nil); status != http.StatusNotFound {
			t.Fatalf("API GET team-b-payroll in default: %d %s, want 404", status, body)
		}

		// In its own namespace it is there (and the default one's is not).
		openRegistry(t, page, "?namespace=team-b")
		must(t, "team-b shown", expect.Locator(page.GetByTestId("namespace")).ToContainText("team-b"))
		must(t, "team-b schedule listed", expect.Locator(scheduleRow(page, "team-b-payroll")).ToBeVisible())
		must(t, "default schedule absent from team-b", expect.Locator(scheduleRow(page, "orders-rollup")).ToHaveCount(0))

		// A second server on the same database, pinned to team-a.
		pinned := startServer(t, serverOptions{Database: srv.Database, DatabaseURL: srv.DatabaseURL, Args: []string{"--namespace", "team-a", "--no-loop"}})
		other := newPage(t, pageOptions{BaseURL: pinned.BaseURL})
		holdAutoRefresh(t, other)
		openRegistry(t, other, "?status=all")
		must(t, "team-a shown", expect.Locator(other.GetByTestId("namespace")).ToContainText("team-a"))
		must(t, "team-a sees no schedules", expect.Locator(other.GetByTestId("schedule-row")).ToHaveCount(0))
		must(t, "team-a empty state", expect.Locator(other.GetByTestId("empty-state")).ToBeVisible())
		// ?namespace= cannot escape a pinned server.
		openRegistry(t, other, "?namespace=team-b")
		must(t, "pinned server ignores ?namespace", expect.Locator(other.GetByTestId("schedule-row")).ToHaveCount(0))
		resp, err := other.Goto("/waterline/schedules/team-b-payroll?namespace=team-b")
		must(t, "open team-b's schedule on the pinned server", err)
		if resp.Status() != http.StatusNotFound {
			t.Fatalf("team-b's schedule on the team-a server: status %d, want 404", resp.Status())
		}
	})
}
