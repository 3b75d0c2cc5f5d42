package scheduling

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/egress"
	"github.com/tidelinehq/tideline/models"
)

// The rules of action.target (CONTRACT §15): what a target may say, how it
// is stored (its secret apart), and where its runs wait.

// HTTP target bounds and defaults.
const (
	// HTTPConnection is the connection every run of an HTTP target is
	// queued on; its queue is the target's host. No worker may poll it
	// (and no schedule may name it), so workers never receive such runs.
	HTTPConnection          = "@http"
	DefaultTargetTimeout    = 30
	MaxTargetTimeout        = 900
	MaxTargetHeaders        = 32
	maxTargetHeaderValue    = 4096
	maxTargetHeaderNameSize = 128
	// AllowPrivateTargetsFlag is the serve flag that lets targets reach
	// loopback, private and link-local addresses.
	AllowPrivateTargetsFlag = "--allow-private-targets"
)

// refusedTargetHeaders are set by the executor or by HTTP itself: hop-by-hop
// headers, the framing ones, Authorization (auth: bearer sends the secret)
// and the headers that identify the run and its signature.
var refusedTargetHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Host": true, "Content-Length": true,
	"Authorization": true, "Idempotency-Key": true, "Tideline-Run-Id": true, "Tideline-Attempt": true, "Tideline-Signature": true,
}

// IsHTTP reports whether the action's runs are executed by the server's
// HTTP executor.
func IsHTTP(t *models.Target) bool { return t != nil && t.Kind == models.TargetHTTP }

// normalizeTarget stores "worker" as no target (what an absent one means),
// and fills an HTTP target's defaults; it copies, so the caller's value is
// left alone. Invalid values are kept for checkTarget to report.
func normalizeTarget(t *models.Target) *models.Target {
	if t == nil || t.Kind == models.TargetWorker && t.URL == "" && t.Method == "" && len(t.Headers) == 0 &&
		t.Auth == "" && t.TimeoutSeconds == 0 && t.Secret == nil {
		return nil
	}
	out := *t
	if out.Kind != models.TargetHTTP {
		return &out
	}
	out.Method = strings.ToUpper(out.Method)
	if out.Method == "" {
		out.Method = http.MethodPost
	}
	if out.TimeoutSeconds == 0 {
		out.TimeoutSeconds = DefaultTargetTimeout
	}
	if len(out.Headers) > 0 {
		h := make(map[string]string, len(out.Headers))
		for k, v := range out.Headers {
			h[http.CanonicalHeaderKey(k)] = v
		}
		out.Headers = h
	} else {
		out.Headers = nil
	}
	return &out
}

// checkTarget validates a normalized target and carries the secret's
// version over from prev, the stored target (nil on create): a target that
// stays HTTP keeps its secret unless a new one (or "" to remove it) is given.
func (s *Service) checkTarget(v *ValidationError, t, prev *models.Target) {
	if t == nil {
		return
	}
	const f = "action.target."
	switch t.Kind {
	case models.TargetHTTP:
	case models.TargetWorker:
		v.Add(f+"kind", `"worker" takes no other fields; use "http" for an HTTP target`)
		return
	default:
		v.Add(f+"kind", `must be "worker" or "http"`)
		return
	}
	if t.URL == "" {
		v.Add(f+"url", "is required for an http target")
	} else if err := egress.CheckURL(t.URL, s.targets.AllowPrivate, AllowPrivateTargetsFlag); err != nil {
		v.Add(f+"url", err.Error())
	}
	if t.Method != http.MethodPost && t.Method != http.MethodPut {
		v.Add(f+"method", "must be POST or PUT")
	}
	if t.TimeoutSeconds < 1 || t.TimeoutSeconds > MaxTargetTimeout {
		v.Add(f+"timeout_seconds", fmt.Sprintf("must be between 1 and %d", MaxTargetTimeout))
	}
	checkTargetHeaders(v, t.Headers)
	if t.Auth != "" && t.Auth != "bearer" {
		v.Add(f+"auth", `must be "bearer" or absent`)
	}
	if t.Secret != nil && *t.Secret != "" {
		if n := utf8.RuneCountInString(*t.Secret); n < MinSecretLength || n > MaxSecretLength {
			v.Add(f+"secret", fmt.Sprintf("must be %d-%d characters", MinSecretLength, MaxSecretLength))
		}
	}
	CarryTargetSecret(t, prev)
	if t.Auth == "bearer" && t.SecretVersion == 0 {
		v.Add(f+"secret", "is required with auth bearer: it is the token sent")
	}
}

