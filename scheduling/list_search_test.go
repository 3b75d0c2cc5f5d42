package scheduling_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/loadgen"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// The registry's label filter and text search return exactly the rows a
// brute-force filter in Go finds, in every order, page by page, on both
// databases — after the labels, notes, types, namespaces and rows changed
// under them (on SQLite the side tables of migration 0031 are kept by
// triggers; a wrong trigger shows here). 1,200 seeded schedules make
// "tier=common" and the text "bench" common enough for SQLite to walk
// (database.sideTableDriveLimit), the rest rare enough to drive from the
// side tables: both forms are compared.
func TestListSearchMatchesBruteForce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := context.Background()
		clock := schedtest.NewClock(t0)
		svc := schedtest.Service(db, clock)
		seedSchedules(t, db, "seed", 1200, t0.Add(time.Hour))
		_, err := db.ExecContext(ctx, `UPDATE workflow_schedules SET labels = '{"tier": "common"}' WHERE schedule_id LIKE 'seed-%'`)
		require.NoError(t, err)

		// Schedules through the service, as the API writes them.
		create := func(id, note, typ string, labels map[string]string) {
			in := cronInput(id, "0 * * * *")
			in.Note, in.Action.WorkflowType, in.Labels = note, typ, labels
			_, err := svc.Create(ctx, in, nil)
			require.NoError(t, err, id)
		}
		create("alpha", "Nightly 100% REPORT", "report.Daily", map[string]string{"team": "a", "tier": "rare"})
		create("beta_1", "50_50 split; owned by École", "invoice-sync", map[string]string{"team": "b", "dotted.key": "x"})
		create("gamma", `says "quoted" and it's fine`, "Report.Weekly", map[string]string{"team": "a", "pct": "100%", "under": "a_b"})
		create("delta", "école ünïcode", "ÉCOLE.Type", map[string]string{"empty": "", "uni": "ünï"})
		create("epsilon", "Rarely fired", "bench", map[string]string{"team": "a", "tier": "common"})
		create("zeta", "moves namespace", "zeta.Type", map[string]string{"team": "a"})
		create("eta", "renamed", "eta.Type", map[string]string{"team": "c"})
		for i := range 8 {
			create(fmt.Sprintf("many-%02d", i), fmt.Sprintf("page filler %d", i), "filler", map[string]string{"team": "a", "tier": "rare"})
		}
		in := cronInput("alpha", "0 * * * *")
		in.Namespace, in.Note, in.Labels = "other", "Nightly 100% REPORT elsewhere", map[string]string{"team": "a", "tier": "rare"}
		_, err = svc.Create(ctx, in, nil)
		require.NoError(t, err)
		// Rows no Go writer makes: values that are not strings, a key
		// with a quote, labels that are not an object. The model cannot
		// read zq-num's and zq-array's labels, so a list that wrongly
		// returned them would fail; no text searched matches them.
		for _, row := range []struct{ id, labels string }{
			{"zq-num", `{"n": 5, "t": true, "nul": null, "o": {"a": "b"}, "arr": ["x"]}`},
			{"zq-str", `{"n": "5", "t": "true", "o": "{\"a\":\"b\"}", "q\"k": "v"}`},
			{"zq-array", `["team", "a"]`},
			{"zq-gone", `{"team": "a", "tier": "rare"}`},
		} {
			s := models.Schedule{ID: "01" + strings.ToUpper(strings.ReplaceAll(row.id, "-", "")), Namespace: "default", ScheduleID: row.id,
				Status: models.StatusActive, Spec: models.Spec{CronExpressions: []string{"0 * * * *"}, Intervals: []models.Interval{}, Timezone: "UTC"},
				Action: models.Action{WorkflowType: "zq.T"}, OverlapPolicy: scheduling.OverlapAllowAll, Note: "zq",
				Labels: map[string]string{}, Memo: map[string]string{}, SearchAttributes: map[string]string{},
				BufferedActions: []models.BufferedAction{}, CreatedAt: t0, UpdatedAt: t0}
			require.NoError(t, models.InsertSchedule(ctx, db, &s))
			_, err := db.ExecContext(ctx, "UPDATE workflow_schedules SET labels = ? WHERE id = ?", row.labels, s.ID)
			require.NoError(t, err)
		}

		// Then everything the side tables follow changes.
		update := func(id string, in scheduling.UpdateInput) {
			_, err := svc.Update(ctx, "default", id, in, nil)
			require.NoError(t, err, id)
		}
		update("eta", scheduling.UpdateInput{Labels: &map[string]string{"team": "a", "tier": "rare"}, Note: ptr("Renamed: NOW 100%")})
		update("beta_1", scheduling.UpdateInput{Action: &models.Action{WorkflowType: "Report.Monthly"}})
		update("gamma", scheduling.UpdateInput{Labels: &map[string]string{"team": "b"}})
		_, err = db.ExecContext(ctx, "UPDATE workflow_schedules SET namespace = 'other' WHERE schedule_id = 'zeta'")
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "UPDATE workflow_schedules SET schedule_id = 'seed-renamed-rare', labels = '{\"tier\": \"rare\"}' WHERE schedule_id = 'seed-000007'")
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, "DELETE FROM workflow_schedules WHERE schedule_id = 'zq-gone'")
		require.NoError(t, err)
		_, err = svc.Delete(ctx, "default", "many-03", nil) // soft: hidden by the status filter
		require.NoError(t, err)
		_, err = svc.Pause(ctx, "default", "many-04", scheduling.PauseInput{}, nil)
		require.NoError(t, err)
		if database.Of(db).Name() == database.PostgreSQL {
			require.NoError(t, loadgen.Analyze(ctx, db, "workflow_schedules"))
		} else {
			require.NoError(t, database.Of(db).Optimize(ctx, db))
		}

		// The brute force: every row, filtered in Go.
		var all []struct {
			Namespace  string `bun:"namespace"`
			ScheduleID string `bun:"schedule_id"`
			Status     string `bun:"status"`
			Note       string `bun:"note"`
			Action     string `bun:"action"`
			Labels     string `bun:"labels"`
		}
		require.NoError(t, db.NewRaw("SELECT namespace, schedule_id, status, note, action, labels FROM workflow_schedules").Scan(ctx, &all))
		// LOWER and LIKE fold ASCII only on SQLite; PostgreSQL's lower()
		// folds Unicode (C.UTF-8 here, as Go does for these texts).
		lower := strings.ToLower
		if database.Of(db).Name() == database.SQLite {
			lower = func(s string) string {
				return strings.Map(func(r rune) rune {
					if 'A' <= r && r <= 'Z' {
						return r + 'a' - 'A'
					}
					return r
				}, s)
			}
		}
		expect := func(f scheduling.ListFilter) []string {
			key, value, _ := scheduling.ParseLabelFilter(f.Label)
			var out []string
			for _, r := range all {
				if r.Namespace != f.Namespace || (r.Status != models.StatusActive && r.Status != models.StatusPaused) {
					continue
				}
				if f.Label != "" {
					var labels map[string]any
					_ = json.Unmarshal([]byte(r.Labels), &labels) // not an object: no labels
					if v, ok := labels[key].(string); !ok || v != value {
						continue
					}
				}
				if f.Text != "" {
					var action models.Action
					require.NoError(t, json.Unmarshal([]byte(r.Action), &action))
					q := strings.ToLower(f.Text)
					if !strings.Contains(lower(r.ScheduleID), q) && !strings.Contains(lower(r.Note), q) && !strings.Contains(lower(action.WorkflowType), q) {
						continue
					}
				}
				out = append(out, r.ScheduleID)
			}
			slices.Sort(out)
			return out
		}
		list := func(f scheduling.ListFilter) []string {
			var out []string
			f.Limit = 7 // several pages: the keyset cursor under every condition
			for {
				page, err := svc.List(ctx, f)
				require.NoError(t, err, "%+v", f)
				for _, s := range page.Schedules {
					out = append(out, s.ScheduleID)
				}
				if page.NextCursor == "" {
					return out
				}
				f.Cursor = page.NextCursor
			}
		}

		var filters []scheduling.ListFilter
		for _, label := range []string{"team=a", "team=b", "team=c", "tier=rare", "tier=common", "dotted.key=x", "pct=100%",
			"under=a_b", "under=a%b", "empty=", "uni=ünï", "n=5", "t=true", "o={\"a\":\"b\"}", "arr=x", "0=team", "nul=", "missing=x"} {
			filters = append(filters, scheduling.ListFilter{Label: label})
		}
		for _, text := range []string{"REPORT", "report", "100%", "100", "50_50", "%", "_", "a_b", "École", "école", "ÉCOLE", "ünï",
			"ÜNÏ", "seed-0001", "seed-renamed", "bench", "ench", "fired", "xyz", `"quoted"`, "it's", "ab", "éc", "e", "100% report"} {
			filters = append(filters, scheduling.ListFilter{Text: text})
		}
		filters = append(filters, scheduling.ListFilter{Text: "report", Label: "team=a"}, scheduling.ListFilter{Text: "bench", Label: "tier=rare"},
			scheduling.ListFilter{Text: "filler", Label: "tier=common"}, scheduling.ListFilter{Text: "seed", Label: "tier=rare"})
		for _, f := range filters {
			for _, ns := range []string{"default", "other"} {
				f.Namespace = ns
				want := expect(f)
				for _, sort := range []string{"schedule_id", "next_fire", "health"} {
					f.Sort = sort
					got := list(f)
					if sort == "schedule_id" {
						require.Equal(t, want, got, "%s: label %q text %q, in ID order", ns, f.Label, f.Text)
					}
					slices.Sort(got)
					require.Equal(t, want, got, "%s: label %q text %q, sort %s", ns, f.Label, f.Text, sort)
				}
			}
		}
		// The data says what the test means: both forms ran on SQLite.
		require.Greater(t, len(expect(scheduling.ListFilter{Namespace: "default", Label: "tier=common"})), 1000)
		require.Greater(t, len(expect(scheduling.ListFilter{Namespace: "default", Text: "bench"})), 1000)
		require.Equal(t, []string{"alpha", "eta"}, expect(scheduling.ListFilter{Namespace: "default", Text: "100%"}))
	})
}

