package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tidelinehq/tideline/runner"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/worker"
)

// workerSettings are the settings of `tideline worker`: its flags, and the
// keys of its --config file (docs/CLI.md, "tideline worker").
type workerSettings struct {
	Server           string        `yaml:"server"`
	Token            string        `yaml:"token"`
	TokenFile        string        `yaml:"token_file"`
	Namespace        string        `yaml:"namespace"`
	Connection       string        `yaml:"connection"`
	Queue            string        `yaml:"queue"`
	WorkerID         string        `yaml:"worker_id"`
	Concurrency      int           `yaml:"concurrency"`
	Grace            time.Duration `yaml:"grace"`
	Lease            time.Duration `yaml:"lease"`
	NonRetryableExit []int         `yaml:"non_retryable_exit"`
	Run              []fileCommand `yaml:"run"`
	LogLevel         string        `yaml:"log_level"`
	LogFormat        string        `yaml:"log_format"`
}

// fileCommand is one entry of the file's run list: a command given as one
// line (split like --run) or as a list of words.
type fileCommand struct {
	Type    string    `yaml:"type"`
	Command yaml.Node `yaml:"command"`
}

// defaultWorkerServer is a local `tideline serve`: no token needed there.
const defaultWorkerServer = "http://127.0.0.1:8080"

func runWorker(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("worker", `tideline worker --server https://tideline.example.com --token-file worker.token --queue reports --run 'report.*=python3 report.py --format csv'`, e)
	var s workerSettings
	var runs stringList
	fs.StringVar(&s.Server, "server", envOr(e, "TIDELINE_SERVER", defaultWorkerServer), "the Tideline server to poll for runs (env TIDELINE_SERVER)")
	fs.StringVar(&s.Token, "token", "", "bearer token of the worker role (env TIDELINE_TOKEN); a local-mode server needs none")
	fs.StringVar(&s.TokenFile, "token-file", envOr(e, "TIDELINE_TOKEN_FILE", ""), "file holding the bearer token (env TIDELINE_TOKEN_FILE)")
	fs.StringVar(&s.Namespace, "namespace", envOr(e, "TIDELINE_NAMESPACE", ""), "namespace to take runs from (env TIDELINE_NAMESPACE; default: the token's or the server's, else \"default\")")
	fs.StringVar(&s.Connection, "connection", "default", "connection of the runs to take (a schedule's action.connection)")
	fs.StringVar(&s.Queue, "queue", "default", "queue of the runs to take (a schedule's queue)")
	fs.Var(&runs, "run", "TYPE=COMMAND ARGS…: run this command for workflow TYPE (may end in *, e.g. report.*); repeatable.\n"+
		"The command is split into words like a POSIX shell (quotes, backslashes) but never expanded; use sh -c '…' for a shell")
	configPath := fs.String("config", "", "YAML file with the same settings (keys: server, token, token_file, namespace, connection, queue, worker_id,\nconcurrency, grace, lease, non_retryable_exit, run: [{type, command}], log_level, log_format); flags and env win over it")
	fs.IntVar(&s.Concurrency, "concurrency", 4, "at most this many commands at once")
	fs.DurationVar(&s.Grace, "grace", runner.DefaultGrace, "on cancel or lease loss: time between SIGTERM and SIGKILL; on the worker's own SIGTERM/SIGINT: time running commands get to finish")
	fs.DurationVar(&s.Lease, "lease", 30*time.Second, "lease asked for each run, renewed by a heartbeat every third of it (1s to 1h)")
	nonRetryable := fs.String("non-retryable-exit", "", "comma-separated exit codes that end the run at once instead of being retried, e.g. 2,64")
	fs.StringVar(&s.WorkerID, "worker-id", "", "this worker's name in run history (default HOSTNAME-PID)")
	fs.StringVar(&s.LogFormat, "log-format", envOr(e, "TIDELINE_LOG_FORMAT", "text"), "log format: text or json (env TIDELINE_LOG_FORMAT)")
	fs.StringVar(&s.LogLevel, "log-level", envOr(e, "TIDELINE_LOG_LEVEL", "info"), "log level: debug, info, warn or error (env TIDELINE_LOG_LEVEL)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (quote each --run value: --run 'TYPE=COMMAND ARGS…')", fs.Arg(0))
	}
	if s.Token == "" {
		s.Token = e.getenv("TIDELINE_TOKEN")
	}
	codes, err := parseExitCodes(*nonRetryable)
	if err != nil {
		return err
	}
	s.NonRetryableExit = codes
	var commands []runner.Command
	if *configPath != "" {
		fromFile, err := readWorkerConfig(*configPath)
		if err != nil {
			return err
		}
		if commands, err = s.merge(fromFile, fs, e); err != nil {
			return err
		}
	}
	for _, spec := range runs {
		c, err := runner.ParseRun(spec)
		if err != nil {
			return &UsageError{Msg: err.Error()}
		}
		commands = append(commands, c)
	}
	token, err := s.validate()
	if err != nil {
		return err
	}
	cfg := config{LogFormat: s.LogFormat, LogLevel: s.LogLevel}
	logger := cfg.logger(e.stderr)
	r, err := runner.New(runner.Options{Commands: commands, NonRetryableExit: s.NonRetryableExit, Grace: s.Grace, Logger: logger})
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	w, err := worker.New(worker.Options{
		BaseURL: s.Server, Token: token, Namespace: s.Namespace, Connection: s.Connection, Queue: s.Queue,
		WorkerID: s.WorkerID, Concurrency: s.Concurrency, LeaseSeconds: int(s.Lease / time.Second), StopGrace: s.Grace,
		Logger: logger,
	})
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	r.Register(w)
	patterns := make([]string, 0, len(commands))
	for _, c := range commands {
		patterns = append(patterns, c.Pattern)
	}
	logger.Info("worker: polling for runs", "server", s.Server, "namespace", scheduling.NamespaceOr(s.Namespace), "queue", s.Queue,
		"types", strings.Join(patterns, ","), "concurrency", s.Concurrency)
	if err := w.Run(ctx); err != nil {
		return fmt.Errorf("run worker: %w", err)
	}
	logger.Info("worker: stopped")
	return nil
}

