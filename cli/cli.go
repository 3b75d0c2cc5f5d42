// Package cli implements the tideline command line: every subcommand parses
// its flags (with TIDELINE_* environment fallbacks), opens the database and
// calls the same service layer as the console and the JSON API.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// Version is the build's version, set with -ldflags "-X …/cli.Version=v1.2.3".
var Version = "dev"

// UsageError is a bad command line or configuration; the process exits 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ErrHelpShown means --help was printed; the process exits 0.
var ErrHelpShown = errors.New("help shown")

// ErrSilentFailure means the command already reported its failure on its
// output (e.g. a tick with failed rows); the process exits 1 without more text.
var ErrSilentFailure = errors.New("command failed")

// env is how commands read the environment (injected for tests).
type env struct {
	getenv func(string) string
	stdin  io.Reader // schedule apply -f -
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"serve":    {"run the console, the JSON API and the scheduling loop", runServe},
		"migrate":  {"apply database migrations and exit", runMigrate},
		"version":  {"print the version", runVersion},
		"tick":     {"run one scheduling pass: fire due schedules, then exit", runTick},
		"schedule": {"list, add, describe, update, pause, resume, trigger, backfill, remove, export, apply or show the history of schedules", runSchedule},
		"runs":     {"list, describe, cancel or terminate runs", runRuns},
		"backfill": {"list, describe, pause, resume or cancel backfill jobs", runBackfill},
		"calendar": {"list, add, describe, update, remove or import calendars: dates schedules skip or move off", runCalendar},
		"notifier": {"add, list, remove or test notifiers: where failures, late fires and backfills are posted", runNotifier},
		"token":    {"create an API/console token (prints it once, and the hash to configure)", runToken},
		"bench":    {"measure fire lag, throughput and storage per fire at scale, on a database of its own", runBench},
		"worker":   {"run a command per workflow type for the runs a server hands out (--run TYPE=COMMAND)", runWorker},
	}
}

// Run dispatches args[0] to its subcommand; standard input is the
// process's (for apply -f -).
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return run(ctx, args, getenv, os.Stdin, stdout, stderr)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	args, getenv, err := globalFlags(args, getenv)
	if err != nil {
		return err
	}
	e := env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	cmds := commands()
	if len(args) == 0 {
		printUsage(stderr, cmds)
		return usagef("missing command")
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		printUsage(stdout, cmds)
		return ErrHelpShown
	}
	cmd, ok := cmds[name]
	if !ok {
		printUsage(stderr, cmds)
		return usagef("unknown command %q", name)
	}
	return cmd.run(ctx, e, args[1:])
}

// globals are the flags that may come before the command
// (`tideline --server URL schedule list`), with the environment variable
// each one stands for: a leading flag acts as that variable, so every
// command's own flag of the same name still wins.
var globals = []struct{ name, envVar, usage string }{
	{"server", "TIDELINE_SERVER", "work through the JSON API of this server (http(s)://host:port) instead of the database"},
	{"token", "TIDELINE_TOKEN", "bearer token for --server"},
	{"token-file", "TIDELINE_TOKEN_FILE", "file holding the bearer token for --server"},
	{"namespace", "TIDELINE_NAMESPACE", "namespace of every operation (default \"default\")"},
	{"database", "TIDELINE_DATABASE_URL", "postgres://… or sqlite:PATH (default sqlite:tideline.db)"},
	{"log-level", "TIDELINE_LOG_LEVEL", "debug, info, warn or error (default info)"},
	{"log-format", "TIDELINE_LOG_FORMAT", "text or json (default text)"},
}

func globalFlags(args []string, getenv func(string) string) ([]string, func(string) string, error) {
	overrides := map[string]string{}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "--help" {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		i := slices.IndexFunc(globals, func(g struct{ name, envVar, usage string }) bool { return g.name == name })
		if i < 0 {
			return nil, nil, usagef("unknown global flag %q (global flags: --%s)", args[0], globalNames())
		}
		args = args[1:]
		if !hasValue {
			if len(args) == 0 {
				return nil, nil, usagef("flag needs an argument: --%s", name)
			}
			value, args = args[0], args[1:]
		}
		overrides[globals[i].envVar] = value
	}
	if len(overrides) == 0 {
		return args, getenv, nil
	}
	return args, func(k string) string {
		if v, ok := overrides[k]; ok {
			return v
		}
		return getenv(k)
	}, nil
}

func globalNames() string {
	names := make([]string, 0, len(globals))
	for _, g := range globals {
		names = append(names, g.name)
	}
	return strings.Join(names, ", --")
}

func printUsage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("Usage: tideline <command> [flags]\n\nCommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, cmds[n].summary)
	}
	b.WriteString("\nGlobal flags (before or after the command; each falls back to its environment variable):\n")
	for _, g := range globals {
		fmt.Fprintf(&b, "  --%-12s %s (env %s)\n", g.name, g.usage, g.envVar)
	}
	b.WriteString("\nRun 'tideline <command> --help' for the flags of a command.\n")
	fmt.Fprint(w, b.String())
}

func runVersion(_ context.Context, e env, args []string) error {
	fs := newFlagSet("version", "tideline version", e)
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "tideline %s\n", Version)
	return nil
}
