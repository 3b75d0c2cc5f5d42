package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// The audit trail of namespace objects other than schedules (migration
// 0016, docs/CONTRACT.md "Object history"): every change of a notifier —
// and, with the same table and calls, of a calendar — is one event with
// the actor, source and request ID of the command, written in the change's
// own transaction. A payload says what changed and never holds a secret.
const (
	ObjectKindNotifier = "notifier"

	EventNotifierCreated = "NotifierCreated"
	EventNotifierUpdated = "NotifierUpdated"
	EventNotifierDeleted = "NotifierDeleted"
)

// recordObjectChange appends one change of an object in tx.
func (s *Service) recordObjectChange(ctx context.Context, tx bun.IDB, namespace, kind, name, eventType string, cc *CommandContext, payload any) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	now := s.now()
	e := &models.ObjectAuditEvent{
		ID: s.ids.newAt(now), Namespace: namespace, ObjectKind: kind, ObjectName: name,
		EventType: eventType, Payload: body, RecordedAt: now,
	}
	if cc != nil {
		e.Actor, e.Source, e.RequestID = cc.Actor, cc.Source, cc.RequestID
	}
	return models.InsertObjectAuditEvent(ctx, tx, e)
}

// ObjectHistoryPage is one page of an object's trail, oldest first.
type ObjectHistoryPage struct {
	Namespace  string
	Kind, Name string
	Events     []models.ObjectAuditEvent
	NextCursor string // the last event's ID when HasMore
	HasMore    bool
}

// objectHistory reads a page of an object's trail; notFound answers for an
// object that has none (it never existed).
func (s *Service) objectHistory(ctx context.Context, namespace, kind, name, cursor string, limit int, notFound error) (*ObjectHistoryPage, error) {
	v := &ValidationError{Code: CodeValidationFailed}
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		v.Add("limit", fmt.Sprintf("must be between 1 and %d", MaxListLimit))
	}
	if cursor != "" && len(cursor) != 26 {
		v.Add("cursor", "is not a cursor returned by this API")
	}
	if err := v.OrNil(); err != nil {
		return nil, err
	}
	events, more, err := models.ListObjectAuditEvents(ctx, s.db, namespace, kind, name, cursor, limit)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 && cursor == "" {
		return nil, notFound
	}
	page := &ObjectHistoryPage{Namespace: namespace, Kind: kind, Name: name, Events: events, HasMore: more}
	if more {
		page.NextCursor = events[len(events)-1].ID
	}
	return page, nil
}

// NotifierHistory returns a page of a notifier's trail (also after it was
// deleted: the trail outlives it).
func (s *Service) NotifierHistory(ctx context.Context, namespace, name, cursor string, limit int) (*ObjectHistoryPage, error) {
	return s.objectHistory(ctx, namespace, ObjectKindNotifier, name, cursor, limit, notifierNotFound(namespace, name))
}

// notifierState is what a NotifierCreated records: the notifier as made,
// its URL as its origin only (a webhook URL's path and query often are a
// credential of their own, e.g. Slack's), and no secret.
type notifierState struct {
	URLOrigin     string            `json:"url_origin"`
	Format        string            `json:"format"`
	Events        []string          `json:"events"`
	LabelSelector map[string]string `json:"label_selector"`
	SecretSource  string            `json:"secret,omitempty"` // "given" or "generated"
}

func stateOf(n *models.Notifier) notifierState {
	return notifierState{URLOrigin: urlOrigin(n.URL), Format: n.Format, Events: n.Events, LabelSelector: n.LabelSelector}
}

// notifierChange is what a NotifierUpdated records: the names of the
// fields that changed, each changed value before and after (the URL by
// origin: from and to are equal when only its path or query changed), and
// whether the secret was replaced — never the secret.
type notifierChange struct {
	Changed       []string                   `json:"changed"`
	URLOrigin     *change[string]            `json:"url_origin,omitempty"`
	Format        *change[string]            `json:"format,omitempty"`
	Events        *change[[]string]          `json:"events,omitempty"`
	LabelSelector *change[map[string]string] `json:"label_selector,omitempty"`
	Secret        string                     `json:"secret,omitempty"` // "set" or "rotated"
}

type change[T any] struct {
	From T `json:"from"`
	To   T `json:"to"`
}

func notifierDiff(before, after *models.Notifier, secret string) notifierChange {
	c := notifierChange{Changed: []string{}, Secret: secret}
	if before.URL != after.URL {
		c.Changed = append(c.Changed, "url")
		c.URLOrigin = &change[string]{urlOrigin(before.URL), urlOrigin(after.URL)}
	}
	if before.Format != after.Format {
		c.Changed = append(c.Changed, "format")
		c.Format = &change[string]{before.Format, after.Format}
	}
	if !slices.Equal(before.Events, after.Events) {
		c.Changed = append(c.Changed, "events")
		c.Events = &change[[]string]{before.Events, after.Events}
	}
	if !mapsEqual(before.LabelSelector, after.LabelSelector) {
		c.Changed = append(c.Changed, "label_selector")
		c.LabelSelector = &change[map[string]string]{before.LabelSelector, after.LabelSelector}
	}
	if secret != "" {
		c.Changed = append(c.Changed, "secret")
	}
	return c
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// urlOrigin is scheme://host[:port] of a URL, "" when it has none.
func urlOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
