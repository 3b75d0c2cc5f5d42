package reliability

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// BenchmarkScheduleVersions lists the five versions of a schedule through
// the JSON API (GET /schedules/{id}/versions: router, service, query,
// replay, encoding) when its audit stream holds 10 events and when it holds
// 100,000, all but the five versions ScheduleTriggered fires. The versions
// are found through the partial index of non-trigger events (migration
// 0011), so the fires are never read and both cost the same.
//
//	go test ./reliability -run '^$' -bench ScheduleVersions -count 6 -timeout 30m
func BenchmarkScheduleVersions(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		for _, events := range []int{10, 100_000} {
			b.Run(dialect+"/events="+strconv.Itoa(events), func(b *testing.B) {
				ctx := context.Background()
				db := dbtest.Open(b, dialect)
				clock := schedtest.NewClock(benchT0)
				svc := schedtest.Service(db, clock)
				sch, err := svc.Create(ctx, scheduling.CreateInput{
					ScheduleID: "deep", Spec: models.Spec{CronExpressions: []string{"* * * * *"}},
					Action: models.Action{WorkflowType: "bench"}, OverlapPolicy: scheduling.OverlapAllowAll,
				}, nil)
				if err != nil {
					b.Fatal(err)
				}
				const versions = 5
				bulkAuditEvents(b, db, sch.ID, events-versions) // sequences 2..events-4
				for i := range versions - 1 {
					note := "edit " + strconv.Itoa(i)
					if _, err := svc.Update(ctx, "default", "deep", scheduling.UpdateInput{Note: &note}, nil); err != nil {
						b.Fatal(err)
					}
				}
				if events > 1000 { // a 10-row table is rightly scanned whole on PostgreSQL
					requireTypeIndex(b, db, sch.ID)
				}
				h := web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "bench", Clock: clock})
				const path = "/waterline/api/v2/schedules/deep/versions"
				want := `"sequence":` + strconv.Itoa(events) + `,`
				for b.Loop() {
					req := httptest.NewRequest(http.MethodGet, path, nil)
					req.RemoteAddr = "127.0.0.1:40000"
					req.Host = "127.0.0.1:8080"
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
						b.Fatalf("%s: %d %s (want the last version at sequence %d)", path, rec.Code, rec.Body.String(), events)
					}
				}
			})
		}
	}
}

// requireTypeIndex fails unless the versions query (models.ListVersionEvents)
// is planned through the partial index of non-trigger events.
func requireTypeIndex(b *testing.B, db *bun.DB, scheduleULID string) {
	b.Helper()
	const query = `SELECT se.id FROM workflow_schedule_history_events AS se WHERE se.workflow_schedule_id IN (?) ` +
		`AND se.event_type IN ('ScheduleCreated', 'ScheduleUpdated') AND se.event_type <> 'ScheduleTriggered' ` +
		`ORDER BY se.workflow_schedule_id, se.sequence`
	explain := "EXPLAIN "
	if database.Of(db).Name() == database.SQLite {
		explain = "EXPLAIN QUERY PLAN "
	}
	rows, err := db.QueryContext(context.Background(), explain+query, bun.In([]string{scheduleULID}))
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var plan []string
	for rows.Next() {
		cells := make([]any, len(cols))
		for i := range cells {
			cells[i] = new(any)
		}
		if err := rows.Scan(cells...); err != nil {
			b.Fatal(err)
		}
		for _, c := range cells {
			plan = append(plan, fmt.Sprint(*c.(*any)))
		}
	}
	if text := strings.Join(plan, " "); !strings.Contains(text, "workflow_schedule_history_events_type_idx") {
		b.Fatalf("the versions query does not use the type index:\n%s", text)
	}
}
