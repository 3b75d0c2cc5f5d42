package scheduling

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/models"
)

// The overlap decision as a table: state in, outcome out (CONTRACT §4).
func TestDecideFire(t *testing.T) {
	t.Parallel()
	running, pending, done := models.RunRunning, models.RunPending, models.RunCompleted
	none, some := int64(0), int64(2)
	start := fireDecision{action: actStart}
	skip := func(reason string) fireDecision { return fireDecision{action: actSkip, reason: reason} }
	buffer := fireDecision{action: actBuffer}
	active := models.StatusActive
	cases := []struct {
		name string
		st   fireState
		want fireDecision
	}{
		{"idle skip starts", fireState{kind: kindScheduled, policy: OverlapSkip, status: active}, start},
		{"finished run skip starts", fireState{kind: kindScheduled, policy: OverlapSkip, status: active, latestRunStatus: &done}, start},
		{"running skip skips", fireState{kind: kindScheduled, policy: OverlapSkip, status: active, latestRunStatus: &running}, skip(SkipOverlap)},
		{"pending counts as running", fireState{kind: kindManual, policy: OverlapSkip, status: active, latestRunStatus: &pending}, skip(SkipOverlap)},
		{"paused is not triggerable", fireState{kind: kindScheduled, policy: OverlapAllowAll, status: models.StatusPaused}, skip(SkipNotTriggeable)},
		{"a manual fire of a paused schedule neither", fireState{kind: kindManual, policy: OverlapAllowAll, status: models.StatusPaused}, skip(SkipNotTriggeable)},
		{"a backfill of a paused schedule starts", fireState{kind: kindBackfill, policy: OverlapAllowAll, status: models.StatusPaused}, start},
		{"budget spent", fireState{kind: kindScheduled, policy: OverlapAllowAll, status: active, remainingActions: &none}, skip(SkipExhausted)},
		{"budget left", fireState{kind: kindScheduled, policy: OverlapAllowAll, status: active, remainingActions: &some}, start},
		{"status before budget", fireState{kind: kindScheduled, policy: OverlapAllowAll, status: models.StatusPaused, remainingActions: &none}, skip(SkipNotTriggeable)},
		{"allow_all starts beside a run", fireState{kind: kindScheduled, policy: OverlapAllowAll, status: active, latestRunStatus: &running}, start},
		{"buffer_one idle starts", fireState{kind: kindScheduled, policy: OverlapBufferOne, status: active}, start},
		{"buffer_one running buffers", fireState{kind: kindScheduled, policy: OverlapBufferOne, status: active, latestRunStatus: &running}, buffer},
		{"buffer_one full skips", fireState{kind: kindScheduled, policy: OverlapBufferOne, status: active, latestRunStatus: &running, bufferDepth: 1}, skip(SkipBufferFull)},
		{"a waiting buffer blocks an idle schedule", fireState{kind: kindScheduled, policy: OverlapBufferAll, status: active, bufferDepth: 3}, buffer},
		{"buffer_all holds a thousand", fireState{kind: kindScheduled, policy: OverlapBufferAll, status: active, latestRunStatus: &running, bufferDepth: MaxBufferAll - 1}, buffer},
		{"buffer_all full skips", fireState{kind: kindScheduled, policy: OverlapBufferAll, status: active, latestRunStatus: &running, bufferDepth: MaxBufferAll}, skip(SkipBufferFull)},
		{"a drained fire starts past its buffer", fireState{kind: kindDrained, policy: OverlapBufferAll, status: active, latestRunStatus: &done, bufferDepth: 2}, start},
		{"cancel_other running cancels then starts", fireState{kind: kindScheduled, policy: OverlapCancelOther, status: active, latestRunStatus: &running}, fireDecision{action: actCancelStart}},
		{"cancel_other idle starts", fireState{kind: kindScheduled, policy: OverlapCancelOther, status: active, latestRunStatus: &done}, start},
		{"terminate_other running terminates then starts", fireState{kind: kindScheduled, policy: OverlapTerminateOther, status: active, latestRunStatus: &pending}, fireDecision{action: actTerminateStart}},
		{"terminate_other idle starts", fireState{kind: kindScheduled, policy: OverlapTerminateOther, status: active}, start},
	}
	for _, c := range cases {
		require.Equal(t, c.want, decideFire(c.st), fmt.Sprintf("%s: %+v", c.name, c.st))
	}
}

// The claims of scheduled fires leave the latest run's status unread for
// the policies in startsAnyway; that is right only if decideFire gives the
// same answer for every state of the latest run under them — and wrong
// for every other policy, which must not be added to the list.
func TestStartsAnywayIgnoresTheLatestRun(t *testing.T) {
	t.Parallel()
	statuses := []*string{nil, ptr(models.RunPending), ptr(models.RunRunning), ptr(models.RunCompleted), ptr(models.RunFailed)}
	for _, policy := range OverlapPolicies {
		same := true
		for _, kind := range []string{kindScheduled, kindDrained} {
			for _, depth := range []int{0, 1} {
				want := decideFire(fireState{kind: kind, policy: policy, status: models.StatusActive, bufferDepth: depth})
				for _, st := range statuses {
					got := decideFire(fireState{kind: kind, policy: policy, status: models.StatusActive, bufferDepth: depth, latestRunStatus: st})
					same = same && got == want
				}
			}
		}
		require.Equal(t, same, slices.Contains(startsAnyway, policy), "policy %s: decided alike whatever the latest run does = %v", policy, same)
	}
}
