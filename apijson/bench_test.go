package apijson

import (
	"testing"
	"time"

	"github.com/tidelinehq/tideline/models"
)

// BenchmarkFromSchedule renders one schedule as the API's lists do, 100 a
// page: the field table's members are set by key (fields.go).
func BenchmarkFromSchedule(b *testing.B) {
	at := time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)
	n, q := 3, "reports"
	s := &models.Schedule{ID: "01J2Z0SCHED000000000000001", Namespace: "default", ScheduleID: "nightly", Status: models.StatusActive,
		Spec:   models.Spec{CronExpressions: []string{"0 2 * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"},
		Action: models.Action{WorkflowType: "reports.Nightly"}, OverlapPolicy: "skip", JitterSeconds: 30, PauseAfterFailures: &n,
		Queue: &q, Labels: map[string]string{"team": "data"}, Memo: map[string]string{}, SearchAttributes: map[string]string{},
		Note: "owned by data", NextFireAt: &at, NextNominalAt: &at, CreatedAt: at, UpdatedAt: at}
	b.ReportAllocs()
	for b.Loop() {
		_ = FromSchedule(s)
	}
}
