package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestApplyAtAndBounds: a file's start_at/end_at/at (unquoted YAML
// timestamps too) are applied as written, shown by describe, and the
// export round-trips.
func TestApplyAtAndBounds(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		file := writeFile(t, "schedules.yaml", `- schedule_id: quarter
  spec:
    cron_expressions: ["0 6 * * 1-5"]
    timezone: America/New_York
    start_at: 2096-01-01T00:00:00-05:00
    end_at: "2096-03-31T23:59:59-04:00"
    at: [2096-02-13T18:00:00-05:00]
  action: {workflow_type: report.Close}
`)
		out := d.run(t, "schedule", "apply", "-f", file)
		require.Contains(t, out, "start_at: (none) → 2096-01-01T00:00:00-05:00")
		require.Contains(t, out, "at: (none) → 2096-02-13T18:00:00-05:00")
		desc := d.run(t, "schedule", "describe", "quarter")
		require.Regexp(t, `\nAt: +2096-02-13T18:00:00-05:00\n`, desc)
		require.Regexp(t, `\nEnd at: +2096-03-31T23:59:59-04:00\n`, desc)
		require.Regexp(t, `\nStatus: +active\n`, desc)

		exported := writeFile(t, "exported.yaml", d.run(t, "schedule", "export"))
		require.Contains(t, d.run(t, "schedule", "apply", "-f", exported), "1 unchanged")
	})
}
