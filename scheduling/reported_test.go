package scheduling_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database/dbtest"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// The bounds cut on character boundaries and say how much they cut.
func TestReportedStringBounds(t *testing.T) {
	t.Parallel()
	marker := func(n int) string { return fmt.Sprintf("… [truncated %d bytes]", n) }
	for _, c := range []struct {
		name string
		in   string
	}{
		{"ascii", strings.Repeat("a", 10_000)},
		{"two-byte", strings.Repeat("é", 5_000)},
		{"three-byte", strings.Repeat("€", 5_000)},
		{"four-byte", strings.Repeat("𝄞", 5_000)},
		{"mixed", strings.Repeat("a€𝄞é", 2_000)},
		{"invalid", strings.Repeat("\xff\x80", 5_000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := scheduling.BoundMessage(c.in)
			require.LessOrEqual(t, len(got), scheduling.MaxReportedMessageBytes)
			head, ok := strings.CutSuffix(got, marker(len(c.in)-strings.Index(got, "… [truncated")))
			require.True(t, ok, "ends with the marker counting the cut bytes: %q", got[len(got)-40:])
			require.True(t, strings.HasPrefix(c.in, head), "the kept part is the message's start")
			require.Greater(t, len(head), scheduling.MaxReportedMessageBytes-60, "cuts no more than the marker needs")
			if utf8.ValidString(c.in) {
				require.True(t, utf8.ValidString(got), "cut on a character boundary")
			}

			typ := scheduling.BoundType(c.in)
			require.LessOrEqual(t, utf8.RuneCountInString(typ), scheduling.MaxReportedTypeChars)
			require.Contains(t, typ, "… [truncated ")
			if utf8.ValidString(c.in) {
				require.True(t, utf8.ValidString(typ))
				require.GreaterOrEqual(t, utf8.RuneCountInString(typ), scheduling.MaxReportedTypeChars-2, "uses the bound, short of a digit of the count at most")
			}
		})
	}
	require.Equal(t, "short", scheduling.BoundMessage("short"))
	exact := strings.Repeat("€", scheduling.MaxReportedMessageBytes/3)
	require.Equal(t, exact, scheduling.BoundMessage(exact), "a message at the bound is kept whole")
	require.Equal(t, strings.Repeat("t", 200), scheduling.BoundType(strings.Repeat("t", 200)))

	small := json.RawMessage(`{"rows": 3}`)
	require.Equal(t, small, scheduling.BoundOutput(small))
	big := json.RawMessage(`{"blob": "` + strings.Repeat(`"\u20ac€`, 200_000) + `"}`)
	out := scheduling.BoundOutput(big)
	require.LessOrEqual(t, len(out), scheduling.MaxReportedOutputBytes)
	var text string
	require.NoError(t, json.Unmarshal(out, &text), "a cut output is still JSON: a string")
	require.True(t, strings.HasPrefix(string(big), strings.Split(text, "… [truncated")[0]))
	require.Contains(t, text, "… [truncated ")
	require.True(t, utf8.ValidString(text))
}

// Issue 36, finding 2: one fail report of a 1,040,000-character message
// and a 1,000-character type, in a namespace with 50 subscribed notifiers,
// is stored bounded everywhere it is copied — the run, its events, the
// health row and every outbox document — and never refused.
func TestFailReportIsBoundedInEveryCopy(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newNotifyFixture(t, db)
		for i := range scheduling.MaxNotifiersPerNamespace {
			f.notifier(fmt.Sprintf("n%02d", i), "https://hooks.example.com/"+fmt.Sprint(i), []string{"run_failed"}, nil)
		}
		runID := f.retrying("big", policy(1, 1, 1, 1))
		runs := f.poll(1, 30)
		require.Len(t, runs, 1)
		message := strings.Repeat("stack frame € ", 80_000) // 1,040,000 characters
		typ := strings.Repeat("T", 1_000)
		run, err := f.svc.FailRun(f.ctx, "default", runID, w1, scheduling.Failure{Message: message, Type: typ})
		require.NoError(t, err, "a long failure report is stored, not refused")
		require.Equal(t, models.RunFailed, run.Status)

		stored, err := f.svc.GetRun(f.ctx, "default", runID)
		require.NoError(t, err)
		require.LessOrEqual(t, len(*stored.FailureMessage), scheduling.MaxReportedMessageBytes)
		require.Contains(t, *stored.FailureMessage, "… [truncated ")
		require.True(t, strings.HasPrefix(message, strings.Split(*stored.FailureMessage, "… [truncated")[0]))
		require.LessOrEqual(t, utf8.RuneCountInString(*stored.FailureType), scheduling.MaxReportedTypeChars)

		var eventBytes []int
		require.NoError(t, db.NewSelect().Table("workflow_history_events").ColumnExpr("length(CAST(payload AS TEXT))").
			Where("workflow_run_id = ?", runID).Scan(context.Background(), &eventBytes))
		for _, n := range eventBytes {
			require.Less(t, n, 2*scheduling.MaxReportedMessageBytes, "each run event holds one bounded copy")
		}

		var docs []int
		require.NoError(t, db.NewSelect().Table("notification_deliveries").ColumnExpr("length(CAST(document AS TEXT))").
			Where("run_id = ?", runID).Scan(context.Background(), &docs))
		require.Len(t, docs, scheduling.MaxNotifiersPerNamespace)
		total := 0
		for _, n := range docs {
			// One bounded message (error.message) and a one-line excerpt in
			// the summary, besides the document's other few hundred bytes.
			require.Less(t, n, scheduling.MaxReportedMessageBytes+2_000, "one outbox document")
			total += n
		}
		require.Less(t, total, 300_000, "the outbox of 50 notifiers (was ~104 MB)")
	})
}

// A completed run's output past 256 KiB is stored as a JSON string with the
// marker, not refused.
func TestCompleteOutputIsBounded(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db *bun.DB) {
		t.Parallel()
		f := newFixture(t, db)
		runID := f.retrying("out", nil)
		require.Len(t, f.poll(1, 30), 1)
		output := json.RawMessage(`{"rows": "` + strings.Repeat("x", 900_000) + `"}`)
		_, err := f.svc.CompleteRun(f.ctx, "default", runID, w1, output)
		require.NoError(t, err)
		stored, err := f.svc.GetRun(f.ctx, "default", runID)
		require.NoError(t, err)
		require.LessOrEqual(t, len(stored.Output), scheduling.MaxReportedOutputBytes)
		var text string
		require.NoError(t, json.Unmarshal(stored.Output, &text))
		require.True(t, strings.HasPrefix(text, `{"rows": "xxx`))
		require.Contains(t, text, "… [truncated ")
	})
}
