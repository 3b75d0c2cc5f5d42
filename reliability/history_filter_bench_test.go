package reliability

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// filterEvents is the stream of issue 36's finding 1: a type filter over
// 2,000,000 fires took 3.7 s a request on SQLite, and its total 287 ms on
// PostgreSQL.
const filterEvents = 2_000_000

// BenchmarkHistoryFilter reads one filtered history page (limit=1, with its
// total) through the JSON API over a schedule whose stream holds 2,000,000
// fires beside a handful of lifecycle events, for each kind of filter: a
// lifecycle type oldest and newest first, the fires, and the skips.
//
//	go test ./reliability -run '^$' -bench HistoryFilter -count 6 -timeout 60m
func BenchmarkHistoryFilter(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := dbtest.Open(b, dialect)
			clock := schedtest.NewClock(benchT0)
			svc := schedtest.Service(db, clock)
			ctx := context.Background()
			sch, err := svc.Create(ctx, scheduling.CreateInput{
				ScheduleID: "deep", Spec: models.Spec{CronExpressions: []string{"* * * * *"}},
				Action: models.Action{WorkflowType: "bench"}, OverlapPolicy: scheduling.OverlapAllowAll,
			}, nil)
			if err != nil {
				b.Fatal(err)
			}
			bulkAuditEvents(b, db, sch.ID, filterEvents)
			for _, note := range []string{"one", "two", "three"} {
				if _, err := svc.Update(ctx, "default", "deep", scheduling.UpdateInput{Note: &note}, nil); err != nil {
					b.Fatal(err)
				}
			}
			h := web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "bench", Clock: clock})
			for _, c := range []struct {
				name, query string
				total       int64
			}{
				{"created", "event_type=ScheduleCreated", 1},
				{"updated-newest", "event_type=ScheduleUpdated&order=desc", 3},
				{"triggered", "event_type=ScheduleTriggered", filterEvents},
				{"skipped", "event_type=ScheduleTriggerSkipped", 0},
			} {
				b.Run(c.name, func(b *testing.B) {
					path := "/waterline/api/v2/schedules/deep/history?limit=1&" + c.query
					for b.Loop() {
						req := httptest.NewRequest(http.MethodGet, path, nil)
						req.RemoteAddr = "127.0.0.1:40000"
						req.Host = "127.0.0.1:8080"
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, req)
						if rec.Code != http.StatusOK {
							b.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
						}
						var page struct {
							Total int64 `json:"total"`
						}
						if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || page.Total != c.total {
							b.Fatalf("%s: total %d, want %d (%v)", path, page.Total, c.total, err)
						}
					}
				})
			}
		})
	}
}
