package scheduling_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/scheduling"
)

// Issue 36, finding 8: notifier changes recorded no actor. Every create,
// update (URL, events, secret set or rotated) and delete is an event of the
// notifier's trail with who made it; no secret, and no URL path (often a
// credential itself), is ever stored in it; the trail outlives the notifier.
func TestNotifierChangesAreAudited(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		alice := &scheduling.CommandContext{Source: "api", Actor: "alice", RequestID: "req-1"}
		bob := &scheduling.CommandContext{Source: "ui", Actor: "bob"}
		url := func(s string) *string { return &s }
		given := "given-secret-0123456789"
		_, err := f.svc.CreateNotifier(f.ctx, "default", scheduling.NotifierInput{Name: "ops", URL: url("https://hooks.example.com/T000/B000/XXXXsecretpath"),
			Events: []string{"run_failed"}, Secret: &given}, alice)
		require.NoError(t, err)
		_, err = f.svc.UpdateNotifier(f.ctx, "default", scheduling.NotifierInput{Name: "ops", URL: url("https://hooks.example.com/T000/B000/YYYYotherpath")}, bob)
		require.NoError(t, err)
		_, err = f.svc.UpdateNotifier(f.ctx, "default", scheduling.NotifierInput{Name: "ops", URL: url("https://alerts.example.net/x"), Events: []string{"run_failed", "fire_late"}}, bob)
		require.NoError(t, err)
		rotated, err := f.svc.UpdateNotifier(f.ctx, "default", scheduling.NotifierInput{Name: "ops", RotateSecret: true}, alice)
		require.NoError(t, err)
		newSecret := "another-secret-9876543210"
		_, err = f.svc.UpdateNotifier(f.ctx, "default", scheduling.NotifierInput{Name: "ops", Secret: &newSecret}, alice)
		require.NoError(t, err)
		_, err = f.svc.UpdateNotifier(f.ctx, "default", scheduling.NotifierInput{Name: "ops", Events: []string{"run_failed", "fire_late"}}, bob)
		require.NoError(t, err, "a change that changes nothing")
		require.NoError(t, f.svc.DeleteNotifier(f.ctx, "default", "ops", bob))

		page, err := f.svc.NotifierHistory(f.ctx, "default", "ops", "", 0)
		require.NoError(t, err, "the trail outlives the notifier")
		type ev struct {
			Type, Actor, Source string
			Payload             map[string]any
		}
		var got []ev
		for _, e := range page.Events {
			var p map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			got = append(got, ev{e.EventType, e.Actor, e.Source, p})
			for _, secret := range []string{given, rotated.Secret, newSecret, "XXXXsecretpath", "YYYYotherpath"} {
				require.NotContains(t, string(e.Payload), secret, "%s stores no secret", e.EventType)
			}
		}
		require.Equal(t, []ev{
			{"NotifierCreated", "alice", "api", map[string]any{"url_origin": "https://hooks.example.com", "format": "json", "events": []any{"run_failed"}, "label_selector": map[string]any{}, "secret": "given"}},
			{"NotifierUpdated", "bob", "ui", map[string]any{"changed": []any{"url"}, "url_origin": map[string]any{"from": "https://hooks.example.com", "to": "https://hooks.example.com"}}},
			{"NotifierUpdated", "bob", "ui", map[string]any{"changed": []any{"url", "events"},
				"url_origin": map[string]any{"from": "https://hooks.example.com", "to": "https://alerts.example.net"},
				"events":     map[string]any{"from": []any{"run_failed"}, "to": []any{"run_failed", "fire_late"}}}},
			{"NotifierUpdated", "alice", "api", map[string]any{"changed": []any{"secret"}, "secret": "rotated"}},
			{"NotifierUpdated", "alice", "api", map[string]any{"changed": []any{"secret"}, "secret": "set"}},
			{"NotifierDeleted", "bob", "ui", map[string]any{"url_origin": "https://alerts.example.net", "format": "json", "events": []any{"run_failed", "fire_late"}, "label_selector": map[string]any{}}},
		}, got)
		require.Equal(t, "req-1", page.Events[0].RequestID)

		// Paging by cursor.
		first, err := f.svc.NotifierHistory(f.ctx, "default", "ops", "", 4)
		require.NoError(t, err)
		require.True(t, first.HasMore)
		rest, err := f.svc.NotifierHistory(f.ctx, "default", "ops", first.NextCursor, 4)
		require.NoError(t, err)
		require.False(t, rest.HasMore)
		require.Len(t, rest.Events, 2)

		_, err = f.svc.NotifierHistory(f.ctx, "default", "never", "", 0)
		require.ErrorIs(t, err, scheduling.ErrNotFound)
		_, err = f.svc.NotifierHistory(f.ctx, "other", "ops", "", 0)
		require.ErrorIs(t, err, scheduling.ErrNotFound, "another namespace's trail is not this one's")

		var raw []string
		require.NoError(t, db.NewSelect().Table("object_audit_events").ColumnExpr("CAST(payload AS TEXT)").Scan(f.ctx, &raw))
		require.NotContains(t, strings.Join(raw, "\n"), newSecret)
	})
}
