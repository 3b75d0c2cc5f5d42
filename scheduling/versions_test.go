package scheduling_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// definition is everything a version defines, in the diff's spelling plus
// the raw spec and action (FieldValues canonicalises some spellings).
func definition(t *testing.T, s *models.Schedule) map[string]string {
	t.Helper()
	out := scheduling.FieldValues(s)
	spec, err := json.Marshal(s.Spec)
	require.NoError(t, err)
	out["spec"] = string(spec)
	out["overlap_policy"] = s.OverlapPolicy
	return out
}

func (f *fixture) versions(id string) []scheduling.Version {
	f.t.Helper()
	v, err := f.svc.Versions(f.ctx, "default", id)
	require.NoError(f.t, err)
	return v
}

// Every create and update is a version whose definition is the schedule as
// that change left it, whatever the surface, with fires in between.
func TestVersionsReconstructEveryDefinition(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("v", "* * * * *")
		in.Labels = map[string]string{"team": "billing"}
		in.Note = "first"
		_, err := f.svc.Create(f.ctx, in, &scheduling.CommandContext{Source: "apply", Actor: "ci"})
		require.NoError(t, err)
		want := []map[string]string{definition(t, f.get("v"))}
		sources := []string{"apply"}

		edits := []struct {
			cc *scheduling.CommandContext
			in scheduling.UpdateInput
		}{
			{&scheduling.CommandContext{Source: "api", Actor: "alice"}, scheduling.UpdateInput{Note: ptr("second"), JitterSeconds: ptr(30)}},
			{&scheduling.CommandContext{Source: "ui", Actor: "bob"}, scheduling.UpdateInput{
				Spec:   &models.Spec{CronExpressions: []string{"0 9 * * 1-5"}, Timezone: "Europe/Paris"},
				Queue:  scheduling.Nullable[string]{Set: true, Value: ptr("fast")},
				Labels: &map[string]string{"team": "billing", "tier": "1"}}},
			{&scheduling.CommandContext{Source: "cli", Actor: "carol"}, scheduling.UpdateInput{
				Action:  &models.Action{WorkflowType: "invoice-close", Input: json.RawMessage(`{"n": 12345678901234567890}`)},
				MaxRuns: scheduling.Nullable[int64]{Set: true, Value: ptr(int64(100))}}},
			{&scheduling.CommandContext{Source: "apply", Actor: "ci"}, scheduling.UpdateInput{
				OverlapPolicy: ptr("buffer_one"), Queue: scheduling.Nullable[string]{Set: true},
				PauseAfterFailures: scheduling.Nullable[int]{Set: true, Value: ptr(3)}}},
		}
		for i, e := range edits {
			f.clock.Advance(time.Duration(i+1) * time.Hour)
			_, err := f.svc.Tick(f.ctx, 10) // fires between the versions
			require.NoError(t, err)
			_, err = f.svc.Update(f.ctx, "default", "v", e.in, e.cc)
			require.NoError(t, err)
			want = append(want, definition(t, f.get("v")))
			sources = append(sources, e.cc.Source)
		}
		// A revert is a version too.
		_, err = f.svc.Revert(f.ctx, "default", "v", 2, &scheduling.CommandContext{Source: "ui", Actor: "dave"})
		require.NoError(t, err)
		want = append(want, definition(t, f.get("v")))
		require.Equal(t, want[1], want[len(want)-1], "the revert brought version 2 back")

		versions := f.versions("v")
		require.Len(t, versions, len(want))
		for i, v := range versions {
			require.Equal(t, int64(i+1), v.N)
			require.Empty(t, v.Unrecorded, "version %d is recorded whole", v.N)
			require.Equal(t, want[i], definition(t, v.Schedule), "version %d", v.N)
		}
		got := make([]string, len(versions))
		for i, v := range versions {
			got[i] = v.Source
		}
		require.Equal(t, []string{"apply", "api", "console", "cli", "apply", "revert"}, got)
		require.Equal(t, []string{}, versions[0].ChangedFields)
		require.Equal(t, []string{"spec", "queue", "labels"}, versions[2].ChangedFields)
		require.Equal(t, "bob", versions[2].Author())
		require.Equal(t, ptr(int64(2)), versions[5].RevertedTo)
		require.Greater(t, versions[5].Sequence, int64(6), "fires sit between the versions in the stream")

		one, err := f.svc.Version(f.ctx, "default", "v", 4)
		require.NoError(t, err)
		require.Equal(t, want[3], definition(t, one.Schedule))
		_, err = f.svc.Version(f.ctx, "default", "v", 7)
		var nf *scheduling.NotFoundError
		require.ErrorAs(t, err, &nf)
		require.Equal(t, "version_not_found", nf.Code)
	})
}

