package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/auth"
	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling/schedtest"
	"github.com/tidelinehq/tideline/web"
)

var t0 = time.Date(2026, 7, 16, 12, 0, 0, 0, time.UTC)

type fixture struct {
	srv    *httptest.Server
	clock  *schedtest.Clock
	tokens map[string]string // role → token
	hits   atomic.Int64
}

// newServer serves the real router over db, with one token per role.
func newServer(t *testing.T, db *bun.DB) *fixture {
	t.Helper()
	f := &fixture{clock: schedtest.NewClock(t0), tokens: map[string]string{}}
	store := &auth.Store{}
	for _, role := range []string{auth.RoleViewer, auth.RoleOperator, auth.RoleAdmin} {
		tok, err := store.AddEphemeral(role+"-bot", role)
		require.NoError(t, err)
		f.tokens[role] = tok
	}
	h := web.NewServer(web.Deps{DB: db, Service: schedtest.Service(db, f.clock), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version: "test", Clock: f.clock, Auth: web.Auth{Store: store}})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) client(t *testing.T, role string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(f.srv.URL, append([]client.Option{client.WithToken(f.tokens[role])}, opts...)...)
	require.NoError(t, err)
	return c
}

func dailySync() apijson.CreateSchedule {
	return apijson.CreateSchedule{
		ScheduleID: "daily-sync",
		Spec:       &apijson.Spec{CronExpressions: []string{"0 2 * * *"}, Timezone: "America/New_York"},
		Action:     apijson.Action{WorkflowType: "sync.Daily", Input: json.RawMessage(`{"full":true}`)},
		MaxRuns:    ptr[int64](10), Queue: ptr("sync"), Labels: map[string]string{"team": "data"},
	}
}

func ptr[T any](v T) *T { return &v }

func collect[T any](t *testing.T, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		require.NoError(t, err)
		out = append(out, v)
	}
	return out
}

