package scheduling_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/scheduling"
)

// The audit contract (docs/CONTRACT.md, "Audit events"): per event type,
// the keys always present, then the keys present only when they apply.
var contract = map[string]struct{ required, optional []string }{
	scheduling.EventScheduleCreated: {required: []string{"spec", "action", "overlap_policy", "next_fire_at"}, optional: []string{"settings"}},
	scheduling.EventSchedulePaused:  {required: []string{"paused_at"}, optional: []string{"reason", "paused_until"}},
	scheduling.EventScheduleResumed: {required: []string{"next_fire_at"}, optional: []string{"paused_until"}},
	scheduling.EventScheduleUpdated: {required: []string{"changed_fields", "spec", "action", "overlap_policy", "next_fire_at"},
		optional: []string{"settings", "reverted_to"}},
	scheduling.EventScheduleTriggered: {required: []string{"workflow_instance_id", "workflow_run_id", "outcome", "effective_overlap_policy", "trigger_number", "occurrence_time"}},
	scheduling.EventScheduleTriggerSkipped: {required: []string{"reason", "skipped_trigger_count", "last_skipped_at"},
		optional: []string{"occurrence_time", "missed_count", "first_missed_at", "last_missed_at"}},
	scheduling.EventScheduleDeleted: {required: []string{"reason", "deleted_at"}},
}

// Every payload struct writes exactly the contract's keys: the required
// ones always, the optional ones (and command_context) only when set.
func TestPayloadsFollowTheContract(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 7, 16, 13, 0, 0, 0, time.UTC)
	i := scheduling.InstantOf(&at)
	cc := scheduling.Recorded{CommandContext: &scheduling.CommandContext{Source: "api"}}
	cases := []struct{ bare, full scheduling.Payload }{
		{&scheduling.CreatedPayload{}, &scheduling.CreatedPayload{Settings: &scheduling.Settings{}, Recorded: cc}},
		{&scheduling.PausedPayload{}, &scheduling.PausedPayload{Reason: "r", PausedUntil: i, Recorded: cc}},
		{&scheduling.ResumedPayload{}, &scheduling.ResumedPayload{PausedUntil: i, Recorded: cc}},
		{&scheduling.UpdatedPayload{}, &scheduling.UpdatedPayload{Settings: &scheduling.Settings{}, RevertedTo: ptr(int64(2)), Recorded: cc}},
		{&scheduling.TriggeredPayload{}, &scheduling.TriggeredPayload{Recorded: cc}},
		{&scheduling.SkippedPayload{}, &scheduling.SkippedPayload{OccurrenceTime: i, MissedCount: 2, FirstMissedAt: i, LastMissedAt: i, Recorded: cc}},
		{&scheduling.DeletedPayload{}, &scheduling.DeletedPayload{Recorded: cc}},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		typ := c.bare.EventType()
		seen[typ] = true
		want := contract[typ]
		require.NotEmpty(t, want.required, "%s is in the contract", typ)
		require.ElementsMatch(t, want.required, keys(t, c.bare), "%s without optional keys", typ)
		require.ElementsMatch(t, append(slices.Clone(want.required), append(want.optional, "command_context")...), keys(t, c.full), "%s with every key", typ)

		// What is written reads back as the same struct.
		raw, err := json.Marshal(c.full)
		require.NoError(t, err)
		back, err := scheduling.DecodePayload(typ, raw)
		require.NoError(t, err)
		require.Equal(t, c.full, back, typ)
		require.Equal(t, "api", back.Context().Source, typ)
	}
	require.Len(t, seen, len(contract), "a payload struct per event type")
	require.ElementsMatch(t, scheduling.EventTypes, func() []string {
		var out []string
		for k := range contract {
			out = append(out, k)
		}
		return out
	}())
	_, err := scheduling.DecodePayload("ScheduleRenamed", []byte(`{}`))
	require.Error(t, err, "an unknown event type")
}

func keys(t *testing.T, p scheduling.Payload) []string {
	t.Helper()
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
