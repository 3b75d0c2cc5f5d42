package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The target flags of schedule add/update, in both modes: the target is
// shown by kind, method, URL and header names, the secret only as "set",
// and an update that does not name the secret keeps it.
func TestScheduleTargetFlags(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		const secret = "cli-secret-0123456789"
		d.run(t, "schedule", "add", "hook", "--workflow-type", "billing.Close", "--cron", "0 2 * * *",
			"--http-url", "https://hooks.example.com/close", "--http-method", "put", "--http-timeout", "2m",
			"--http-header", "X-Team=billing", "--http-secret", secret, "--http-auth", "bearer")
		out := d.run(t, "schedule", "describe", "hook")
		require.Contains(t, out, "http PUT https://hooks.example.com/close timeout 120s headers X-Team auth bearer secret set")
		require.NotContains(t, out, secret)
		for _, format := range []string{"json", "yaml"} {
			exported := d.run(t, "schedule", "export", "--output", format)
			require.NotContains(t, exported, secret)
			require.Contains(t, exported, "secret_set")
		}
		history := d.run(t, "schedule", "history", "hook", "--output", "json")
		require.NotContains(t, history, secret)

		d.run(t, "schedule", "update", "hook", "--http-timeout", "10")
		out = d.run(t, "schedule", "describe", "hook")
		require.Contains(t, out, "timeout 10s headers X-Team auth bearer secret set", "the secret is kept")

		_, err := d.fail(t, "schedule", "update", "hook", "--http-header", "Authorization=Bearer x")
		require.ErrorContains(t, err, "action.target.headers")
		_, _, err = runCLI(t, d.environ, "schedule", "update", "hook", "--target", "worker", "--http-url", "https://x.example.com")
		requireExit(t, 2, err)

		d.run(t, "schedule", "update", "hook", "--target", "worker")
		out = d.run(t, "schedule", "describe", "hook")
		require.True(t, strings.Contains(out, "Target:") && strings.Contains(out, "worker"), out)
	})
}