// merge takes from the file every setting that neither a flag nor its
// environment variable gave, and returns the file's commands.
func (s *workerSettings) merge(f workerSettings, fs *flag.FlagSet, e env) ([]runner.Command, error) {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	take := func(name, envVar string) bool { return !given[name] && (envVar == "" || e.getenv(envVar) == "") }
	if f.Server != "" && take("server", "TIDELINE_SERVER") {
		s.Server = f.Server
	}
	if f.Token != "" && take("token", "TIDELINE_TOKEN") && take("token-file", "TIDELINE_TOKEN_FILE") {
		s.Token = f.Token
	}
	if f.TokenFile != "" && take("token-file", "TIDELINE_TOKEN_FILE") && take("token", "TIDELINE_TOKEN") {
		s.TokenFile = f.TokenFile
	}
	for _, str := range []struct {
		name, envVar string
		from         string
		to           *string
	}{
		{"namespace", "TIDELINE_NAMESPACE", f.Namespace, &s.Namespace},
		{"connection", "", f.Connection, &s.Connection},
		{"queue", "", f.Queue, &s.Queue},
		{"worker-id", "", f.WorkerID, &s.WorkerID},
		{"log-level", "TIDELINE_LOG_LEVEL", f.LogLevel, &s.LogLevel},
		{"log-format", "TIDELINE_LOG_FORMAT", f.LogFormat, &s.LogFormat},
	} {
		if str.from != "" && take(str.name, str.envVar) {
			*str.to = str.from
		}
	}
	if f.Concurrency != 0 && take("concurrency", "") {
		s.Concurrency = f.Concurrency
	}
	if f.Grace != 0 && take("grace", "") {
		s.Grace = f.Grace
	}
	if f.Lease != 0 && take("lease", "") {
		s.Lease = f.Lease
	}
	if len(f.NonRetryableExit) > 0 && take("non-retryable-exit", "") {
		s.NonRetryableExit = f.NonRetryableExit
	}
	commands := make([]runner.Command, 0, len(f.Run))
	for i, fc := range f.Run {
		c, err := fc.command()
		if err != nil {
			return nil, usagef("--config: run[%d]: %v", i, err)
		}
		commands = append(commands, c)
	}
	return commands, nil
}

