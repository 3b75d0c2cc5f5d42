// Package runner runs a program per workflow type for Tideline's command
// runner, `tideline worker` (SPEC §15): each claimed run starts its
// command with the run's input on stdin and the run's facts in the
// environment, and the command's exit becomes the run's result. It plugs
// into the worker package as its handler, so polling, leases, heartbeats,
// cancellation and reporting are the Go worker's.
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tidelinehq/tideline/worker"
)

// Command is what runs for the workflow types a pattern matches.
type Command struct {
	// Pattern is a workflow type, or a prefix ending in "*" ("report.*",
	// "*"). An exact type wins over patterns; among patterns the longest
	// prefix wins.
	Pattern string
	// Argv is the program and its arguments, run as they are: no shell
	// unless Argv says so (sh -c '…').
	Argv []string
}

// ParseRun reads one --run TYPE=COMMAND ARGS… value.
func ParseRun(spec string) (Command, error) {
	pattern, line, ok := strings.Cut(spec, "=")
	pattern = strings.TrimSpace(pattern)
	if !ok || pattern == "" {
		return Command{}, fmt.Errorf("--run %q: want TYPE=COMMAND ARGS…, e.g. report=./report.sh --daily", spec)
	}
	argv, err := SplitWords(line)
	if err != nil {
		return Command{}, fmt.Errorf("--run %q: %w", spec, err)
	}
	return Command{Pattern: pattern, Argv: argv}, nil
}

// Options configures a Runner.
type Options struct {
	Commands []Command
	// NonRetryableExit lists exit codes that end the run at once instead of
	// being retried by its schedule's policy (a usage error, say).
	NonRetryableExit []int
	// Grace is how long a command has between SIGTERM and SIGKILL when its
	// run is cancelled or its lease lost; default 30 s.
	Grace time.Duration
	// Environ is the environment commands start from (the run's variables
	// are added); nil: this process's, without its token.
	Environ []string
	Logger  *slog.Logger
}

// DefaultGrace is the --grace default.
const DefaultGrace = 30 * time.Second

// Runner turns claimed runs into commands. Its Handle is a worker.Handler.
type Runner struct {
	exact        map[string]resolved
	patterns     []resolved // longest prefix first
	nonRetryable map[int]bool
	grace        time.Duration
	environ      []string
	logger       *slog.Logger
}

type resolved struct {
	Command
	path   string // Argv[0] as found on PATH at start-up
	prefix string // a pattern's prefix
}

// maxPatternLength matches the server's bound on workflow types.
const maxPatternLength = 200

