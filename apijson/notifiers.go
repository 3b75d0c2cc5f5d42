package apijson

import (
	"encoding/json"

	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/scheduling"
)

// Notifier is a notifier as the API shows it. Secret is present only in
// the answer that created or rotated it: the secret is shown once.
type Notifier struct {
	Name          string            `json:"name"`
	Namespace     string            `json:"namespace"`
	URL           string            `json:"url"`
	Format        string            `json:"format"`
	Events        []string          `json:"events"`
	LabelSelector map[string]string `json:"label_selector"`
	Secret        string            `json:"secret,omitempty"`
	CreatedAt     Time              `json:"created_at"`
	UpdatedAt     Time              `json:"updated_at"`
	// Health is present in GET /notifiers and GET /notifiers/{name}.
	Health *NotifierHealth `json:"health,omitempty"`
}

// NotifierHealth is what the dispatcher last saw of a notifier
// (docs/NOTIFICATIONS.md "Notifier health").
type NotifierHealth struct {
	// State is "ok" (the latest attempt succeeded), "failing" (it failed)
	// or "idle" (nothing attempted yet).
	State         string  `json:"state"`
	LastSuccessAt *Time   `json:"last_success_at"`
	LastFailureAt *Time   `json:"last_failure_at"`
	FailingSince  *Time   `json:"failing_since"`
	LastError     *string `json:"last_error"`
	// Pending counts deliveries still to be sent (pending or sending);
	// Dead those given up on, until retention removes them.
	Pending int64 `json:"pending"`
	Dead    int64 `json:"dead"`
}

// FromNotifierHealth renders a notifier's health.
func FromNotifierHealth(h models.NotifierHealth) *NotifierHealth {
	return &NotifierHealth{State: h.State(), LastSuccessAt: AtPtr(h.LastSuccessAt), LastFailureAt: AtPtr(h.LastFailureAt),
		FailingSince: AtPtr(h.FailingSince), LastError: h.LastError, Pending: h.Pending, Dead: h.Dead}
}

// FromNotifier renders a notifier; secret is "" unless it is to be shown.
func FromNotifier(n *models.Notifier, secret string) Notifier {
	return Notifier{Name: n.Name, Namespace: n.Namespace, URL: n.URL, Format: n.Format, Events: n.Events,
		LabelSelector: n.LabelSelector, Secret: secret, CreatedAt: At(n.CreatedAt), UpdatedAt: At(n.UpdatedAt)}
}

// NotifierList is the answer to GET /notifiers.
type NotifierList struct {
	Notifiers []Notifier `json:"notifiers"`
}

// FromNotifiers renders a list of notifiers (never their secrets) with
// their health by notifier ID.
func FromNotifiers(list []models.Notifier, health map[string]models.NotifierHealth) NotifierList {
	out := NotifierList{Notifiers: make([]Notifier, len(list))}
	for i := range list {
		out.Notifiers[i] = FromNotifier(&list[i], "")
		out.Notifiers[i].Health = FromNotifierHealth(health[list[i].ID])
	}
	return out
}

// RedeliverResult answers POST /notifiers/{name}/redeliver: how many dead
// deliveries went back to pending, and whether more remain.
type RedeliverResult struct {
	Redelivered int  `json:"redelivered"`
	More        bool `json:"more"`
}

// NotifierWrite is the body of POST /notifiers and PATCH /notifiers/{name}
// (where every field is optional and name must be absent or unchanged).
type NotifierWrite struct {
	Name          string            `json:"name,omitempty"`
	URL           *string           `json:"url,omitempty"`
	Format        *string           `json:"format,omitempty"`
	Events        []string          `json:"events,omitempty"`
	LabelSelector map[string]string `json:"label_selector,omitempty"`
	Secret        *string           `json:"secret,omitempty"`
	// RotateSecret (PATCH only) replaces the secret with a generated one,
	// shown in the answer.
	RotateSecret bool `json:"rotate_secret,omitempty"`
}

// Input is the service's form of the body.
func (w NotifierWrite) Input(name string) scheduling.NotifierInput {
	if name == "" {
		name = w.Name
	}
	return scheduling.NotifierInput{Name: name, URL: w.URL, Format: w.Format, Events: w.Events,
		LabelSelector: w.LabelSelector, Secret: w.Secret, RotateSecret: w.RotateSecret}
}

