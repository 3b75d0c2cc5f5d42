package cli

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tidelinehq/tideline/scheduling"
)

func TestNotifierCommands(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d dialectEnv) {
		var posts atomic.Int32
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			posts.Add(1)
			if r.URL.Path == "/down" {
				w.WriteHeader(http.StatusBadGateway)
			}
		}))
		t.Cleanup(rcv.Close)

		require.Equal(t, "No notifiers.\n", d.run(t, "notifier", "list"))
		out := d.run(t, "notifier", "add", "ops", "--url", rcv.URL+"/hook", "--event", "run_failed", "--event", "fire_late", "--selector", "team=billing")
		require.Regexp(t, `^Created notifier ops \(json\) in namespace default: run_failed, fire_late\n`+
			`Signing secret \(shown once; verify Tideline-Signature with it\): whsec_[0-9a-f]{64}\n$`, out)
		d.run(t, "notifier", "add", "chat", "--url", rcv.URL+"/down", "--format", "slack", "--event", "all")

		out = d.run(t, "notifier", "list")
		out = strings.ReplaceAll(out, rcv.URL, "URL")
		require.Equal(t, "Name  Format  Health  Pending  Dead  Events                                                                                                              Selector      URL\n"+
			"chat  slack   idle    0        0     run_failed,run_timed_out,schedule_paused_on_failure,run_not_started,fire_late,occurrences_missed,backfill_finished  -             URL/down\n"+
			"ops   json    idle    0        0     run_failed,fire_late                                                                                                team=billing  URL/hook\n", out)
		require.NotContains(t, d.run(t, "notifier", "list", "--output", "json"), "whsec_", "secrets are shown once")

		out = d.run(t, "notifier", "test", "ops")
		require.Regexp(t, `^Delivered a test event to ops \(HTTP 200, delivery [0-9A-Z]{26}\)\.\n$`, out)
		_, err := d.fail(t, "notifier", "test", "chat")
		require.Regexp(t, `^test event to chat failed \(HTTP 502, delivery [0-9A-Z]{26}\): receiver answered 502$`, err.Error())
		require.EqualValues(t, 2, posts.Load())

		out = d.run(t, "notifier", "deliveries", "chat")
		require.Regexp(t, regexp.MustCompile(`(?m)^[0-9A-Z]{26}\s+test\s+dead\s+1\s+502\s+-\s+\S+Z\s+receiver answered 502$`), out)

		// chat's failed test left it failing, with one dead delivery to send again.
		out = d.run(t, "notifier", "list")
		require.Regexp(t, `(?m)^chat\s+slack\s+failing since \S+Z\s+0\s+1\s`, out)
		require.Regexp(t, `(?m)^ops\s+json\s+ok\s+0\s+0\s`, out)
		require.Equal(t, "Sent 1 dead delivery of chat again.\n", d.run(t, "notifier", "redeliver", "chat", "--reason", "receiver fixed"))
		require.Equal(t, "Sent 0 dead deliveries of chat again.\n", d.run(t, "notifier", "redeliver", "chat"))
		require.Regexp(t, `(?m)^chat\s+slack\s+failing since \S+Z\s+1\s+0\s`, d.run(t, "notifier", "list"))
		_, err = d.fail(t, "notifier", "redeliver", "chat", "--delivery", "01ZZZZZZZZZZZZZZZZZZZZZZZZ")
		require.ErrorContains(t, err, "delivery_not_found")

		_, err = d.fail(t, "notifier", "add", "bad", "--url", "ftp://x", "--event", "nope")
		require.ErrorContains(t, err, "validation_failed")
		require.ErrorContains(t, err, "url")

		require.Equal(t, "Removed notifier ops and its delivery log.\n", d.run(t, "notifier", "remove", "ops"))
		_, err = d.fail(t, "notifier", "test", "ops")
		require.EqualError(t, err, `notifier_not_found: notifier "ops" not found in namespace "default"`)
		require.ErrorIs(t, err, scheduling.ErrNotFound)
	})
}
