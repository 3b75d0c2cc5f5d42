package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// pastWeek is a schedule's history made before the server starts: a
// service on a fake clock, through the real router, writes what a week
// of an hourly job leaves — runs that completed, a night of failures, an
// afternoon the scheduler was down, a pause — so that the server, on the
// real clock, shows a week that has already happened.
type pastWeek struct {
	Created time.Time   // when the schedule was created
	Failed  []time.Time // occurrences whose run failed
	Zone    *time.Location
}

const pastWeekID = "hourly-settlement"

// seedPastWeek writes the history into the database at dbURL and returns
// what it wrote. The schedule fires at :00 every hour in New York from
// 6 days 14 hours ago to the last hour.
func seedPastWeek(t *testing.T, dbURL string) pastWeek {
	t.Helper()
	ctx := context.Background()
	db, err := database.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("e2e: open %s: %v", dbURL, err)
	}
	defer db.Close()
	if _, err := migrations.Apply(ctx, db); err != nil {
		t.Fatalf("e2e: migrate: %v", err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	created := now.Add(-(6*24 + 14) * time.Hour).Truncate(time.Hour).Add(20 * time.Minute)
	clock := schedtest.NewClock(created)
	h := web.NewServer(web.Deps{DB: db, Service: schedtest.Service(db, clock), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version: "test", Clock: clock})
	call := func(method, path, body string) string {
		t.Helper()
		req := httptest.NewRequest(method, "/waterline/api/v2"+path, strings.NewReader(body))
		req.RemoteAddr, req.Host = "127.0.0.1:40000", "127.0.0.1:8080"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 300 {
			t.Fatalf("e2e: seed %s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	call(http.MethodPost, "/schedules", `{"schedule_id":"`+pastWeekID+`","spec":{"cron_expressions":["0 * * * *"],"timezone":"America/New_York"},`+
		`"overlap_policy":"allow_all","action":{"workflow_type":"payments.SettleCardBatches"}}`)

	w := pastWeek{Created: created, Zone: ny}
	first := created.Truncate(time.Hour).Add(time.Hour)
	hours := int(now.Sub(first) / time.Hour)
	down := first.Add(time.Duration(hours/2) * time.Hour) // 3 hours the scheduler is down
	pausedAt := first.Add(time.Duration(hours*3/4) * time.Hour)
	for i := range hours {
		at := first.Add(time.Duration(i) * time.Hour)
		switch {
		case !at.Before(down) && at.Before(down.Add(3*time.Hour)):
			continue // no tick: missed (the next tick fires the overdue one only)
		case at.Equal(pausedAt):
			clock.Set(at.Add(-10 * time.Minute))
			call(http.MethodPost, "/schedules/"+pastWeekID+"/pause", `{"reason":"bank cut-over"}`)
			continue
		case at.After(pausedAt) && at.Before(pausedAt.Add(4*time.Hour)):
			continue
		case at.Equal(pausedAt.Add(4 * time.Hour)):
			clock.Set(at.Add(-10 * time.Minute))
			call(http.MethodPost, "/schedules/"+pastWeekID+"/resume", `{}`)
		}
		clock.Set(at.Add(2 * time.Minute))
		call(http.MethodPost, "/tick", "")
		polled := call(http.MethodPost, "/worker/poll", `{"worker_id":"seed","limit":10}`)
		var ids []string
		for _, part := range strings.Split(polled, `"run_id":"`)[1:] {
			ids = append(ids, part[:26])
		}
		for _, id := range ids {
			clock.Advance(time.Second)
			// Failures: the small hours of the second night, and every
			// 29th run (a flaky upstream).
			local := at.In(ny)
			night := local.Day() == first.In(ny).AddDate(0, 0, 1).Day() && local.Hour() >= 1 && local.Hour() < 5
			if (night || i%29 == 7) && !at.Equal(down.Add(3*time.Hour)) {
				call(http.MethodPost, "/worker/runs/"+id+"/fail", `{"worker_id":"seed","message":"acquirer answered 503","type":"http"}`)
				w.Failed = append(w.Failed, at)
				continue
			}
			call(http.MethodPost, "/worker/runs/"+id+"/complete", `{"worker_id":"seed"}`)
		}
	}
	if len(w.Failed) == 0 {
		t.Fatal("e2e: the seeded week has no failed run")
	}
	return w
}

// Scenario (issue 37 §9): the occurrence ledger of a schedule with a week
// behind it is a heatmap with its axes — days down the side in the
// schedule's zone, hours across — each square coloured by the worst outcome
// of its hour (an hour whose run failed is failed, not "started"), starting
// at the schedule's creation: no square before it, no "before created"
// count. It fits 1440×900 and 390×844 without sideways scrolling and passes
// axe at both.
func TestLedgerHeatmapByOutcome(t *testing.T) {
	for _, dbName := range []string{"sqlite", "postgres"} {
		t.Run(dbName, func(t *testing.T) {
			var dbURL string
			switch {
			case dbName == "sqlite":
				dbURL = "sqlite:" + filepath.Join(t.TempDir(), "tideline.db")
			case os.Getenv(dbtest.EnvURL) == "":
				t.Skipf("%s is not set; PostgreSQL not tested (the README's test command sets it)", dbtest.EnvURL)
			default:
				dbURL = dbtest.PostgresURL(t)
			}
			week := seedPastWeek(t, dbURL)
			srv := startServer(t, serverOptions{Database: dbName, DatabaseURL: dbURL, Args: []string{"--no-loop"}})

			page := newPage(t, pageOptions{BaseURL: srv.BaseURL})
			holdAutoRefresh(t, page)
			for _, vp := range []struct {
				w, h int
				shot string
			}{{1440, 900, "console-ledger.png"}, {390, 844, "console-ledger-phone.png"}} {
				must(t, "viewport", page.SetViewportSize(vp.w, vp.h))
				gotoOK(t, page, "/waterline/schedules/"+pastWeekID)
				ledger := page.GetByTestId("ledger")
				grid := ledger.GetByTestId("ledger-grid")
				must(t, "heatmap", expect.Locator(grid).ToBeVisible())

				// The axes: 24 hours across, the days since creation down
				// the side, newest first, in New York.
				must(t, "hour labels", expect.Locator(grid.GetByTestId("ledger-hour")).ToHaveCount(24))
				must(t, "first hour label", expect.Locator(grid.GetByTestId("ledger-hour").First()).ToHaveText("00"))
				must(t, "hour labels visible", expect.Locator(grid.GetByTestId("ledger-hour").First()).ToBeVisible())
				now := time.Now().In(week.Zone)
				c := week.Created.In(week.Zone)
				days := 1
				for d := time.Date(c.Year(), c.Month(), c.Day(), 12, 0, 0, 0, week.Zone); d.Format(time.DateOnly) != now.Format(time.DateOnly); d = d.AddDate(0, 0, 1) {
					days++
				}
				dayLabels := grid.GetByTestId("ledger-day")
				must(t, "a label per day since creation", expect.Locator(dayLabels).ToHaveCount(days))
				must(t, "newest day first", expect.Locator(dayLabels.First()).ToHaveText(now.Format("Mon 2 Jan")))
				must(t, "oldest day last", expect.Locator(dayLabels.Last()).ToHaveText(c.Format("Mon 2 Jan")))
				must(t, "the zone is named", expect.Locator(ledger.GetByTestId("ledger-axes")).ToContainText("days in America/New_York"))

				// A failed hour is coloured failed, in the failure colour.
				failed := week.Failed[0]
				cell := grid.Locator(fmt.Sprintf(`[data-testid="ledger-cell"][data-at="%s"]`, failed.Format(time.RFC3339)))
				must(t, "the failed hour", expect.Locator(cell).ToHaveAttribute("data-fate", "failed"))
				must(t, "coloured failed", expect.Locator(cell).ToHaveCSS("background-color", "rgb(180, 35, 24)"))
				must(t, "it opens the failed run", expect.Locator(cell).ToHaveAttribute("href", regexpRunURL))
				completed := grid.Locator(fmt.Sprintf(`[data-testid="ledger-cell"][data-at="%s"]`, failed.Add(-2*time.Hour).Format(time.RFC3339)))
				must(t, "a completed hour", expect.Locator(completed).ToHaveAttribute("data-fate", "completed"))
				must(t, "missed hours", expect.Locator(grid.Locator(`[data-fate="missed"]`)).ToHaveCount(3))
				must(t, "paused hours", expect.Locator(grid.Locator(`[data-fate="paused"]`)).ToHaveCount(4))

				// Nothing before the creation's hour.
				raw, err := grid.GetByTestId("ledger-cell").EvaluateAll(`els => els.map(e => e.getAttribute("data-at")).sort()[0]`)
				must(t, "earliest square", err)
				if want := week.Created.Truncate(time.Hour).Format(time.RFC3339); raw != want {
					t.Fatalf("the earliest square is at %v, want the creation's hour %s", raw, want)
				}
				must(t, "no before-created count", expect.Locator(ledger.GetByTestId("ledger-count-before_created")).ToHaveCount(0))
				must(t, "failed count", expect.Locator(ledger.GetByTestId("ledger-count-failed")).ToContainText(fmt.Sprintf("failed: %d", len(week.Failed))))

				// Fits the screen; accessible; looked at.
				wide, err := page.Evaluate(`() => document.documentElement.scrollWidth - document.documentElement.clientWidth`)
				must(t, "scroll width", err)
				if n, _ := wide.(int); n > 0 {
					t.Fatalf("at %d×%d the page scrolls sideways by %d px", vp.w, vp.h, n)
				}
				checkA11yWithin(t, page, `[data-testid="ledger"]`, fmt.Sprintf("the ledger at %d×%d", vp.w, vp.h))
				must(t, "scroll to the ledger", page.Locator("#ledger-h").ScrollIntoViewIfNeeded())
				_, err = page.Evaluate(`() => document.getElementById("ledger-h").scrollIntoView({block: "start"})`)
				must(t, "ledger at the top", err)
				if dbName == "sqlite" {
					shootJob(t, page, vp.shot)
				}
			}
		})
	}
}

var regexpRunURL = regexp.MustCompile(`^/waterline/runs/[0-9A-Z]{26}$`)