func TestScheduleLifecycle(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := context.Background()
		f := newServer(t, db)
		c := f.client(t, auth.RoleAdmin, client.WithNamespace("ops"))

		created, err := c.CreateSchedule(ctx, dailySync())
		require.NoError(t, err)
		require.Equal(t, "ops", created.Namespace)
		require.Equal(t, time.Date(2026, 7, 17, 6, 0, 0, 0, time.UTC), created.NextFireAt.T())
		require.Len(t, created.FutureFireTimes, 5)
		require.Equal(t, "At 02:00 every day (America/New_York)", created.SpecDescription)

		got, err := c.GetSchedule(ctx, "daily-sync")
		require.NoError(t, err)
		require.Equal(t, created.ID, got.ID)
		require.EqualValues(t, 10, *got.RemainingActions)
		require.JSONEq(t, `{"full":true}`, string(got.Action.Input))

		// A dry run reports the diff and writes nothing; null clears.
		patch := apijson.SchedulePatch{Note: ptr("owned by data"), Clear: []string{"max_runs", "queue"}}
		plan, err := c.PlanUpdateSchedule(ctx, "daily-sync", patch)
		require.NoError(t, err)
		require.Equal(t, []string{"max_runs", "queue", "note"}, plan.ChangedFields)
		require.Equal(t, []apijson.FieldChange{{Field: "max_runs", From: "10", To: ""}, {Field: "queue", From: "sync", To: ""},
			{Field: "note", From: "", To: "owned by data"}}, plan.Changes)
		require.Nil(t, plan.Schedule.MaxRuns)
		history := collect(t, c.ScheduleHistory(ctx, "daily-sync", client.HistoryOptions{}))
		require.Len(t, history, 1, "a plan records nothing")

		updated, err := c.UpdateSchedule(ctx, "daily-sync", patch)
		require.NoError(t, err)
		require.Nil(t, updated.MaxRuns)
		require.Nil(t, updated.Queue)
		require.Equal(t, "owned by data", updated.Note)

		until := t0.Add(48 * time.Hour)
		paused, err := c.PauseSchedule(ctx, "daily-sync", client.PauseOptions{Reason: "outage", Until: &until})
		require.NoError(t, err)
		require.Equal(t, "paused", paused.Status)
		require.Equal(t, "outage", *paused.PauseReason)
		require.Equal(t, until, paused.PausedUntil.T())
		require.Equal(t, "admin-bot", *paused.PausedBy)
		_, err = c.PauseSchedule(ctx, "daily-sync", client.PauseOptions{})
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, http.StatusConflict, apiErr.StatusCode)
		require.Equal(t, "schedule_not_active", apiErr.Code)
		require.ErrorIs(t, err, client.ErrConflict)
		require.Equal(t, `schedule_not_active: schedule "daily-sync" is already paused`, err.Error())

		resumed, err := c.ResumeSchedule(ctx, "daily-sync")
		require.NoError(t, err)
		require.Equal(t, "active", resumed.Status)

		trig, err := c.TriggerSchedule(ctx, "daily-sync", "")
		require.NoError(t, err)
		require.Equal(t, "triggered", trig.Outcome)
		require.Regexp(t, `^schedule:daily-sync:manual:[0-9A-Z]{26}$`, *trig.InstanceID)
		firstInstance := *trig.InstanceID
		trig, err = c.TriggerSchedule(ctx, "daily-sync", "")
		require.NoError(t, err)
		require.Equal(t, "skipped", trig.Outcome)
		require.Equal(t, "overlap_policy_skip", *trig.Reason)

		bf, err := c.BackfillSchedule(ctx, "daily-sync", client.BackfillOptions{From: t0.Add(-72 * time.Hour), To: t0, DryRun: true})
		require.NoError(t, err)
		require.Equal(t, "dry_run", bf.Outcome)
		require.Equal(t, 3, bf.Occurrences)

		runs := collect(t, c.ScheduleRuns(ctx, "daily-sync", client.RunListOptions{}))
		require.Len(t, runs, 1)
		require.Equal(t, firstInstance, runs[0].InstanceID)
		detail, err := c.GetRun(ctx, runs[0].RunID)
		require.NoError(t, err)
		require.Equal(t, "pending", detail.Status)
		require.NotEmpty(t, detail.History)
		cancelled, err := c.TerminateRun(ctx, runs[0].RunID, "test")
		require.NoError(t, err)
		require.Equal(t, "terminated", cancelled.Status)
		all := collect(t, c.ListRuns(ctx, client.RunListOptions{ScheduleID: "daily-sync", Statuses: []string{"terminated"}}))
		require.Len(t, all, 1)

		preview, err := c.Preview(ctx, apijson.Spec{CronExpressions: []string{"@daily"}}, t0, 2)
		require.NoError(t, err)
		require.Equal(t, []apijson.Time{apijson.At(t0.Add(12 * time.Hour)), apijson.At(t0.Add(36 * time.Hour))}, preview.FireTimes)

		deleted, err := c.DeleteSchedule(ctx, "daily-sync")
		require.NoError(t, err)
		require.Equal(t, "deleted", deleted.Status)
		_, err = c.GetSchedule(ctx, "daily-sync")
		require.ErrorIs(t, err, client.ErrNotFound)
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, "schedule_not_found", apiErr.Code)

		events := collect(t, c.ScheduleHistory(ctx, "daily-sync", client.HistoryOptions{Limit: 2}))
		types := make([]string, 0, len(events))
		for i, e := range events {
			require.EqualValues(t, i+1, e.Sequence, "every page, in order")
			types = append(types, e.EventType)
		}
		require.Equal(t, []string{"ScheduleCreated", "ScheduleUpdated", "SchedulePaused", "ScheduleResumed",
			"ScheduleTriggered", "ScheduleTriggerSkipped", "ScheduleDeleted"}, types)

		// Another namespace does not see it.
		_, err = f.client(t, auth.RoleAdmin).GetSchedule(ctx, "daily-sync")
		require.ErrorIs(t, err, client.ErrNotFound)
	})
}

func TestPlanCreateAndValidationErrors(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		ctx := context.Background()
		f := newServer(t, db)
		c := f.client(t, auth.RoleAdmin)

		planned, err := c.PlanCreateSchedule(ctx, dailySync())
		require.NoError(t, err)
		require.Equal(t, "daily-sync", planned.ScheduleID)
		require.Equal(t, time.Date(2026, 7, 17, 6, 0, 0, 0, time.UTC), planned.NextFireAt.T())
		_, err = c.GetSchedule(ctx, "daily-sync")
		require.ErrorIs(t, err, client.ErrNotFound, "a dry run creates nothing")

		never := dailySync()
		never.Spec = &apijson.Spec{CronExpressions: []string{"0 0 30 2 *"}}
		_, err = c.PlanCreateSchedule(ctx, never)
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, "spec_never_fires", apiErr.Code)
		require.Equal(t, []string{"spec.cron_expressions[0]"}, sortedKeys(apiErr.Fields))
		require.Contains(t, apiErr.Fields["spec.cron_expressions[0]"], "never fires")

		bad := dailySync()
		bad.Spec = &apijson.Spec{CronExpressions: []string{"* * * * * *"}}
		bad.OverlapPolicy = "sometimes"
		_, err = c.CreateSchedule(ctx, bad)
		require.ErrorIs(t, err, client.ErrInvalid)
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, http.StatusUnprocessableEntity, apiErr.StatusCode)
		require.Equal(t, []string{"overlap_policy", "spec.cron_expressions[0]"}, sortedKeys(apiErr.Fields))
		require.Regexp(t, `^validation_failed: overlap_policy: must be one of .*; spec.cron_expressions\[0\]: .*6 fields`, err.Error())
	})
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestAuthErrors(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	f := newServer(t, db)

	anonymous, err := client.New(f.srv.URL)
	require.NoError(t, err)
	_, err = anonymous.GetSchedule(ctx, "x")
	require.ErrorIs(t, err, client.ErrUnauthorized)
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "unauthorized", apiErr.Code)

	_, err = f.client(t, auth.RoleViewer).CreateSchedule(ctx, dailySync())
	require.ErrorIs(t, err, client.ErrForbidden)
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "forbidden", apiErr.Code)
	require.Contains(t, apiErr.Message, "Your role (viewer) cannot do this")

	_, err = f.client(t, auth.RoleOperator).Tick(ctx, 0)
	require.ErrorIs(t, err, client.ErrForbidden, "tick needs admin")
	rows, err := f.client(t, auth.RoleAdmin).Tick(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, rows)
}

