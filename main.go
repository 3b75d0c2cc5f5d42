// Command tideline keeps durable workflow schedules in a database, fires them
// on time, and serves an operator console and a JSON API to steer them.
package main

//go:generate go tool templ generate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	// Schedules name IANA zones; embedding tzdata makes them resolve the same
	// on every host, including minimal containers without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/tidelinehq/tideline/cli"
	"github.com/tidelinehq/tideline/runner"
)

func main() {
	// A `tideline worker` starts this binary as the leader of each command's
	// process group; that invocation runs the command and exits here.
	runner.ShimMain()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		os.Exit(exitCode(err, os.Stderr))
	}
}

// run is the whole program behind main: no globals, everything injected, so
// tests can run any command in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return cli.Run(ctx, args, getenv, stdout, stderr)
}

// exitCode prints err and maps it to the process status: 2 for usage and
// configuration errors, 1 for everything else.
func exitCode(err error, stderr io.Writer) int {
	if errors.Is(err, cli.ErrHelpShown) {
		return 0
	}
	var usage *cli.UsageError
	if errors.As(err, &usage) {
		fmt.Fprintf(stderr, "tideline: %v\n", err)
		return 2
	}
	if errors.Is(err, cli.ErrDrift) {
		return 2 // schedule diff: the plan is on stdout (for CI, like a failed check)
	}
	if errors.Is(err, cli.ErrSilentFailure) {
		return 1
	}
	fmt.Fprintf(stderr, "tideline: %v\n", err)
	return 1
}