// CarryTargetSecret sets t's secret version from what the change does to
// the stored target prev: no secret given keeps prev's (if it was HTTP), a
// new one counts one more, "" removes it. The console's "what will change"
// uses it too, as a form cannot show the stored secret.
func CarryTargetSecret(t, prev *models.Target) {
	if t == nil || t.Kind != models.TargetHTTP {
		return
	}
	switch {
	case t.Secret == nil && IsHTTP(prev):
		t.SecretVersion = prev.SecretVersion
	case t.Secret == nil || *t.Secret == "":
		t.SecretVersion = 0
	case IsHTTP(prev):
		t.SecretVersion = prev.SecretVersion + 1
	default:
		t.SecretVersion = 1
	}
}

func checkTargetHeaders(v *ValidationError, headers map[string]string) {
	const f = "action.target.headers"
	if len(headers) > MaxTargetHeaders {
		v.Add(f, fmt.Sprintf("must have at most %d entries", MaxTargetHeaders))
		return
	}
	for k, val := range headers {
		switch {
		case !validHeaderName(k):
			v.Add(f, fmt.Sprintf("%q is not a valid header name", k))
		case refusedTargetHeaders[k]:
			v.Add(f, fmt.Sprintf("%s is set by the server or HTTP itself (use secret with auth bearer for Authorization)", k))
		case len(val) > maxTargetHeaderValue || strings.ContainsAny(val, "\r\n\x00"):
			v.Add(f, fmt.Sprintf("value of %s must be at most %d bytes on one line", k, maxTargetHeaderValue))
		default:
			continue
		}
		return
	}
}

// validHeaderName is RFC 9110's token.
func validHeaderName(k string) bool {
	if k == "" || len(k) > maxTargetHeaderNameSize {
		return false
	}
	for _, c := range []byte(k) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// targetHost is the lane an HTTP target's runs wait in: its URL's host
// (with the port when given), lower-cased.
func targetHost(t *models.Target) string {
	u, err := url.Parse(t.URL)
	if err != nil {
		return "invalid"
	}
	return strings.ToLower(u.Host)
}

// saveTargetSecret writes or removes the schedule's target secret in the
// change's transaction, when the change gave one.
func saveTargetSecret(ctx context.Context, tx bun.IDB, scheduleULID string, t *models.Target, now time.Time) error {
	if t == nil || t.Secret == nil {
		return nil
	}
	if *t.Secret == "" {
		return models.DeleteScheduleSecret(ctx, tx, scheduleULID)
	}
	return models.SaveScheduleSecret(ctx, tx, &models.ScheduleSecret{ScheduleULID: scheduleULID, TargetSecret: *t.Secret, UpdatedAt: now})
}

// keepTargetSecret stores what an update of the action did to the secret:
// a new one written, or the row removed when the secret was cleared or the
// target is no longer HTTP.
func (s *Service) keepTargetSecret(ctx context.Context, tx bun.IDB, sch *models.Schedule, now time.Time) error {
	t := sch.Action.Target
	if !IsHTTP(t) || t.SecretVersion == 0 {
		return models.DeleteScheduleSecret(ctx, tx, sch.ID)
	}
	return saveTargetSecret(ctx, tx, sch.ID, t, now)
}

// TargetText spells a target on one line for diffs and the CLI: its kind,
// then method and URL, timeout, headers (names only), auth and whether a
// secret is set — never the secret.
func TargetText(t *models.Target) string {
	t = normalizeTarget(t)
	if !IsHTTP(t) {
		return models.TargetWorker
	}
	parts := []string{"http", t.Method, t.URL, fmt.Sprintf("timeout=%ds", t.TimeoutSeconds)}
	if len(t.Headers) > 0 {
		parts = append(parts, "headers="+pairsText(t.Headers))
	}
	if t.Auth != "" {
		parts = append(parts, "auth="+t.Auth)
	}
	if t.SecretVersion > 0 {
		parts = append(parts, fmt.Sprintf("secret=set(v%d)", t.SecretVersion))
	}
	return strings.Join(parts, " ")
}