func TestRevertOfARevertAndRefusals(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		f.create(cronInput("r", "0 * * * *"))
		v1 := definition(t, f.get("r"))
		_, err := f.svc.Update(f.ctx, "default", "r", scheduling.UpdateInput{Spec: &models.Spec{CronExpressions: []string{"*/5 * * * *"}}, Note: ptr("faster")}, nil)
		require.NoError(t, err)
		v2 := definition(t, f.get("r"))

		var conflict *scheduling.ConflictError
		_, err = f.svc.Revert(f.ctx, "default", "r", 2, nil)
		require.ErrorAs(t, err, &conflict, "version 2 is what the schedule is")
		require.Equal(t, "no_change", conflict.Code)
		require.Len(t, f.versions("r"), 2, "a refused revert records nothing")

		plan, err := f.svc.PlanRevert(f.ctx, "default", "r", 1)
		require.NoError(t, err)
		require.Equal(t, []string{"spec", "note"}, plan.Plan.ChangedFields)
		require.Len(t, plan.FireTimesBefore, 5)
		require.Equal(t, t0.Add(5*time.Minute), plan.FireTimesBefore[0])
		require.Equal(t, t0.Add(time.Hour), plan.FireTimesAfter[0])
		require.Equal(t, v2, definition(t, f.get("r")), "a plan writes nothing")

		s, err := f.svc.Revert(f.ctx, "default", "r", 1, nil)
		require.NoError(t, err)
		require.Equal(t, v1, definition(t, s))
		require.Equal(t, t0.Add(time.Hour), s.NextFireAt.UTC(), "the next fire follows the reverted spec")
		// Revert the revert: version 3 was a revert to 1; going to 2 undoes it.
		s, err = f.svc.Revert(f.ctx, "default", "r", 2, nil)
		require.NoError(t, err)
		require.Equal(t, v2, definition(t, s))
		versions := f.versions("r")
		require.Len(t, versions, 4)
		require.Equal(t, ptr(int64(1)), versions[2].RevertedTo)
		require.Equal(t, ptr(int64(2)), versions[3].RevertedTo)
		events := f.events("r")
		require.InDelta(t, 2, payload(t, events[len(events)-1])["reverted_to"], 0)

		// Reverting to version 3 (itself a revert) is reverting to its definition.
		s, err = f.svc.Revert(f.ctx, "default", "r", 3, nil)
		require.NoError(t, err)
		require.Equal(t, v1, definition(t, s))

		diff, err := f.svc.DiffVersions(f.ctx, "default", "r", 1, 2)
		require.NoError(t, err)
		require.Equal(t, []scheduling.FieldChange{{Field: "cron_expressions", From: "0 * * * *", To: "*/5 * * * *"}, {Field: "note", From: "", To: "faster"}}, diff.Changes)
		require.Len(t, diff.Fields, len(scheduling.DiffFields))

		_, err = f.svc.Revert(f.ctx, "default", "r", 9, nil)
		var nf *scheduling.NotFoundError
		require.ErrorAs(t, err, &nf)
		require.Equal(t, "version_not_found", nf.Code)
		_, err = f.svc.Delete(f.ctx, "default", "r", nil)
		require.NoError(t, err)
		_, err = f.svc.Revert(f.ctx, "default", "r", 2, nil)
		require.ErrorAs(t, err, &conflict)
		require.Equal(t, "schedule_deleted", conflict.Code)
		require.Len(t, f.versions("r"), 5, "a deleted schedule's versions stay readable")
	})
}