// markedStatements records the statements that contain marker ("h_rank":
// the registry's page statements, those reading the health rank), to
// count or explain them afterwards.
type markedStatements struct {
	statementLog
	marker string
}

func (l *markedStatements) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.Contains(e.Query, l.marker) {
		l.mu.Lock()
		l.stmts = append(l.stmts, e.Query)
		l.mu.Unlock()
	}
}

// On SQLite a rare label starts the page from the labels side table's
// primary key and a rare text from the trigram table (migration 0031),
// in both the ID and the next-fire order, instead of walking the
// namespace's (namespace, schedule_id) key; a common label is read from
// each row the walk meets, as before (database.Dialect.ScheduleLabel).
func TestListSearchPlansUseTheSideTablesOnSQLite(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	log := &markedStatements{marker: "h_rank"}
	svc := schedtest.Service(db.WithQueryHook(log), schedtest.NewClock(t0))
	seedSchedules(t, db, "plan", 1500, t0.Add(time.Hour))
	_, err := db.ExecContext(ctx, `UPDATE workflow_schedules SET labels = '{"tier": "common"}'`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `UPDATE workflow_schedules SET labels = '{"tier": "rare"}', note = 'Rarely fired'
		WHERE schedule_id IN ('plan-000010', 'plan-000700', 'plan-001400')`)
	require.NoError(t, err)
	require.NoError(t, database.Of(db).Optimize(ctx, db))

	const (
		walk       = "SEARCH s USING INDEX workflow_schedules_namespace_schedule_id_key (namespace=?)\n"
		labelIndex = "SEARCH l USING PRIMARY KEY (namespace=? AND label_key=? AND label_value=?)"
		textIndex  = "SCAN workflow_schedule_search VIRTUAL TABLE INDEX"
	)
	for _, tc := range []struct {
		filter        scheduling.ListFilter
		want, notWant string
		n             int
	}{
		{scheduling.ListFilter{Label: "tier=rare"}, labelIndex, walk, 3},
		{scheduling.ListFilter{Label: "tier=rare", Sort: "next_fire"}, labelIndex, walk, 3},
		{scheduling.ListFilter{Text: "rarely"}, textIndex, walk, 3},
		{scheduling.ListFilter{Text: "Rarely Fired", Sort: "next_fire"}, textIndex, walk, 3},
		{scheduling.ListFilter{Label: "tier=common"}, walk, labelIndex, 50},
		{scheduling.ListFilter{Text: "ra"}, walk, textIndex, 3}, // two characters: no trigram
	} {
		tc.filter.Namespace = "default"
		page, err := svc.List(ctx, tc.filter)
		require.NoError(t, err)
		require.Len(t, page.Schedules, tc.n, "%+v", tc.filter)
		stmts := log.take()
		require.Len(t, stmts, 1)
		plan := explain(t, db, stmts[0]) + "\n"
		require.Contains(t, plan, tc.want, "%+v: %s", tc.filter, plan)
		require.NotContains(t, plan, tc.notWant, "%+v: %s", tc.filter, plan)
	}
}
