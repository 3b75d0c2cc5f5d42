package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
)

// Many clients trigger one schedule at the same moment, over real HTTP: the
// decision "is the latest run active?" and the write of the new run are
// serialised per schedule, so each policy yields exactly the outcome counts
// of CONTRACT §5, and the audit stream records exactly those fires and skips.
func TestConcurrentTriggersObeyTheOverlapPolicy(t *testing.T) {
	t.Parallel()
	type want struct {
		triggered, buffered int
		skipped             map[string]int
		runs                map[string]int // run status → count
	}
	const n = 24
	cases := []struct {
		policy string
		n      int
		want   want
	}{
		{"skip", n, want{1, 0, map[string]int{"overlap_policy_skip": n - 1}, map[string]int{"pending": 1}}},
		{"buffer_one", n, want{1, 1, map[string]int{"buffer_full": n - 2}, map[string]int{"pending": 1}}},
		{"buffer_all", n, want{1, n - 1, map[string]int{}, map[string]int{"pending": 1}}},
		{"cancel_other", n, want{n, 0, map[string]int{}, map[string]int{"pending": 1, "cancelled": n - 1}}},
		{"terminate_other", n, want{n, 0, map[string]int{}, map[string]int{"pending": 1, "terminated": n - 1}}},
		{"allow_all", n, want{n, 0, map[string]int{}, map[string]int{"pending": n}}},
		// Past the buffer's cap (1,000) the rest are buffer_full.
		{"buffer_all", 1003, want{1, 1000, map[string]int{"buffer_full": 2}, map[string]int{"pending": 1}}},
	}
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		f := newAPI(t, db, "")
		srv := httptest.NewServer(f.h)
		t.Cleanup(srv.Close)
		for _, tc := range cases {
			id := fmt.Sprintf("c-%s-%d", strings.ReplaceAll(tc.policy, "_", "-"), tc.n)
			f.must(201, "POST", "/waterline/api/v2/schedules", fmt.Sprintf(
				`{"schedule_id":%q,"spec":{"cron_expressions":["0 0 1 1 *"]},"action":{"workflow_type":"w"},"overlap_policy":%q}`, id, tc.policy))

			outcomes := make(chan map[string]any, tc.n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range tc.n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					res, err := http.Post(srv.URL+"/waterline/api/v2/schedules/"+id+"/trigger", "application/json", strings.NewReader(`{}`))
					if err != nil {
						outcomes <- map[string]any{"error": err.Error()}
						return
					}
					defer res.Body.Close()
					var body map[string]any
					if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 200 {
						body = map[string]any{"error": fmt.Sprintf("status %d: %v %v", res.StatusCode, body, err)}
					}
					outcomes <- body
				}()
			}
			close(start)
			wg.Wait()
			close(outcomes)

			got := want{skipped: map[string]int{}, runs: map[string]int{}}
			instanceIDs := map[string]int{}
			for o := range outcomes {
				require.Nil(t, o["error"], "%s: %v", tc.policy, o["error"])
				switch o["outcome"] {
				case "triggered":
					got.triggered++
				case "buffered":
					got.buffered++
				case "skipped":
					got.skipped[o["reason"].(string)]++
					continue
				}
				instanceIDs[o["instance_id"].(string)]++
			}
			var statuses []string
			require.NoError(t, db.NewSelect().Model((*models.Run)(nil)).Column("status").
				Where("schedule_id = ?", id).Scan(f.t.Context(), &statuses))
			for _, st := range statuses {
				got.runs[st]++
			}
			require.Equal(t, tc.want, got, "policy %s: outcomes and runs", tc.policy)
			require.Len(t, instanceIDs, tc.want.triggered+tc.want.buffered, "policy %s: every acknowledged fire has its own instance ID", tc.policy)

			sch := f.must(200, "GET", "/waterline/api/v2/schedules/"+id, "")
			require.Len(t, sch["buffered_actions"], tc.want.buffered, "policy %s: buffered_actions", tc.policy)

			var types []string
			require.NoError(t, db.NewSelect().Model((*models.ScheduleEvent)(nil)).Column("se.event_type").
				Join("JOIN workflow_schedules AS s ON s.id = se.workflow_schedule_id").
				Where("s.schedule_id = ?", id).OrderExpr("se.sequence").Scan(f.t.Context(), &types))
			count := map[string]int{}
			for _, ty := range types {
				count[ty]++
			}
			skips := 0
			for _, k := range tc.want.skipped {
				skips += k
			}
			require.Equal(t, tc.want.triggered, count["ScheduleTriggered"], "policy %s: audit ScheduleTriggered", tc.policy)
			require.Equal(t, skips, count["ScheduleTriggerSkipped"], "policy %s: audit ScheduleTriggerSkipped", tc.policy)
		}
	})
}