// Events recorded before versions hold spec, action and policy only: the
// other fields are recovered where the stream proves them and reported
// unrecorded where an old update overwrote them.
func TestVersionsOfEventsRecordedBeforeVersions(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		in := cronInput("old", "0 * * * *")
		in.Note = "original"
		in.Labels = map[string]string{"team": "a"}
		created := f.create(in)
		v1 := definition(t, created)
		_, err := f.svc.Update(f.ctx, "default", "old", scheduling.UpdateInput{Note: ptr("edited")}, nil)
		require.NoError(t, err)
		_, err = f.svc.Update(f.ctx, "default", "old", scheduling.UpdateInput{Spec: &models.Spec{CronExpressions: []string{"0 3 * * *"}}}, nil)
		require.NoError(t, err)
		v3 := definition(t, f.get("old"))
		// What the stream held before versions: no settings.
		var events []models.ScheduleEvent
		require.NoError(t, db.NewSelect().Model(&events).Where("workflow_schedule_id = ?", created.ID).Scan(f.ctx))
		for _, e := range events {
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(e.Payload, &m))
			delete(m, "settings")
			raw, err := json.Marshal(m)
			require.NoError(t, err)
			_, err = db.NewUpdate().Model((*models.ScheduleEvent)(nil)).Set("payload = ?", string(raw)).Where("id = ?", e.ID).Exec(f.ctx)
			require.NoError(t, err)
		}
		versions := f.versions("old")
		require.Len(t, versions, 3)
		require.Equal(t, []string{"note"}, versions[0].Unrecorded, "the note was overwritten by an old update")
		require.Empty(t, versions[1].Unrecorded, "the current schedule proves the fields no later update changed")
		require.Empty(t, versions[2].Unrecorded)
		for k, want := range v1 {
			if k != "note" {
				require.Equal(t, want, definition(t, versions[0].Schedule)[k], "version 1's %s", k)
			}
		}
		require.Equal(t, "edited", versions[1].Schedule.Note)
		require.Equal(t, v3, definition(t, versions[2].Schedule))
		diff, err := f.svc.DiffVersions(f.ctx, "default", "old", 1, 2)
		require.NoError(t, err)
		require.Empty(t, diff.Changes, "only the unrecorded note differed")
		for _, c := range diff.Fields {
			require.Equal(t, c.Field == "note", c.Unrecorded, c.Field)
		}

		// A version after the upgrade is recorded whole; the value its
		// update overwrote is lost for the old versions.
		_, err = f.svc.Update(f.ctx, "default", "old", scheduling.UpdateInput{JitterSeconds: ptr(30)}, nil)
		require.NoError(t, err)
		v4 := definition(t, f.get("old"))
		versions = f.versions("old")
		require.Len(t, versions, 4)
		require.Equal(t, []string{"jitter_seconds", "note"}, versions[0].Unrecorded)
		require.Equal(t, []string{"jitter_seconds"}, versions[2].Unrecorded)
		require.Empty(t, versions[3].Unrecorded)
		require.Equal(t, v4, definition(t, versions[3].Schedule))

		// Reverting to version 1 restores what is recorded and keeps the rest.
		s, err := f.svc.Revert(f.ctx, "default", "old", 1, nil)
		require.NoError(t, err)
		require.Equal(t, []string{"0 * * * *"}, s.Spec.CronExpressions)
		require.Equal(t, map[string]string{"team": "a"}, s.Labels)
		require.Equal(t, "edited", s.Note, "an unrecorded field is left as it is")
		require.Equal(t, 30, s.JitterSeconds)
	})
}

