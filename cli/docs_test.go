package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/migrations"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/runner"
	"github.com/tidelinehq/tideline/scheduling"
	"github.com/tidelinehq/tideline/web"
)

var flagLine = regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)

// commandFlags runs --help on every command and subcommand and returns each
// flag with the commands that have it.
func commandFlags(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var visit func(args []string)
	visit = func(args []string) {
		stdout, stderr, err := runCLI(t, nil, append(args, "--help")...)
		require.ErrorIs(t, err, ErrHelpShown, "tideline %s --help", strings.Join(args, " "))
		help := stdout + stderr
		if _, list, ok := strings.Cut(help, "\nCommands:\n"); ok && len(args) > 0 {
			list, _, _ = strings.Cut(list, "\n\n")
			for _, line := range strings.Split(list, "\n") {
				if f := strings.Fields(line); len(f) > 0 {
					visit(append(append([]string(nil), args...), f[0]))
				}
			}
			return
		}
		// A group of one verb prints that verb's usage line instead
		// (tideline token create …).
		if m := regexp.MustCompile(`^Usage: tideline ((?:[a-z]+ )*[a-z]+)`).FindStringSubmatch(help); m != nil {
			if words := strings.Fields(m[1]); len(words) > len(args) && !strings.Contains(help, "\n  --") {
				visit(words)
				return
			}
		}
		for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
			out[m[1]] = append(out[m[1]], strings.Join(args, " "))
		}
	}
	for name := range commands() {
		if name != "version" {
			visit([]string{name})
		}
	}
	return out
}

// Every flag of every command is documented somewhere in docs/ or the
// README (the README is a front door; the reference is docs/CLI.md).
func TestEveryFlagIsDocumented(t *testing.T) {
	t.Parallel()
	var docs strings.Builder
	pages, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	for _, p := range append(pages, "../README.md") {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		docs.Write(b)
	}
	text := docs.String()
	flags := commandFlags(t)
	// The crawl reaches subcommands and every command's own flags.
	for _, f := range []string{"retain-runs", "non-retryable-exit", "pause-after-failures", "after-sequence", "secret", "role"} {
		require.Contains(t, flags, f)
	}
	var missing []string
	for flag, cmds := range flags {
		if flag == "f" { // apply's -f, written "-f" in the docs
			continue
		}
		if !strings.Contains(text, "`--"+flag) {
			missing = append(missing, "--"+flag+" ("+strings.Join(cmds, ", ")+")")
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "flags no page in docs/ documents")
}

// readmeBlock returns the first ```sh block after heading in the README.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), heading)
	require.True(t, ok, "README has no %q", heading)
	_, block, ok := strings.Cut(section, "```sh\n")
	require.True(t, ok)
	block, _, _ = strings.Cut(block, "```")
	return block
}

// The README's "Run a command" example works as written: its commands run
// against a local server (no token), the worker runs the run's command.
func TestReadmeCommandRunnerExample(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tideline.db")
	ctx := context.Background()
	db, err := database.Open(ctx, "sqlite:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = migrations.Apply(ctx, db)
	require.NoError(t, err)
	svc := scheduling.New(scheduling.Config{DB: db})
	srv := httptest.NewServer(web.NewServer(web.Deps{DB: db, Service: svc, Logger: discardLogger()}))
	t.Cleanup(srv.Close)
	environ := map[string]string{"TIDELINE_DATABASE_URL": "sqlite:" + path,
		"PATH": os.Getenv("PATH"), "USER": "readme"}

	var scheduleID string
	for _, line := range strings.Split(readmeBlock(t, "### 2. Run a command"), "\n") {
		line, _, _ = strings.Cut(line, "  #")
		line = strings.TrimSuffix(strings.TrimSpace(line), "&")
		cmd, ok := strings.CutPrefix(line, "go run . ")
		if !ok {
			continue
		}
		args, err := runner.SplitWords(cmd)
		require.NoError(t, err, line)
		if args[0] == "worker" {
			// The README's worker talks to the default local server; here
			// that is the test's.
			stop, log := startWorkerCommand(t, map[string]string{"PATH": os.Getenv("PATH"), "TIDELINE_SERVER": srv.URL}, args[1:]...)
			t.Cleanup(func() {
				require.NoError(t, stop())
				if t.Failed() {
					t.Log(log.String())
				}
			})
			continue
		}
		if args[0] == "schedule" && args[1] == "add" {
			scheduleID = args[2]
		}
		_, errOut, err := runCLI(t, environ, args...)
		require.NoError(t, err, "%s: %s", line, errOut)
	}
	require.NotEmpty(t, scheduleID)
	deadline := time.Now().Add(20 * time.Second)
	for {
		page, err := svc.ListRuns(ctx, scheduling.RunListFilter{Namespace: "default", ScheduleID: scheduleID})
		require.NoError(t, err)
		if len(page.Runs) == 1 && !page.Runs[0].Active() {
			run := page.Runs[0]
			require.Equal(t, models.RunCompleted, run.Status)
			var out map[string]string
			require.NoError(t, json.Unmarshal(run.Output, &out))
			require.Contains(t, out["stdout"], `checking {"path":"/"} for disk-report`)
			require.Contains(t, out["stdout"], "Filesystem")
			return
		}
		require.True(t, time.Now().Before(deadline), "the README's run never finished")
		time.Sleep(20 * time.Millisecond)
	}
}
