package demo

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tidelinehq/tideline/runner"
)

// CommandQueue is the queue of the demo schedules whose runs the command
// runner executes (`tideline worker`, in-process): the real path a user's
// own commands take, with `sh -c` samples any Unix machine can run.
const CommandQueue = "demo-commands"

// The samples draw a byte from /dev/urandom for their randomness and sleep
// $TIDELINE_DEMO_UNIT seconds a step (tests make it 0).
const (
	cleanupScript = `input=$(cat)
n=$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')
sleep $(( (n % 4 + 1) * ${TIDELINE_DEMO_UNIT:-1} ))
if [ $((n % 10)) -eq 0 ]; then
  echo "permission denied removing /var/cache/tideline-demo/tmp-$n" >&2
  exit 13
fi
printf '{"files_deleted": %d, "input": %s, "attempt": %s}\n' $((n * 2)) "$input" "$TIDELINE_ATTEMPT"`

	// A rollup sometimes outlasts its 25 s interval, and terminate_other
	// then stops it: the runner sends SIGTERM to its process group.
	rollupScript = `n=$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')
trap 'echo "rollup interrupted after a newer fire" >&2; exit 143' TERM
sleep $(( (n % 30 + 5) * ${TIDELINE_DEMO_UNIT:-1} )) &
wait $!
if [ $((n % 10)) -eq 1 ]; then
  echo "rollup query exceeded its statement timeout" >&2
  exit 2
fi
printf '{"report": "rollup", "rows": %d, "occurrence_time": "%s"}\n' $((n * 37)) "$TIDELINE_OCCURRENCE_TIME"`
)

// NewRunner returns the command runner of the demo's command workflows.
// unit is how long one simulated step takes (a second; tests pass 0).
func NewRunner(logger *slog.Logger, unit time.Duration) (*runner.Runner, error) {
	return runner.New(runner.Options{
		Commands: []runner.Command{
			{Pattern: WorkflowCleanup, Argv: []string{"sh", "-c", cleanupScript}},
			{Pattern: WorkflowReport, Argv: []string{"sh", "-c", rollupScript}},
		},
		NonRetryableExit: []int{13}, // a permission problem does not mend itself
		Grace:            5 * time.Second,
		Environ:          append(os.Environ(), fmt.Sprintf("TIDELINE_DEMO_UNIT=%d", int(unit/time.Second))),
		Logger:           logger,
	})
}
