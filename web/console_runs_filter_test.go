package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// The runs list filters by workflow type and by creation time (an ID
// range: run IDs are ULIDs), with plain GET forms.
func TestConsoleRunsFilterByTypeAndTime(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", `{"schedule_id":"export","cron":"0 0 1 1 *","overlap_policy":"allow_all","action":{"workflow_type":"billing.Export"}}`)
		c.create("default", `{"schedule_id":"train","cron":"0 0 1 1 *","overlap_policy":"allow_all","action":{"workflow_type":"ml.Train"}}`)
		start := c.api.clock.Now().Truncate(time.Minute).Add(time.Minute) // 12:01 UTC
		var ids []string
		for i, id := range []string{"export", "train", "export", "train"} {
			c.api.clock.Set(start.Add(time.Duration(i) * time.Minute))
			ids = append(ids, c.api.must(200, "POST", v2+"/schedules/"+id+"/trigger", "")["run_id"].(string))
		}
		listed := func(query string) []string {
			doc := c.page200("/waterline/runs?" + query)
			return doc.Find(tid("run-row")).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-run-id", "") })
		}
		at := func(i int) string { return start.Add(time.Duration(i) * time.Minute).Format("2006-01-02T15:04") }

		require.Equal(t, []string{ids[2], ids[0]}, listed("workflow_type=billing.Export"))
		require.Equal(t, []string{ids[2], ids[1]}, listed("created_from="+at(1)+"&created_to="+at(3)), "from inclusive, to exclusive")
		require.Equal(t, []string{ids[3]}, listed("created_from="+at(2)+":30"), "with seconds")
		require.Equal(t, []string{ids[2]}, listed("workflow_type=billing.Export&created_from="+at(1)))
		require.Empty(t, listed("workflow_type=nothing.Like.This"))

		doc := c.page200("/waterline/runs?workflow_type=ml.Train&created_from=" + at(1) + "&limit=1")
		require.Equal(t, "ml.Train", attrOf(t, doc.Find(tid("filter-workflow-type")), "value"), "the form keeps its values")
		require.Equal(t, at(1), attrOf(t, doc.Find(tid("filter-created-from")), "value"))
		require.Zero(t, doc.Find(tid("runs-scan-note")).Length(), "fewer runs than the scan bound: nothing to say")
		next := attrOf(t, doc.Find(tid("next-page")), "href")
		require.Contains(t, next, "workflow_type=ml.Train")
		require.Contains(t, next, "created_from=")
		require.Equal(t, []string{ids[1]}, c.page200(next).Find(tid("run-row")).Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-run-id", "") }))

		for _, q := range []string{"created_from=yesterday", "created_to=2026-13-01T00:00", "created_from=" + at(3) + "&created_to=" + at(1)} {
			p := c.get("/waterline/runs?" + q)
			require.Equal(t, http.StatusUnprocessableEntity, p.Status, q)
			require.Contains(t, textOf(p.Doc.Find(tid("flash"))), "created_", q)
		}

		// "Retry all matching" takes status and schedule only: not offered
		// where the list is narrowed by type or time.
		c.api.must(200, "POST", v2+"/worker/poll", `{"worker_id":"w1","limit":10}`)
		c.api.must(200, "POST", v2+"/worker/runs/"+ids[0]+"/fail", `{"worker_id":"w1","message":"x","type":"io"}`)
		require.Equal(t, 1, c.page200("/waterline/runs?status=failed").Find(tid("runs-retry-matching")).Length())
		require.Zero(t, c.page200("/waterline/runs?status=failed&workflow_type=billing.Export").Find(tid("runs-retry-matching")).Length())
	})
}

// A workflow-type filter examines at most scheduling.MaxRunTypeScan runs a
// page (there is no index on the type) and says so; the next page looks at
// the runs before them.
func TestConsoleRunsTypeFilterIsBounded(t *testing.T) {
	t.Parallel()
	require.Equal(t, 5000, scheduling.MaxRunTypeScan)
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		base := c.api.clock.Now().Add(-time.Hour)
		// The oldest run is the only match; 5,000 newer ones are noise.
		runs := make([]models.Run, 0, scheduling.MaxRunTypeScan+1)
		for i := range scheduling.MaxRunTypeScan + 1 {
			at := base.Add(time.Duration(i) * time.Millisecond)
			typ := "noise.Job"
			if i == 0 {
				typ = "rare.Job"
			}
			runs = append(runs, models.Run{ID: ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()).String(), Namespace: "default",
				InstanceID: fmt.Sprintf("direct:%d", i), WorkflowType: typ, WorkflowClass: "", Status: models.RunCompleted, Trigger: "direct",
				Connection: "", Queue: "default", Attempt: 1, CreatedAt: at, UpdatedAt: at})
		}
		for i := 0; i < len(runs); i += 500 {
			chunk := runs[i:min(i+500, len(runs))]
			_, err := db.NewInsert().Model(&chunk).Exec(context.Background())
			require.NoError(t, err)
		}
		doc := c.page200("/waterline/runs?workflow_type=rare.Job")
		require.Zero(t, doc.Find(tid("run-row")).Length(), "the match is past the scan")
		require.Contains(t, textOf(doc.Find(tid("runs-scan-note"))), `Showing matches for workflow type "rare.Job" among the latest 5,000 runs`)
		require.Contains(t, textOf(doc.Find(tid("empty-state"))), "No runs match these filters among the runs this page looked at")
		doc = c.page200(attrOf(t, doc.Find(tid("next-page")), "href"))
		require.Equal(t, runs[0].ID, attrOf(t, doc.Find(tid("run-row")), "data-run-id"), "the next page looks further")
		require.Zero(t, doc.Find(tid("next-page")).Length())
		require.Zero(t, doc.Find(tid("runs-scan-note")).Length(), "the last runs: fewer than the bound")

		// The API says the same with "scanned" and a cursor to go on from.
		page := c.api.must(200, "GET", "/waterline/api/v2/runs?workflow_type=rare.Job", "")
		require.Empty(t, page["runs"])
		require.EqualValues(t, scheduling.MaxRunTypeScan, page["scanned"])
		require.Equal(t, true, page["has_more"])
		next := c.api.must(200, "GET", "/waterline/api/v2/runs?workflow_type=rare.Job&cursor="+page["next_cursor"].(string), "")
		require.Len(t, next["runs"], 1)
		require.NotContains(t, next, "scanned")
	})
}
