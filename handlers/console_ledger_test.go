package handlers

import (
	"testing"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// A started occurrence counts as its run's outcome (failed and timed out
// alike), any other as its fate; the worse of two keys wins the hour.
func TestHeatKeyAndWorse(t *testing.T) {
	t.Parallel()
	started := func(status string) scheduling.Occurrence {
		return scheduling.Occurrence{Fate: scheduling.FateStarted, RunStatus: status}
	}
	for _, tc := range []struct {
		o    scheduling.Occurrence
		want string
	}{
		{started(models.RunFailed), "failed"},
		{started(models.RunTimedOut), "failed"},
		{started(models.RunCompleted), "completed"},
		{started(models.RunCancelled), "cancelled"},
		{started(models.RunTerminated), "cancelled"},
		{started(models.RunPending), "pending"},
		{started(models.RunRunning), "running"},
		{scheduling.Occurrence{Fate: scheduling.FateMissed}, scheduling.FateMissed},
		{scheduling.Occurrence{Fate: scheduling.FateCompacted}, scheduling.FateCompacted},
	} {
		if got := heatKey(tc.o); got != tc.want {
			t.Errorf("heatKey(%s %s) = %q, want %q", tc.o.Fate, tc.o.RunStatus, got, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"failed", "completed", true},
		{"completed", "failed", false},
		{"failed", scheduling.FateMissed, true},
		{scheduling.FateMissed, "completed", true},
		{scheduling.FateSkipped, "running", true},
		{"completed", scheduling.FateDue, true},
		{scheduling.FateExcluded, "", true},
	} {
		if got := worse(tc.a, tc.b); got != tc.want {
			t.Errorf("worse(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
