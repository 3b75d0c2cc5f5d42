package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidelinehq/tideline/client"
	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/scheduling"
)

// dbCommand is what the commands that work on the database share: their
// flags, the shared config and, for changes, who is acting.
type dbCommand struct {
	fs    *flag.FlagSet
	cfg   config
	e     env
	actor string
	// source is what the audit stream records as the change's source:
	// "cli", or "apply" for schedule apply (scheduling.Source…); remote
	// mode sends it as X-Tideline-Source.
	source string
}

func newDBCommand(name, example string, e env) *dbCommand {
	c := &dbCommand{fs: newFlagSet(name, example, e), e: e, source: scheduling.SourceCLI}
	c.cfg.bindDatabase(c.fs, e)
	c.cfg.bindRemote(c.fs, e)
	// In direct mode the CLI saves targets as serve would check them: the
	// same environment allows private ones (serve --allow-private-targets).
	c.cfg.Targets.AllowPrivate = e.getenv("TIDELINE_ALLOW_PRIVATE_TARGETS") == "1"
	return c
}

// withActor adds --actor for commands that record audit events.
func (c *dbCommand) withActor() *dbCommand {
	c.fs.StringVar(&c.actor, "actor", c.e.getenv("USER"), "who is acting, recorded in the audit stream (default $USER)")
	return c
}

// commandContext is the audit stream's record of a CLI change.
func (c *dbCommand) commandContext(reason string) *scheduling.CommandContext {
	return &scheduling.CommandContext{Source: c.source, Actor: c.actor, Reason: reason}
}

// parse reads flags and exactly len(names) positional arguments, which may
// come before, between or after the flags (Go's flag package alone stops at
// the first positional argument).
func (c *dbCommand) parse(args []string, names ...string) ([]string, error) {
	var positional []string
	for {
		if err := parse(c.fs, args); err != nil {
			return nil, err
		}
		rest := c.fs.Args()
		if len(rest) == 0 {
			break
		}
		// After "--" everything is positional, even what looks like a flag.
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	if len(positional) < len(names) {
		return nil, usagef("missing %s (see 'tideline %s --help')", names[len(positional)], c.fs.Name())
	}
	if len(positional) > len(names) {
		return nil, usagef("unexpected argument %q", positional[len(names)])
	}
	if c.cfg.Token == "" {
		c.cfg.Token = c.e.getenv("TIDELINE_TOKEN")
	}
	if err := c.cfg.validate(false); err != nil {
		return nil, err
	}
	if c.cfg.Server != "" && c.isSet("actor") {
		return nil, usagef("--actor cannot be used with --server: the server records the token's name as the actor")
	}
	if c.cfg.Server != "" && c.cfg.DatabaseURL != "" && c.isSet("database") {
		return nil, usagef("give --server or --database, not both")
	}
	return positional, nil
}

// isSet reports whether the flag was given on the command line.
func (c *dbCommand) isSet(name string) bool {
	set := false
	c.fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// open returns the command's backend: the JSON API of --server, else the
// database. The caller closes it.
func (c *dbCommand) open(ctx context.Context) (backend, error) {
	if c.cfg.Server != "" {
		return c.openRemote()
	}
	// Only serve and migrate create a database: a command run in the wrong
	// folder would otherwise make an empty tideline.db and report "No
	// schedules" instead of the real problem.
	if path, ok := database.SQLitePath(c.cfg.DatabaseURL); ok {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			abs, _ := filepath.Abs(path)
			return nil, fmt.Errorf("no database at %s (from --database / TIDELINE_DATABASE_URL, default sqlite:%s): "+
				"run 'tideline migrate' or 'tideline serve' to create it, or pass --database or --server", abs, database.DefaultSQLiteFile)
		}
	}
	a, err := openApp(ctx, &c.cfg, c.cfg.logger(c.e.stderr))
	if err != nil {
		return nil, err
	}
	return &direct{a: a, ns: c.cfg.namespaceOrDefault(), cc: c.commandContext("")}, nil
}

func (c *dbCommand) openRemote() (backend, error) {
	token := c.cfg.Token
	if c.cfg.TokenFile != "" {
		b, err := os.ReadFile(c.cfg.TokenFile)
		if err != nil {
			return nil, &UsageError{Msg: fmt.Sprintf("read --token-file: %v", err)}
		}
		token = strings.TrimSpace(string(b))
	}
	opts := []client.Option{client.WithToken(token), client.WithUserAgent("tideline-cli/" + Version), client.WithSource(c.source),
		client.WithHTTPClient(&http.Client{Timeout: remoteTimeout})}
	if c.cfg.Namespace != "" {
		opts = append(opts, client.WithNamespace(c.cfg.Namespace))
	}
	cl, err := client.New(c.cfg.Server, opts...)
	if err != nil {
		return nil, &UsageError{Msg: err.Error()}
	}
	return remote{cl}, nil
}

// stringList is a repeatable string flag (--cron A --cron B).
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ", ") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// outputFlag registers --output with the formats a command supports.
func outputFlag(fs *flag.FlagSet, formats ...string) *string {
	return fs.String("output", formats[0], "output format: "+strings.Join(formats, ", "))
}

func checkOutput(got string, formats ...string) error {
	for _, f := range formats {
		if got == f {
			return nil
		}
	}
	return usagef("invalid --output %q: want %s", got, strings.Join(formats, ", "))
}

// codedError puts a service error's code in front of its message, e.g.
// "schedule_not_active: schedule "x" is already paused", so scripts and
// people see the same stable code the JSON API returns.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string { return e.code + ": " + e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// explain makes service errors readable on a terminal. Validation errors
// already start with their code and list their fields.
func explain(err error) error {
	err = fromAPIError(err)
	var (
		conflict *scheduling.ConflictError
		notFound *scheduling.NotFoundError
	)
	switch {
	case errors.As(err, &conflict):
		return &codedError{code: conflict.Code, err: err}
	case errors.As(err, &notFound):
		return &codedError{code: notFound.Code, err: err}
	}
	return err
}

// subcommand is one verb of a command group (schedule add, schedule list…).
type subcommand struct {
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func printSubcommands(e env, group string, subs map[string]subcommand, toStdout bool) {
	w := e.stderr
	if toStdout {
		w = e.stdout
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: tideline %s <command> [flags]\n\nCommands:\n", group)
	for _, n := range sortedKeys(subs) {
		fmt.Fprintf(&b, "  %-10s %s\n", n, subs[n].summary)
	}
	fmt.Fprintf(&b, "\nRun 'tideline %s <command> --help' for the flags of a command.\n", group)
	fmt.Fprint(w, b.String())
}