// New checks the commands — each program must exist now, so a typo fails at
// start-up instead of failing every run — and returns the runner.
func New(opts Options) (*Runner, error) {
	r := &Runner{exact: map[string]resolved{}, nonRetryable: map[int]bool{}, grace: opts.Grace, environ: opts.Environ, logger: opts.Logger}
	if r.grace == 0 {
		r.grace = DefaultGrace
	}
	if r.grace < 0 {
		return nil, fmt.Errorf("grace %s must not be negative", opts.Grace)
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if r.environ == nil {
		r.environ = os.Environ()
	}
	if len(opts.Commands) == 0 {
		return nil, errors.New("no command to run: give at least one --run TYPE=COMMAND")
	}
	seen := map[string]bool{}
	for _, c := range opts.Commands {
		switch {
		case c.Pattern == "" || len(c.Pattern) > maxPatternLength:
			return nil, fmt.Errorf("workflow type %q must be 1 to %d characters", c.Pattern, maxPatternLength)
		case strings.Contains(strings.TrimSuffix(c.Pattern, "*"), "*"):
			return nil, fmt.Errorf("workflow type %q: a * may only end the pattern", c.Pattern)
		case seen[c.Pattern]:
			return nil, fmt.Errorf("workflow type %q has two commands", c.Pattern)
		case len(c.Argv) == 0 || c.Argv[0] == "":
			return nil, fmt.Errorf("workflow type %q has an empty command", c.Pattern)
		}
		seen[c.Pattern] = true
		path, err := exec.LookPath(c.Argv[0])
		if err != nil {
			return nil, fmt.Errorf("workflow type %q: find %s: %w", c.Pattern, c.Argv[0], err)
		}
		res := resolved{Command: c, path: path}
		if prefix, ok := strings.CutSuffix(c.Pattern, "*"); ok {
			res.prefix = prefix
			r.patterns = append(r.patterns, res)
		} else {
			r.exact[c.Pattern] = res
		}
	}
	slices.SortStableFunc(r.patterns, func(a, b resolved) int { return len(b.prefix) - len(a.prefix) })
	for _, code := range opts.NonRetryableExit {
		if code < 1 || code > 255 {
			return nil, fmt.Errorf("non-retryable exit code %d must be between 1 and 255", code)
		}
		r.nonRetryable[code] = true
	}
	return r, nil
}

// match finds the command of a workflow type.
func (r *Runner) match(workflowType string) (resolved, bool) {
	if c, ok := r.exact[workflowType]; ok {
		return c, true
	}
	for _, c := range r.patterns {
		if strings.HasPrefix(workflowType, c.prefix) {
			return c, true
		}
	}
	return resolved{}, false
}

// Register makes r the handler of every workflow type w is handed.
func (r *Runner) Register(w *worker.Worker) { w.RegisterFallback(r.Handle) }

// Handle runs the run's command to its end (a worker.Handler).
func (r *Runner) Handle(ctx context.Context, run worker.Run) (any, error) {
	c, ok := r.match(run.WorkflowType)
	if !ok {
		return nil, worker.WithFailureType(fmt.Errorf("no --run command matches workflow type %q", run.WorkflowType), worker.FailureTypeUnknownType)
	}
	input := []byte(run.Input)
	if len(input) == 0 {
		input = []byte("null")
	}
	p := &process{path: c.path, argv: c.Argv, env: r.env(run), input: input, grace: r.grace, mode: stopModeFor}
	log := r.logger.With("run_id", run.ID, "workflow_type", run.WorkflowType, "attempt", run.Attempt, "command", c.Argv[0])
	startedAt := time.Now()
	st, err := p.run(ctx)
	if err != nil {
		// The program was there at start-up; failing to start it now
		// (resources, permissions) may pass: retryable.
		return nil, worker.WithFailureType(err, "start_failed")
	}
	log.Info("runner: command ended", "exit_code", st.code, "signal", signalName(st.signal), "duration", time.Since(startedAt).Round(time.Millisecond))
	return r.result(st)
}

// stopModeFor: a run that was cancelled or lost gets SIGTERM and the grace
// to wind down; a command still running when the worker's own stop grace
// is over has had its grace already.
func stopModeFor(cause error) stopMode {
	if errors.Is(cause, worker.ErrWorkerStopped) {
		return stopNow
	}
	return stopGently
}

// result maps a command's end to the run's: exit 0 completes it with
// stdout (as it is when it is JSON, else {"stdout": its tail}); anything
// else fails it as exit_<code> or signal_<NAME> with stderr's tail.
func (r *Runner) result(st exitStatus) (any, error) {
	if st.signal == 0 && st.code == 0 {
		if whole, ok := st.stdout.whole(); ok && json.Valid(whole) {
			return json.RawMessage(bytes.TrimSpace(whole)), nil
		}
		return map[string]string{"stdout": st.stdout.last(stdoutTail)}, nil
	}
	message := st.stderr.last(stderrTail)
	var typ string
	if st.signal != 0 {
		typ = "signal_" + signalName(st.signal)
		if strings.TrimSpace(message) == "" {
			message = "killed by " + signalName(st.signal)
		}
	} else {
		typ = "exit_" + strconv.Itoa(st.code)
		if strings.TrimSpace(message) == "" {
			message = "exited with status " + strconv.Itoa(st.code)
		}
	}
	err := worker.WithFailureType(errors.New(message), typ)
	if st.signal == 0 && r.nonRetryable[st.code] {
		err = worker.NonRetryable(err)
	}
	return nil, err
}

func signalName(sig unix.Signal) string {
	if sig == 0 {
		return ""
	}
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// runVariables are the variables a command finds in its environment.
var runVariables = []string{"TIDELINE_RUN_ID", "TIDELINE_INSTANCE_ID", "TIDELINE_SCHEDULE_ID", "TIDELINE_NAMESPACE",
	"TIDELINE_OCCURRENCE_TIME", "TIDELINE_ATTEMPT", "TIDELINE_WORKFLOW_TYPE", "TIDELINE_TRIGGER"}

// hiddenVariables never reach a command: the worker's credentials are the
// worker's, not every program's it runs.
var hiddenVariables = []string{"TIDELINE_TOKEN", "TIDELINE_TOKEN_FILE"}

// env is the command's environment: the base without the worker's token
// (and without stale run variables), plus the run's facts.
func (r *Runner) env(run worker.Run) []string {
	out := make([]string, 0, len(r.environ)+len(runVariables))
	for _, kv := range r.environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(hiddenVariables, name) || slices.Contains(runVariables, name) {
			continue
		}
		out = append(out, kv)
	}
	occurrence := ""
	if run.OccurrenceTime != nil {
		occurrence = run.OccurrenceTime.UTC().Format(time.RFC3339Nano)
	}
	return append(out,
		"TIDELINE_RUN_ID="+run.ID,
		"TIDELINE_INSTANCE_ID="+run.InstanceID,
		"TIDELINE_SCHEDULE_ID="+run.ScheduleID,
		"TIDELINE_NAMESPACE="+run.Namespace,
		"TIDELINE_OCCURRENCE_TIME="+occurrence,
		"TIDELINE_ATTEMPT="+strconv.Itoa(run.Attempt),
		"TIDELINE_WORKFLOW_TYPE="+run.WorkflowType,
		"TIDELINE_TRIGGER="+run.Trigger,
	)
}
