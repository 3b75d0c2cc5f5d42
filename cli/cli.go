// Package cli implements the tideline command line: every subcommand parses
// its flags (with TIDELINE_* environment fallbacks), opens the database and
// calls the same service layer as the console and the JSON API.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
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
		"schedule": {"list, add, describe, pause, resume, trigger, backfill, remove or show the history of schedules", runSchedule},
		"token":    {"create an API/console token (prints it once, and the hash to configure)", runToken},
	}
}

// Run dispatches args[0] to its subcommand.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdout: stdout, stderr: stderr}
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
