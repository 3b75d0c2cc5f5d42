package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// A console area needs only its own slice of the service: the runs pages
// are served by a Console that holds nothing but a RunKeeper — no server,
// no router, no schedule or notifier service — on a real database.
func TestRunPagesNeedOnlyTheRunKeeper(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		clock := schedtest.NewClock(time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC))
		svc := schedtest.Service(db, clock)
		ctx := t.Context()
		_, err := svc.Create(ctx, scheduling.CreateInput{
			Namespace: "default", ScheduleID: "nightly",
			Spec:   models.Spec{CronExpressions: []string{"0 2 * * *"}, Timezone: "UTC"},
			Action: models.Action{WorkflowType: "report"},
		}, &scheduling.CommandContext{Source: "api"})
		require.NoError(t, err)
		fired, err := svc.Trigger(ctx, "default", "nightly", "", &scheduling.CommandContext{Source: "api"})
		require.NoError(t, err)
		require.NotEmpty(t, fired.RunID)

		h := &Console{RunStore: svc, Clock: clock}
		get := func(path string, handler echo.HandlerFunc, params ...string) *httptest.ResponseRecorder {
			e := echo.New()
			rec := httptest.NewRecorder()
			c := e.NewContext(httptest.NewRequest(http.MethodGet, path, nil), rec)
			if len(params) == 2 {
				c.SetParamNames(params[0])
				c.SetParamValues(params[1])
			}
			require.NoError(t, handler(c))
			return rec
		}

		list := get("/waterline/runs", h.Runs)
		require.Equal(t, http.StatusOK, list.Code)
		require.Contains(t, list.Body.String(), fired.RunID)
		require.True(t, strings.Contains(list.Body.String(), "nightly"), "the run names its schedule")

		page := get("/waterline/runs/"+fired.RunID, h.Run, "run_id", fired.RunID)
		require.Equal(t, http.StatusOK, page.Code)
		require.Contains(t, page.Body.String(), fired.RunID)
	})
}
