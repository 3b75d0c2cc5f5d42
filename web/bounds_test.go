package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
)

// TestAPIAtAndBoundsThenEnded: the API keeps start_at/end_at/at as
// written, refuses bad ones field by field, and shows "ended": true once
// the last occurrence has fired (CONTRACT §18).
func TestAPIAtAndBoundsThenEnded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newAPI(t, db, "")
		s := f.must(201, "POST", v2+"/schedules", `{"schedule_id":"once","spec":{"at":["2026-07-16T13:00:00Z"],
			"start_at":"2026-07-16T00:00:00Z","end_at":"2026-07-17T00:00:00Z"},"action":{"workflow_type":"w"}}`)
		spec := s["spec"].(map[string]any)
		require.Equal(t, []any{"2026-07-16T13:00:00Z"}, spec["at"])
		require.Equal(t, "2026-07-16T00:00:00Z", spec["start_at"])
		require.Equal(t, "2026-07-17T00:00:00Z", spec["end_at"])
		require.Equal(t, false, s["ended"])
		require.Equal(t, "2026-07-16T13:00:00.000000Z", s["next_fire_at"])

		res := f.do("POST", v2+"/schedules", `{"schedule_id":"bad","spec":{"at":["2026-07-16T13:00:00Z","later"],"end_at":"2026-07-17"},"action":{"workflow_type":"w"}}`)
		require.Equal(t, 422, res.Status, res.Raw)
		code, fields := errorOf(t, res.Body)
		require.Equal(t, "validation_failed", code)
		require.Contains(t, fields, "spec.at[1]")
		require.Contains(t, fields, "spec.end_at")

		res = f.do("POST", v2+"/schedules", `{"schedule_id":"past","spec":{"at":["2026-07-16T11:00:00Z"]},"action":{"workflow_type":"w"}}`)
		require.Equal(t, 422, res.Status, res.Raw)
		code, _ = errorOf(t, res.Body)
		require.Equal(t, "spec_never_fires", code)

		f.clock.Set(time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC))
		_, err := schedtest.Service(db, f.clock).Tick(context.Background(), 100)
		require.NoError(t, err)
		s = f.must(200, "GET", v2+"/schedules/once", "")
		require.Equal(t, true, s["ended"])
		require.Nil(t, s["next_fire_at"])
		require.Equal(t, "active", s["status"])
		require.Equal(t, "Once at 2026-07-16T13:00:00Z; from 2026-07-16T00:00:00Z until 2026-07-17T00:00:00Z", s["spec_description"])
	})
}

// TestConsoleAtAndEnded: the edit form shows a schedule's at times and
// bounds, saving it untouched keeps them, a bad at line is an error on its
// input naming the line, and an ended schedule carries the Ended badge in
// the registry and on its page.
func TestConsoleAtAndEnded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		c := newConsole(t, db, "")
		c.create("default", `{"schedule_id":"once","spec":{"at":["2026-07-16T13:00:00Z","2026-07-16T14:00:00Z"],
			"end_at":"2026-07-17T00:00:00Z"},"action":{"workflow_type":"w"}}`)

		form := c.page200("/waterline/schedules/once/edit").Find(tid("schedule-form"))
		values := formValues(form)
		require.Equal(t, "2026-07-16T13:00:00Z\n2026-07-16T14:00:00Z", values.Get("at"))
		require.Equal(t, "2026-07-17T00:00:00Z", values.Get("end_at"))
		require.Equal(t, "", values.Get("start_at"))
		p := c.post("/waterline/schedules/once/edit", values)
		require.Equal(t, "/waterline/schedules/once", seeOther(t, p))
		require.Contains(t, textOf(c.page200("/waterline/schedules/once").Find(tid("flash"))), "Nothing to save")

		bad := formValues(form)
		bad.Set("at", "2026-07-16T13:00:00Z\n\nsoon")
		p = c.post("/waterline/schedules/once/edit", bad)
		require.Equal(t, 422, p.Status)
		require.Contains(t, fieldError(p.Doc, "at"), `line 3: "soon" is not an RFC 3339 time`)

		require.Zero(t, c.page200("/waterline/schedules/once").Find(`[data-status="ended"]`).Length())
		for _, at := range []time.Time{time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC), time.Date(2026, 7, 16, 14, 0, 0, 0, time.UTC)} {
			c.api.clock.Set(at)
			_, err := schedtest.Service(db, c.api.clock).Tick(context.Background(), 100)
			require.NoError(t, err)
		}
		require.NotZero(t, c.page200("/waterline/schedules/once").Find(tid("facts-state")+` [data-status="ended"]`).Length())
		require.NotZero(t, c.page200("/waterline/schedules").Find(`[data-status="ended"]`).Length())
	})
}
