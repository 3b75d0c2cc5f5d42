package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/web"
)

// Issue 36, finding 10: a schedule created by someone else between apply's
// plan and its writes failed the apply half-way (299 of 300 applied) and
// said only "the steps above it were applied". Apply is not all-or-nothing
// (each step is its own change; docs/schedules-file.md), so it now lists
// exactly what it applied and what it did not.
func TestApplyReportsExactlyWhatWasAppliedWhenAStepFails(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db := dbtest.Open(t, dialect)
			store := &auth.Store{}
			token, err := store.AddEphemeral("alice", auth.RoleAdmin)
			require.NoError(t, err)
			svc := scheduling.New(scheduling.Config{DB: db})
			h := web.NewServer(web.Deps{DB: db, Service: svc, Logger: discardLogger(), Auth: web.Auth{Store: store}})
			// The second create of the apply meets a schedule another writer
			// made after the plan.
			var creates atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/waterline/api/v2/schedules" && r.URL.RawQuery == "" && creates.Add(1) == 2 {
					_, err := svc.Create(context.Background(), scheduling.CreateInput{Namespace: "default", ScheduleID: "b",
						Spec: models.Spec{CronExpressions: []string{"@daily"}}, Action: models.Action{WorkflowType: "other"}}, nil)
					require.NoError(t, err)
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			var file strings.Builder
			for _, id := range []string{"a", "b", "c"} {
				file.WriteString("- schedule_id: " + id + "\n  spec: {cron_expressions: [\"@hourly\"]}\n  action: {workflow_type: w}\n")
			}
			env := map[string]string{"TIDELINE_SERVER": srv.URL, "TIDELINE_TOKEN": token, "TIDELINE_LOG_LEVEL": "warn"}
			out, _, err := runCLI(t, env, "schedule", "apply", "-f", writeFile(t, "s.yaml", file.String()))
			require.Error(t, err)
			require.Contains(t, out, "Applied before the failure (1 of 3): create a\n")
			require.Contains(t, out, "Not applied (2): create b, create c\n")
			require.ErrorContains(t, err, "create b: ")
			require.ErrorContains(t, err, "1 of 3 steps were applied")
			_, err = svc.Get(context.Background(), "default", "a")
			require.NoError(t, err, "the step reported applied was")
			_, err = svc.Get(context.Background(), "default", "c")
			require.ErrorIs(t, err, scheduling.ErrNotFound, "the step reported not applied was not")
		})
	}
}