func TestListPagesLazily(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	f := newServer(t, db)
	c := f.client(t, auth.RoleAdmin)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		in := dailySync()
		in.ScheduleID = id
		_, err := c.CreateSchedule(ctx, in)
		require.NoError(t, err)
	}
	var ids []string
	for s, err := range c.ListSchedules(ctx, client.ListSchedulesOptions{Limit: 2}) {
		require.NoError(t, err)
		ids = append(ids, s.ScheduleID)
	}
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, ids)

	before := f.hits.Load()
	for s, err := range c.ListSchedules(ctx, client.ListSchedulesOptions{Limit: 2}) {
		require.NoError(t, err)
		require.Equal(t, "a", s.ScheduleID)
		break
	}
	require.EqualValues(t, 1, f.hits.Load()-before, "stopping early fetches no further page")

	var failures int
	for _, err := range client.Must(client.New(f.srv.URL)).ListSchedules(ctx, client.ListSchedulesOptions{}) {
		require.ErrorIs(t, err, client.ErrUnauthorized)
		failures++
	}
	require.Equal(t, 1, failures, "an error is yielded once and ends the sequence")
}

func TestRetriesOnlyIdempotentCalls(t *testing.T) {
	t.Parallel()
	db := dbtest.SQLite(t)
	ctx := context.Background()
	f := newServer(t, db)
	var calls atomic.Int64
	var failNext atomic.Int64
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if failNext.Add(-1) >= 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("upstream restarting"))
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, f.srv.URL+r.URL.RequestURI(), r.Body)
		req.Header = r.Header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(flaky.Close)
	var waits []time.Duration
	c, err := client.New(flaky.URL, client.WithToken(f.tokens[auth.RoleAdmin]),
		client.WithRetries(3, func(n int) time.Duration { waits = append(waits, time.Duration(n)); return 0 }))
	require.NoError(t, err)
	_, err = c.CreateSchedule(ctx, dailySync())
	require.NoError(t, err)

	failNext.Store(2)
	calls.Store(0)
	got, err := c.GetSchedule(ctx, "daily-sync")
	require.NoError(t, err, "a GET is retried past two 503s")
	require.Equal(t, "daily-sync", got.ScheduleID)
	require.EqualValues(t, 3, calls.Load())
	require.Equal(t, []time.Duration{1, 2}, waits)

	failNext.Store(1)
	calls.Store(0)
	_, err = c.TriggerSchedule(ctx, "daily-sync", "")
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr, "a trigger is not retried: it could start a run twice")
	require.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
	require.Equal(t, "http_503", apiErr.Code)
	require.Equal(t, "Service Unavailable: upstream restarting", apiErr.Message)
	require.EqualValues(t, 1, calls.Load())

	failNext.Store(5)
	calls.Store(0)
	_, err = c.GetSchedule(ctx, "daily-sync")
	require.ErrorAs(t, err, &apiErr)
	require.EqualValues(t, 3, calls.Load(), "at most the configured attempts")
}

func TestNewRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://", "http://h/?q=1"} {
		_, err := client.New(u)
		require.Error(t, err, u)
	}
	c, err := client.New("http://127.0.0.1:1/prefix/")
	require.NoError(t, err)
	_, err = c.GetSchedule(context.Background(), "x")
	require.Error(t, err)
	var apiErr *client.Error
	require.False(t, errors.As(err, &apiErr), "a refused connection is not an API error")
	require.Contains(t, err.Error(), "GET http://127.0.0.1:1/prefix/waterline/api/v2/schedules/x")
}