func (fc fileCommand) command() (runner.Command, error) {
	if strings.TrimSpace(fc.Type) == "" {
		return runner.Command{}, errors.New("missing type")
	}
	c := runner.Command{Pattern: strings.TrimSpace(fc.Type)}
	switch fc.Command.Kind {
	case yaml.ScalarNode:
		argv, err := runner.SplitWords(fc.Command.Value)
		if err != nil {
			return runner.Command{}, fmt.Errorf("command: %w", err)
		}
		c.Argv = argv
	case yaml.SequenceNode:
		if err := fc.Command.Decode(&c.Argv); err != nil {
			return runner.Command{}, fmt.Errorf("command: want a line or a list of words: %w", err)
		}
	default:
		return runner.Command{}, errors.New("command: want a line or a list of words")
	}
	return c, nil
}

// maxWorkerConfigBytes bounds the --config file: settings, not data.
const maxWorkerConfigBytes = 1 << 20

func readWorkerConfig(path string) (workerSettings, error) {
	var f workerSettings
	b, err := os.ReadFile(path)
	if err != nil {
		return f, &UsageError{Msg: fmt.Sprintf("read --config: %v", err)}
	}
	if len(b) > maxWorkerConfigBytes {
		return f, usagef("--config %s: larger than %d bytes", path, maxWorkerConfigBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // a misspelt key must not be silently ignored
	// An empty file sets nothing (Decode answers io.EOF).
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return f, usagef("--config %s: %v", path, err)
	}
	return f, nil
}

func parseExitCodes(list string) ([]int, error) {
	var codes []int
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 1 || n > 255 {
			return nil, usagef("invalid --non-retryable-exit %q: want exit codes 1-255, comma-separated", list)
		}
		codes = append(codes, n)
	}
	return codes, nil
}

// validate checks the merged settings and returns the token to send.
func (s *workerSettings) validate() (string, error) {
	if !strings.HasPrefix(s.Server, "http://") && !strings.HasPrefix(s.Server, "https://") {
		return "", usagef("invalid --server %q: want http://host:port or https://host", s.Server)
	}
	if s.Namespace != "" && !scheduling.ValidNamespace(s.Namespace) {
		return "", usagef("invalid --namespace %q: %s", s.Namespace, scheduling.NamespaceRule)
	}
	if s.Token != "" && s.TokenFile != "" {
		return "", usagef("give --token or --token-file, not both")
	}
	if s.Concurrency < 1 || s.Concurrency > 1000 {
		return "", usagef("invalid --concurrency %d: want 1-1000", s.Concurrency)
	}
	if s.Grace < 0 {
		return "", usagef("invalid --grace %s: want a duration of zero or more", s.Grace)
	}
	if s.Lease < time.Second || s.Lease > time.Hour || s.Lease%time.Second != 0 {
		return "", usagef("invalid --lease %s: want whole seconds from 1s to 1h", s.Lease)
	}
	switch s.LogFormat {
	case "text", "json":
	default:
		return "", usagef("invalid --log-format %q: want text or json", s.LogFormat)
	}
	if _, err := parseLevel(s.LogLevel); err != nil {
		return "", err
	}
	if s.TokenFile == "" {
		return s.Token, nil
	}
	b, err := os.ReadFile(s.TokenFile)
	if err != nil {
		return "", &UsageError{Msg: fmt.Sprintf("read --token-file: %v", err)}
	}
	return strings.TrimSpace(string(b)), nil
}
