package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScheduleOccurrencesAndCatchupWindow(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		d.run(t, "schedule", "add", "hourly", "--workflow-type", "w", "--every", "PT1H", "--overlap", "allow_all", "--catchup-window", "2h")
		require.Contains(t, d.run(t, "schedule", "describe", "hourly"), "fires missed occurrences of the last 2h0m0s")
		d.run(t, "schedule", "update", "hourly", "--catchup-window", "90m")
		var s struct {
			CatchupWindowSeconds *int `json:"catchup_window_seconds"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "describe", "hourly", "--output", "json")), &s))
		require.Equal(t, 5400, *s.CatchupWindowSeconds)
		d.run(t, "schedule", "update", "hourly", "--clear", "catchup_window_seconds")
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "describe", "hourly", "--output", "json")), &s))
		require.Nil(t, s.CatchupWindowSeconds)

		d.run(t, "schedule", "backfill", "hourly", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T03:00:00Z")
		out := d.run(t, "schedule", "occurrences", "hourly", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T05:00:00Z")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Len(t, lines, 7, out)
		require.Regexp(t, `^2026-01-01T00:00:00.000000Z +2026-01-01T00:00:00 +started +run [0-9A-Z]{26} pending$`, lines[1])
		require.Regexp(t, `^2026-01-01T04:00:00.000000Z +2026-01-01T04:00:00 +before_created +-$`, lines[5])
		require.Equal(t, "3 started, 2 before_created", lines[6])

		var page struct {
			Occurrences []struct {
				Fate string `json:"fate"`
			} `json:"occurrences"`
		}
		require.NoError(t, json.Unmarshal([]byte(d.run(t, "schedule", "occurrences", "hourly", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T05:00:00Z", "--output", "json")), &page))
		require.Len(t, page.Occurrences, 5)
	})
}
