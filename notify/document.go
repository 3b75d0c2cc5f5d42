// Package notify turns Tideline's notification facts into what receivers
// get: the versioned JSON event document (docs/NOTIFICATIONS.md), the Slack
// incoming-webhook text, the signature header, and the HTTP sender that
// refuses private targets. It knows nothing of the database; the
// scheduling package writes the outbox and runs the dispatcher.
package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Version is the event document's version; it changes only when a field
// changes meaning or goes away (new fields may appear in any version).
const Version = 1

// Event types of CONTRACT §11, and test for "send test".
const (
	EventRunFailed               = "run_failed"
	EventRunTimedOut             = "run_timed_out"
	EventSchedulePausedOnFailure = "schedule_paused_on_failure"
	EventRunNotStarted           = "run_not_started"
	EventFireLate                = "fire_late"
	EventOccurrencesMissed       = "occurrences_missed"
	EventBackfillFinished        = "backfill_finished"
	EventTest                    = "test"
)

// Events lists the event types a notifier may subscribe to.
var Events = []string{EventRunFailed, EventRunTimedOut, EventSchedulePausedOnFailure, EventRunNotStarted,
	EventFireLate, EventOccurrencesMissed, EventBackfillFinished}

// Formats a notifier may post.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
)

// Document is the event document as stored in the outbox. The delivery ID,
// the notifier and the console links are added when it is sent (Body), so
// a --public-url change applies to deliveries still waiting.
type Document struct {
	Version    int       `json:"version"`
	ID         string    `json:"id"`
	Event      string    `json:"event"`
	OccurredAt time.Time `json:"occurred_at"`
	Namespace  string    `json:"namespace"`
	Notifier   string    `json:"notifier"`
	// Summary is one human sentence, what a chat message shows.
	Summary        string         `json:"summary"`
	Schedule       *Schedule      `json:"schedule"`
	OccurrenceTime *time.Time     `json:"occurrence_time"`
	Run            *Run           `json:"run"`
	Error          *Error         `json:"error"`
	Details        map[string]any `json:"details"`
	ConsoleURL     string         `json:"console_url"`
}

// Schedule names the schedule an event is about.
type Schedule struct {
	ScheduleID string            `json:"schedule_id"`
	Labels     map[string]string `json:"labels"`
	URL        string            `json:"url"`
}

// Run is the run an event is about.
type Run struct {
	RunID      string `json:"run_id"`
	InstanceID string `json:"instance_id"`
	Status     string `json:"status"`
	Attempt    int    `json:"attempt"`
	URL        string `json:"url"`
}

// Error is why a run ended unsuccessfully.
type Error struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Links fills in the console URLs below base (the --public-url), or
// leaves paths relative to the console when base is empty.
func (d *Document) Links(base string) {
	base = strings.TrimRight(base, "/")
	root := base + "/waterline"
	d.ConsoleURL = root
	if d.Schedule != nil {
		d.Schedule.URL = root + "/schedules/" + url.PathEscape(d.Schedule.ScheduleID) + "?namespace=" + url.QueryEscape(d.Namespace)
		d.ConsoleURL = d.Schedule.URL
	}
	if d.Run != nil {
		d.Run.URL = root + "/runs/" + url.PathEscape(d.Run.RunID) + "?namespace=" + url.QueryEscape(d.Namespace)
		d.ConsoleURL = d.Run.URL
	}
}

// Body renders the document in a notifier's format.
func Body(format string, d *Document) ([]byte, error) {
	switch format {
	case FormatJSON:
		return json.Marshal(d)
	case FormatSlack:
		return json.Marshal(map[string]string{"text": slackText(d)})
	}
	return nil, fmt.Errorf("render notification: unknown format %q", format)
}

// slackText is the incoming-webhook message: the summary, then links back
// to the console in Slack's <url|label> syntax.
func slackText(d *Document) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%s* %s", slackEscape(d.Event), slackEscape(d.Summary))
	var links []string
	if d.Schedule != nil {
		links = append(links, fmt.Sprintf("<%s|schedule %s>", d.Schedule.URL, slackEscape(d.Schedule.ScheduleID)))
	}
	if d.Run != nil {
		links = append(links, fmt.Sprintf("<%s|run %s>", d.Run.URL, slackEscape(d.Run.RunID)))
	}
	if len(links) > 0 {
		b.WriteString("\n" + strings.Join(links, " · "))
	}
	fmt.Fprintf(&b, "\nnamespace %s · delivery %s", slackEscape(d.Namespace), d.ID)
	return b.String()
}

// slackEscape escapes the three characters Slack's mrkdwn reserves, so a
// schedule ID or error message cannot forge a link or a mention.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
