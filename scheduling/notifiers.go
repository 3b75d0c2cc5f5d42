package scheduling

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/database"
	"github.com/tidelinehq/tideline/models"
	"github.com/tidelinehq/tideline/notify"
)

// Bounds of notifier input (CONTRACT §11): each notice is fanned out to every
// notifier of its namespace inside the fact's transaction, so both the
// number of notifiers and what each one matches on stay small.
const (
	MaxNotifiersPerNamespace = 50
	MaxNotifierNameLength    = 64
	MaxSelectorEntries       = 16
	MinSecretLength          = 16
	MaxSecretLength          = 256
)

var notifierNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// NotifierInput creates a notifier or, with nil fields left alone, changes
// one.
type NotifierInput struct {
	Name          string
	URL           *string
	Format        *string
	Events        []string // nil: unchanged (update) / required (create)
	LabelSelector map[string]string
	// Secret signs deliveries; generated when empty on create. RotateSecret
	// generates a new one on update.
	Secret       *string
	RotateSecret bool
}

// NotifierResult is a stored notifier; Secret is set only by the calls
// that made it (create, rotate): the secret is shown once.
type NotifierResult struct {
	Notifier *models.Notifier
	Secret   string
}

func notifierNotFound(namespace, name string) error {
	return &NotFoundError{Code: CodeNotifierNotFound, Message: fmt.Sprintf("notifier %q not found in namespace %q", name, namespace)}
}

// validateNotifier checks a notifier as it would be stored.
func (s *Service) validateNotifier(n *models.Notifier, secretGiven *string) error {
	v := &ValidationError{Code: CodeValidationFailed}
	if !notifierNamePattern.MatchString(n.Name) {
		v.Add("name", fmt.Sprintf("must be 1-%d characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit", MaxNotifierNameLength))
	}
	if n.URL == "" {
		v.Add("url", "is required")
	} else if err := notify.CheckURL(n.URL, s.notify.AllowPrivate); err != nil {
		v.Add("url", err.Error())
	}
	if n.Format != notify.FormatJSON && n.Format != notify.FormatSlack {
		v.Add("format", "must be json or slack")
	}
	if len(n.Events) == 0 {
		v.Add("events", "must list at least one of "+strings.Join(notify.Events, ", "))
	}
	seen := map[string]bool{}
	for _, e := range n.Events {
		if !slices.Contains(notify.Events, e) {
			v.Add("events", fmt.Sprintf("unknown event %q; want any of %s", e, strings.Join(notify.Events, ", ")))
		} else if seen[e] {
			v.Add("events", fmt.Sprintf("lists %q twice", e))
		}
		seen[e] = true
	}
	if len(n.LabelSelector) > MaxSelectorEntries {
		v.Add("label_selector", fmt.Sprintf("must have at most %d entries", MaxSelectorEntries))
	} else {
		validateStringMap(v, "label_selector", n.LabelSelector)
	}
	if secretGiven != nil {
		if l := utf8.RuneCountInString(*secretGiven); l < MinSecretLength || l > MaxSecretLength {
			v.Add("secret", fmt.Sprintf("must be %d-%d characters (omit it to have one generated)", MinSecretLength, MaxSecretLength))
		}
	}
	return v.OrNil()
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails on supported platforms
	return "whsec_" + hex.EncodeToString(b)
}

// CreateNotifier stores a new notifier of the namespace; cc (who asked) is
// recorded in its trail (NotifierHistory).
func (s *Service) CreateNotifier(ctx context.Context, namespace string, in NotifierInput, cc *CommandContext) (*NotifierResult, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	now := s.now()
	n := &models.Notifier{
		ID: s.ids.newAt(now), Namespace: namespace, Name: in.Name, Format: notify.FormatJSON,
		Events: in.Events, LabelSelector: in.LabelSelector, CreatedAt: now, UpdatedAt: now,
	}
	if in.URL != nil {
		n.URL = *in.URL
	}
	if in.Format != nil {
		n.Format = *in.Format
	}
	if n.LabelSelector == nil {
		n.LabelSelector = map[string]string{}
	}
	if in.Secret != nil && *in.Secret != "" {
		n.Secret = *in.Secret
	} else {
		in.Secret, n.Secret = nil, newSecret()
	}
	if err := s.validateNotifier(n, in.Secret); err != nil {
		return nil, err
	}
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		count, err := models.CountNotifiers(ctx, tx, namespace)
		if err != nil {
			return err
		}
		if count >= MaxNotifiersPerNamespace {
			return conflict(CodeTooManyNotifiers, "namespace %q has %d notifiers, the most allowed", namespace, MaxNotifiersPerNamespace)
		}
		err = models.InsertNotifier(ctx, tx, n)
		if err != nil && database.Of(tx).IsUniqueViolation(err) {
			return conflict(CodeNotifierAlreadyExists, "notifier %q already exists in namespace %q", n.Name, namespace)
		}
		if err != nil {
			return err
		}
		state := stateOf(n)
		state.SecretSource = "generated"
		if in.Secret != nil {
			state.SecretSource = "given"
		}
		return s.recordObjectChange(ctx, tx, namespace, ObjectKindNotifier, n.Name, EventNotifierCreated, cc, state)
	})
	if err != nil {
		return nil, err
	}
	return &NotifierResult{Notifier: n, Secret: n.Secret}, nil
}

