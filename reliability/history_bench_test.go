package reliability

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

// historyEvents is how deep the benchmark's audit stream is: CONTRACT §6 wants
// the page at sequence 1,000,000 to cost what the first page costs.
const historyEvents = 1_000_000

// BenchmarkHistoryPage reads one 100-event page of a schedule's audit
// stream through the JSON API (router, service, query, encoding), at the
// start of a 1,000,001-event stream and at its end (events 999,901 to
// 1,000,000). The events are bulk-inserted with generate_series
// (PostgreSQL) or a recursive CTE (SQLite).
//
//	go test ./reliability -run '^$' -bench HistoryPage -count 6 -timeout 30m
func BenchmarkHistoryPage(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := dbtest.Open(b, dialect)
			clock := schedtest.NewClock(benchT0)
			svc := schedtest.Service(db, clock)
			sch, err := svc.Create(context.Background(), scheduling.CreateInput{
				ScheduleID: "deep", Spec: models.Spec{CronExpressions: []string{"* * * * *"}},
				Action: models.Action{WorkflowType: "bench"}, OverlapPolicy: scheduling.OverlapAllowAll,
			}, nil)
			if err != nil {
				b.Fatal(err)
			}
			bulkAuditEvents(b, db, sch.ID, historyEvents)
			h := web.NewServer(web.Deps{DB: db, Service: svc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "bench", Clock: clock})
			for _, after := range []int{0, historyEvents - 100} {
				b.Run("after="+strconv.Itoa(after), func(b *testing.B) {
					path := "/waterline/api/v2/schedules/deep/history?limit=100&after_sequence=" + strconv.Itoa(after)
					for b.Loop() {
						req := httptest.NewRequest(http.MethodGet, path, nil)
						req.RemoteAddr = "127.0.0.1:40000"
						req.Host = "127.0.0.1:8080" // and addressed to this machine (no DNS rebinding)
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, req)
						if rec.Code != http.StatusOK {
							b.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
						}
						var page struct {
							Events []struct {
								Sequence int64 `json:"sequence"`
							} `json:"events"`
						}
						if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || len(page.Events) != 100 || page.Events[0].Sequence != int64(after+1) {
							b.Fatalf("%s: %d events starting at %v (%v)", path, len(page.Events), page.Events, err)
						}
					}
				})
			}
		})
	}
}

// bulkAuditEvents appends n ScheduleTriggered events (sequences 2..n+1,
// after the ScheduleCreated one) to a schedule in one statement, stored the
// way a regular fire stores them since migration 0012: the facts in the
// columns, an empty payload (scheduling/audit.go serves it whole).
func bulkAuditEvents(b testing.TB, db *bun.DB, scheduleULID string, n int) {
	b.Helper()
	ctx := context.Background()
	var query string
	if database.Of(db).Name() == database.PostgreSQL {
		query = `INSERT INTO workflow_schedule_history_events
			(id, workflow_schedule_id, sequence, event_type, payload, workflow_instance_id, workflow_run_id, recorded_at,
				trigger_number, occurrence_time, trigger_outcome, effective_overlap_policy)
			SELECT 'BULK' || lpad(g::text, 22, '0'), ?0, g + 1, 'ScheduleTriggered', '{}',
				'schedule:deep:' || g, 'RUN' || lpad(g::text, 23, '0'), ?1::timestamptz + g * interval '1 minute',
				g, ?1::timestamptz + g * interval '1 minute', 'scheduled', 'allow_all'
			FROM generate_series(1, ?2) AS g`
	} else {
		query = `INSERT INTO workflow_schedule_history_events
			(id, workflow_schedule_id, sequence, event_type, payload, workflow_instance_id, workflow_run_id, recorded_at,
				trigger_number, occurrence_time, trigger_outcome, effective_overlap_policy)
			WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?2)
			SELECT 'BULK' || printf('%022d', n), ?0, n + 1, 'ScheduleTriggered', '{}',
				'schedule:deep:' || n, 'RUN' || printf('%023d', n), ?1, n, ?1, 'scheduled', 'allow_all'
			FROM g`
	}
	if _, err := db.ExecContext(ctx, query, scheduleULID, benchT0, n); err != nil {
		b.Fatalf("bulk insert %d audit events: %v", n, err)
	}
	if _, err := db.NewUpdate().Model((*models.Schedule)(nil)).Set("last_sequence = ?, fires_count = ?", n+1, n).Where("id = ?", scheduleULID).Exec(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "ANALYZE workflow_schedule_history_events"); err != nil {
		b.Fatal(err)
	}
}
