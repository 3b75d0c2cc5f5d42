package scheduling_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

func TestPlanUpdateReportsChangesAndWritesNothing(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("plan", "0 * * * *")
		in.Labels = map[string]string{"team": "billing"}
		f.create(in)
		before := f.get("plan")

		plan, err := f.svc.PlanUpdate(f.ctx, "default", "plan", scheduling.UpdateInput{
			Spec:   &models.Spec{CronExpressions: []string{"0 9 * * *"}, Timezone: "Asia/Kolkata"},
			Action: &models.Action{WorkflowType: "invoice-sync", Input: json.RawMessage(`{ "region" : "eu" }`)},
			Labels: &map[string]string{"team": "billing", "tier": "1"},
			Queue:  scheduling.Nullable[string]{Set: true, Value: ptr("fast")},
		})
		require.NoError(t, err)
		require.Equal(t, []string{"spec", "queue", "labels"}, plan.ChangedFields, "the same input JSON in another spelling is no change")
		require.Equal(t, []scheduling.FieldChange{
			{Field: "cron_expressions", From: "0 * * * *", To: "0 9 * * *"},
			{Field: "timezone", From: "UTC", To: "Asia/Kolkata"},
			{Field: "queue", From: "", To: "fast"},
			{Field: "labels", From: "team=billing", To: "team=billing, tier=1"},
		}, plan.Changes)
		require.Equal(t, time.Date(2026, 7, 17, 3, 30, 0, 0, time.UTC), plan.Schedule.NextFireAt.UTC())

		after := f.get("plan")
		require.Equal(t, before.Spec, after.Spec, "a plan writes nothing")
		require.Equal(t, before.Labels, after.Labels)
		require.Len(t, f.events("plan"), 1)

		plan, err = f.svc.PlanUpdate(f.ctx, "default", "plan", scheduling.UpdateInput{Labels: &map[string]string{"team": "billing"}})
		require.NoError(t, err)
		require.Empty(t, plan.ChangedFields)
		require.Empty(t, plan.Changes)

		_, err = f.svc.PlanUpdate(f.ctx, "default", "plan", scheduling.UpdateInput{Spec: &models.Spec{CronExpressions: []string{"0 0 30 2 *"}}})
		var verr *scheduling.ValidationError
		require.ErrorAs(t, err, &verr)
		require.Equal(t, "spec_never_fires", verr.Code)

		// The real update records exactly the planned fields.
		_, err = f.svc.Update(f.ctx, "default", "plan", scheduling.UpdateInput{
			Spec:   &models.Spec{CronExpressions: []string{"0 9 * * *"}, Timezone: "Asia/Kolkata"},
			Labels: &map[string]string{"team": "billing", "tier": "1"},
		}, nil)
		require.NoError(t, err)
		events := f.events("plan")
		require.Equal(t, []any{"spec", "labels"}, payload(t, events[len(events)-1])["changed_fields"])

		_, err = f.svc.Delete(f.ctx, "default", "plan", nil)
		require.NoError(t, err)
		_, err = f.svc.PlanUpdate(f.ctx, "default", "plan", scheduling.UpdateInput{Note: ptr("x")})
		var conflict *scheduling.ConflictError
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, "schedule_deleted", conflict.Code)
	})
}

func TestPlanCreateValidatesLikeCreate(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("new", "0 2 * * *")
		in.MaxRuns = ptr[int64](5)
		sch, err := f.svc.PlanCreate(f.ctx, in)
		require.NoError(t, err)
		require.Equal(t, time.Date(2026, 7, 17, 2, 0, 0, 0, time.UTC), sch.NextFireAt.UTC())
		require.EqualValues(t, 5, *sch.RemainingActions)
		_, err = f.svc.Get(f.ctx, "default", "new")
		require.ErrorIs(t, err, scheduling.ErrNotFound, "a plan writes nothing")

		bad := cronInput("bad id!", "* * * * * *")
		bad.OverlapPolicy = "sometimes"
		bad.MaxRuns = ptr[int64](0)
		_, err = f.svc.PlanCreate(f.ctx, bad)
		var verr *scheduling.ValidationError
		require.ErrorAs(t, err, &verr)
		_, createErr := f.svc.Create(f.ctx, bad, nil)
		var createVerr *scheduling.ValidationError
		require.ErrorAs(t, createErr, &createVerr)
		require.Equal(t, createVerr.Fields, verr.Fields, "the same messages as Create")

		_, err = f.svc.PlanCreate(f.ctx, cronInput("never", "0 0 30 2 *"))
		require.ErrorAs(t, err, &verr)
		require.Equal(t, "spec_never_fires", verr.Code)

		f.create(cronInput("taken", "@daily"))
		_, err = f.svc.Delete(f.ctx, "default", "taken", nil)
		require.NoError(t, err)
		_, err = f.svc.PlanCreate(f.ctx, cronInput("taken", "@daily"))
		var conflict *scheduling.ConflictError
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, "schedule_already_exists", conflict.Code)
	})
}
