package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	"github.com/tidelinehq/tideline/scheduling"
)

// config holds the settings every command shares. Each flag falls back to a
// TIDELINE_* environment variable, then to its default.
type config struct {
	Addr        string
	DatabaseURL string
	Namespace   string
	LogFormat   string
	LogLevel    string
	// Remote mode (schedule, runs and tick commands): the server's root URL
	// and a bearer token, given inline or in a file.
	Server    string
	Token     string
	TokenFile string
	// Notify configures notifications (serve only).
	Notify scheduling.NotifyConfig
	// Targets configures the HTTP target executor (serve; the private
	// address rule applies to direct-mode writes too).
	Targets scheduling.TargetConfig
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name, example string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: tideline %s [flags]\n\nExample:\n  %s\n\nFlags:\n", name, example)
		printFlags(out, fs)
	}
	return fs
}

// printFlags is flag.PrintDefaults spelled as the README writes flags
// (--addr, not -addr; Go's flag package accepts both).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if typed, ok := f.Value.(interface{ TypeName() string }); ok {
			name = typed.TypeName() // a flag of our own type (fieldFlag)
		}
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			line += fmt.Sprintf(" (default %q)", f.DefValue)
		}
		fmt.Fprintln(w, line)
	})
}

// parse turns flag errors into usage errors and --help into ErrHelpShown.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ErrHelpShown
		}
		return &UsageError{Msg: err.Error()}
	}
	return nil
}

// envOr returns the environment variable's value, or def when it is unset.
func envOr(e env, name, def string) string {
	if v := e.getenv(name); v != "" {
		return v
	}
	return def
}

// bindDatabase registers the flags of commands that only need the database.
func (c *config) bindDatabase(fs *flag.FlagSet, e env) {
	fs.StringVar(&c.DatabaseURL, "database", envOr(e, "TIDELINE_DATABASE_URL", ""),
		"database URL: postgres://… or sqlite:PATH (env TIDELINE_DATABASE_URL; default sqlite:tideline.db)")
	fs.StringVar(&c.Namespace, "namespace", envOr(e, "TIDELINE_NAMESPACE", ""),
		"namespace that scopes every operation (env TIDELINE_NAMESPACE; default: per request, else \"default\")")
	fs.StringVar(&c.LogFormat, "log-format", envOr(e, "TIDELINE_LOG_FORMAT", "text"), "log format: text or json (env TIDELINE_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", envOr(e, "TIDELINE_LOG_LEVEL", "info"), "log level: debug, info, warn or error (env TIDELINE_LOG_LEVEL)")
}

// bindRemote adds the flags of remote mode.
func (c *config) bindRemote(fs *flag.FlagSet, e env) {
	fs.StringVar(&c.Server, "server", envOr(e, "TIDELINE_SERVER", ""),
		"work through the JSON API of this server (http(s)://host:port) instead of --database (env TIDELINE_SERVER)")
	// Not envOr: a default is printed by --help, and a token must not be.
	fs.StringVar(&c.Token, "token", "", "bearer token for --server (env TIDELINE_TOKEN)")
	fs.StringVar(&c.TokenFile, "token-file", envOr(e, "TIDELINE_TOKEN_FILE", ""), "file holding the bearer token for --server (env TIDELINE_TOKEN_FILE)")
}

// bindServer adds the listening address.
func (c *config) bindServer(fs *flag.FlagSet, e env) {
	c.bindDatabase(fs, e)
	fs.StringVar(&c.Addr, "addr", envOr(e, "TIDELINE_ADDR", "127.0.0.1:8080"), "listen address host:port (env TIDELINE_ADDR)")
}

// validate reports the first invalid setting as a usage error (exit 2).
func (c *config) validate(withAddr bool) error {
	if withAddr {
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			return usagef("invalid --addr %q: want host:port, e.g. 127.0.0.1:8080", c.Addr)
		}
	}
	if c.Namespace != "" && !scheduling.ValidNamespace(c.Namespace) {
		return usagef("invalid --namespace %q: %s", c.Namespace, scheduling.NamespaceRule)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return usagef("invalid --log-format %q: want text or json", c.LogFormat)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if c.Token != "" && c.TokenFile != "" {
		return usagef("give --token or --token-file, not both")
	}
	if c.Server == "" && (c.Token != "" || c.TokenFile != "") {
		return usagef("--token and --token-file go with --server (or TIDELINE_SERVER)")
	}
	if c.Server != "" && !strings.HasPrefix(c.Server, "http://") && !strings.HasPrefix(c.Server, "https://") {
		return usagef("invalid --server %q: want http://host:port or https://host", c.Server)
	}
	if u := c.DatabaseURL; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") && !strings.HasPrefix(u, "sqlite:") {
		return usagef("invalid --database %q: want postgres://… or sqlite:PATH", u)
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, usagef("invalid --log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// logger builds the process logger from the config.
func (c *config) logger(w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.LogLevel) // validated already
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