// UpdateNotifier changes the given fields of a notifier; cc is recorded
// in its trail with what changed (a change that changes nothing records
// nothing).
func (s *Service) UpdateNotifier(ctx context.Context, namespace string, in NotifierInput, cc *CommandContext) (*NotifierResult, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	var out *NotifierResult
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n, err := models.GetNotifier(ctx, tx, namespace, in.Name)
		if errors.Is(err, sql.ErrNoRows) {
			return notifierNotFound(namespace, in.Name)
		}
		if err != nil {
			return err
		}
		before := *n
		if in.URL != nil {
			n.URL = *in.URL
		}
		if in.Format != nil {
			n.Format = *in.Format
		}
		if in.Events != nil {
			n.Events = in.Events
		}
		if in.LabelSelector != nil {
			n.LabelSelector = in.LabelSelector
		}
		out = &NotifierResult{Notifier: n}
		var given *string
		secret := ""
		switch {
		case in.Secret != nil:
			n.Secret, given, out.Secret, secret = *in.Secret, in.Secret, *in.Secret, "set"
		case in.RotateSecret:
			n.Secret = newSecret()
			out.Secret, secret = n.Secret, "rotated"
		}
		if err := s.validateNotifier(n, given); err != nil {
			return err
		}
		n.UpdatedAt = s.now()
		if err := models.UpdateNotifier(ctx, tx, n); err != nil {
			return err
		}
		diff := notifierDiff(&before, n, secret)
		if len(diff.Changed) == 0 {
			return nil
		}
		return s.recordObjectChange(ctx, tx, namespace, ObjectKindNotifier, n.Name, EventNotifierUpdated, cc, diff)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetNotifier returns one notifier.
func (s *Service) GetNotifier(ctx context.Context, namespace, name string) (*models.Notifier, error) {
	n, err := models.GetNotifier(ctx, s.db, namespace, name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notifierNotFound(namespace, name)
	}
	return n, err
}

// ListNotifiers returns the namespace's notifiers by name.
func (s *Service) ListNotifiers(ctx context.Context, namespace string) ([]models.Notifier, error) {
	return models.ListNotifiers(ctx, s.db, namespace)
}

// DeleteNotifier removes a notifier and its delivery log; deliveries not
// yet sent are dropped with it. Its trail stays, with cc's deletion last.
func (s *Service) DeleteNotifier(ctx context.Context, namespace, name string, cc *CommandContext) error {
	if err := cc.validate(); err != nil {
		return err
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n, err := models.GetNotifier(ctx, tx, namespace, name)
		if errors.Is(err, sql.ErrNoRows) {
			return notifierNotFound(namespace, name)
		}
		if err != nil {
			return err
		}
		if err := models.DeleteNotifier(ctx, tx, n.ID); err != nil {
			return err
		}
		return s.recordObjectChange(ctx, tx, namespace, ObjectKindNotifier, n.Name, EventNotifierDeleted, cc, stateOf(n))
	})
}

// DeliveryPage is one page of a notifier's delivery log, newest first.
type DeliveryPage struct {
	Deliveries []models.Delivery
	NextCursor string
	HasMore    bool
}

// ListDeliveries returns a page of a notifier's deliveries.
func (s *Service) ListDeliveries(ctx context.Context, namespace, name, cursor string, limit int) (*DeliveryPage, error) {
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
	n, err := s.GetNotifier(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	list, more, err := models.ListDeliveries(ctx, s.db, n.ID, cursor, limit)
	if err != nil {
		return nil, err
	}
	page := &DeliveryPage{Deliveries: list, HasMore: more}
	if more {
		page.NextCursor = list[len(list)-1].ID
	}
	return page, nil
}

// TestNotifier sends a test event to a notifier now and returns its
// delivery after the attempt. The row is written already claimed (sending,
// under a lease), so no dispatcher posts it meanwhile; a test is tried once
// and then is delivered or dead, never retried.
func (s *Service) TestNotifier(ctx context.Context, namespace, name, actor string) (*models.Delivery, error) {
	nf, err := s.GetNotifier(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	now := s.now()
	// A test is its own fact: a plain monotonic ULID, so tests sent in one
	// millisecond still list in the order they were sent.
	id := s.ids.newAt(now)
	n := notice{
		event: notify.EventTest, namespace: namespace, key: notify.EventTest + "|" + id,
		summary: fmt.Sprintf("Test notification for notifier %s", nf.Name),
		details: map[string]any{"requested_by": actor},
	}
	d, err := newDelivery(id, now, nf, &n)
	if err != nil {
		return nil, err
	}
	d.Status, d.Attempts, d.NextAttemptAt = models.DeliverySending, 1, ptrTime(now.Add(s.notify.lease()))
	if err := models.InsertDeliveries(ctx, s.db, []*models.Delivery{d}); err != nil {
		return nil, err
	}
	if _, err := s.attempt(ctx, d, nf); err != nil {
		return nil, err
	}
	return models.GetDelivery(ctx, s.db, nf.ID, d.ID)
}