func TestDriftFromTheLastApply(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		apply := &scheduling.CommandContext{Source: "apply", Actor: "ci"}
		managed := map[string]string{scheduling.ManagedByLabel: scheduling.ManagedByApply}
		for _, id := range []string{"kept", "edited", "reapplied"} {
			in := cronInput(id, "0 * * * *")
			in.Labels = managed
			_, err := f.svc.Create(f.ctx, in, apply)
			require.NoError(t, err)
		}
		f.create(cronInput("handmade", "0 * * * *"))
		_, err := f.svc.Update(f.ctx, "default", "handmade", scheduling.UpdateInput{Note: ptr("x")}, nil)
		require.NoError(t, err)
		for _, id := range []string{"edited", "reapplied"} {
			_, err := f.svc.Update(f.ctx, "default", id, scheduling.UpdateInput{Note: ptr("hotfix")}, &scheduling.CommandContext{Source: "ui", Actor: "bob"})
			require.NoError(t, err)
		}
		_, err = f.svc.Update(f.ctx, "default", "reapplied", scheduling.UpdateInput{Note: ptr("")}, apply)
		require.NoError(t, err)

		drifted, drift, err := f.svc.Drifted(f.ctx, "default")
		require.NoError(t, err)
		require.Len(t, drifted, 1)
		require.Equal(t, "edited", drifted[0].ScheduleID)
		d := drift[drifted[0].ID]
		require.Equal(t, scheduling.Drift{Drifted: true, LastApply: 1, Latest: 2, LatestSource: "console", LatestAuthor: "bob", LatestRecorded: d.LatestRecorded}, d)

		all := []models.Schedule{*f.get("kept"), *f.get("reapplied"), *f.get("handmade")}
		byID, err := f.svc.DriftOf(f.ctx, all)
		require.NoError(t, err)
		require.False(t, byID[all[0].ID].Drifted)
		require.Equal(t, int64(3), byID[all[1].ID].LastApply)
		require.False(t, byID[all[1].ID].Drifted)
		require.NotContains(t, byID, all[2].ID, "a schedule apply does not manage has no drift")
	})
}

// Concurrent edits and reverts of one schedule on PostgreSQL: the stream
// stays gap-free and every version is the schedule its change left.
func TestConcurrentRevertsAndEditsKeepAConsistentStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t, dbtest.Postgres(t))
	f.create(cronInput("busy", "0 * * * *"))
	for i := range 3 {
		_, err := f.svc.Update(f.ctx, "default", "busy", scheduling.UpdateInput{Note: ptr(fmt.Sprintf("seed %d", i))}, nil)
		require.NoError(t, err)
	}
	var mu sync.Mutex
	after := map[int64]map[string]string{} // sequence → the schedule its change left
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 6 {
		wg.Go(func() {
			for i := range 8 {
				var s *models.Schedule
				var err error
				if (w+i)%2 == 0 {
					s, err = f.svc.Revert(f.ctx, "default", "busy", int64(1+(w+i)%4), &scheduling.CommandContext{Source: "api"})
				} else {
					s, err = f.svc.Update(f.ctx, "default", "busy", scheduling.UpdateInput{
						Note: ptr(fmt.Sprintf("w%d-%d", w, i)), JitterSeconds: ptr(w + i)}, &scheduling.CommandContext{Source: "ui"})
				}
				var conflict *scheduling.ConflictError
				if err != nil && !(errors.As(err, &conflict) && conflict.Code == "no_change") {
					errs <- err
					return
				}
				if err == nil {
					mu.Lock()
					after[s.LastSequence] = definition(t, s)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	events := f.events("busy")
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Sequence, "gap-free")
	}
	versions := f.versions("busy")
	require.Len(t, versions, 4+len(after))
	for _, v := range versions[4:] {
		want, ok := after[v.Sequence]
		require.True(t, ok, "version %d (event %d) was written by one of the writers", v.N, v.Sequence)
		require.Equal(t, want, definition(t, v.Schedule), "version %d", v.N)
	}
	require.Equal(t, definition(t, f.get("busy")), definition(t, versions[len(versions)-1].Schedule))
}