// Delivery is one row of a notifier's delivery log.
type Delivery struct {
	ID             string          `json:"id"`
	Notifier       string          `json:"notifier"`
	Event          string          `json:"event"`
	Status         string          `json:"status"`
	Attempts       int             `json:"attempts"`
	ScheduleID     *string         `json:"schedule_id"`
	RunID          *string         `json:"run_id"`
	NextAttemptAt  *Time           `json:"next_attempt_at"`
	LastAttemptAt  *Time           `json:"last_attempt_at"`
	LastStatusCode *int            `json:"last_status_code"`
	LastError      *string         `json:"last_error"`
	DeliveredAt    *Time           `json:"delivered_at"`
	CreatedAt      Time            `json:"created_at"`
	Document       json.RawMessage `json:"document"`
}

// FromDelivery renders a delivery of the named notifier.
func FromDelivery(d *models.Delivery, notifier string) Delivery {
	out := Delivery{ID: d.ID, Notifier: notifier, Event: d.EventType, Status: d.Status, Attempts: d.Attempts,
		ScheduleID: d.ScheduleID, RunID: d.RunID, LastAttemptAt: AtPtr(d.LastAttemptAt), LastStatusCode: d.LastStatusCode,
		LastError: d.LastError, DeliveredAt: AtPtr(d.DeliveredAt), CreatedAt: At(d.CreatedAt), Document: d.Document}
	// While sending, next_attempt_at holds the claim's lease: not a time
	// the delivery will be attempted, so not shown.
	if d.Status == models.DeliveryPending {
		out.NextAttemptAt = AtPtr(d.NextAttemptAt)
	}
	return out
}

// DeliveryPage is the answer to GET /notifiers/{name}/deliveries.
type DeliveryPage struct {
	Deliveries []Delivery `json:"deliveries"`
	NextCursor *string    `json:"next_cursor"`
	HasMore    bool       `json:"has_more"`
}

// FromDeliveryPage renders a page of the named notifier's log.
func FromDeliveryPage(p *scheduling.DeliveryPage, notifier string) DeliveryPage {
	out := DeliveryPage{Deliveries: make([]Delivery, len(p.Deliveries)), HasMore: p.HasMore}
	for i := range p.Deliveries {
		out.Deliveries[i] = FromDelivery(&p.Deliveries[i], notifier)
	}
	if p.HasMore {
		out.NextCursor = &p.NextCursor
	}
	return out
}

// ObjectEvent is one change in an object's trail (GET
// /notifiers/{name}/history; calendars' history has the same shape).
type ObjectEvent struct {
	ID         string          `json:"id"`
	EventType  string          `json:"event_type"`
	RecordedAt string          `json:"recorded_at"`
	Actor      string          `json:"actor"`
	Source     string          `json:"source"`
	RequestID  string          `json:"request_id,omitempty"`
	Payload    json.RawMessage `json:"payload"`
}

// ObjectHistory is one page of an object's trail, oldest first.
type ObjectHistory struct {
	Namespace  string        `json:"namespace"`
	Kind       string        `json:"kind"`
	Name       string        `json:"name"`
	Events     []ObjectEvent `json:"events"`
	NextCursor *string       `json:"next_cursor"`
	HasMore    bool          `json:"has_more"`
}

// FromObjectHistory renders a page of an object's trail.
func FromObjectHistory(p *scheduling.ObjectHistoryPage) ObjectHistory {
	out := ObjectHistory{Namespace: p.Namespace, Kind: p.Kind, Name: p.Name, Events: make([]ObjectEvent, len(p.Events)), HasMore: p.HasMore}
	for i, e := range p.Events {
		out.Events[i] = ObjectEvent{ID: e.ID, EventType: e.EventType, RecordedAt: scheduling.FormatTime(e.RecordedAt),
			Actor: e.Actor, Source: e.Source, RequestID: e.RequestID, Payload: e.Payload}
	}
	if p.HasMore {
		out.NextCursor = &p.NextCursor
	}
	return out
}
