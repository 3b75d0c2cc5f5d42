package scheduling

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/tidelinehq/tideline/models"
)

// Notifier health and redelivery (docs/NOTIFICATIONS.md "Notifier health"):
// the dispatcher records every attempt's outcome per notifier; an operator
// sends dead deliveries back, one or all, each with a fresh retry window.

// MaxRedeliver caps the dead deliveries one redeliver-all request sends
// back, in one transaction; the answer says whether more remain.
const MaxRedeliver = 500

// EventNotifierRedelivered records in a notifier's trail who sent which
// dead deliveries back.
const EventNotifierRedelivered = "NotifierRedelivered"

// NotifierHealth returns the health of the given notifiers by notifier ID.
func (s *Service) NotifierHealth(ctx context.Context, list []models.Notifier) (map[string]models.NotifierHealth, error) {
	ids := make([]string, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	return models.NotifierHealthOf(ctx, s.db, ids)
}

// FailingNotifiers returns the namespace's notifiers whose latest attempt
// failed, by name, with their health: what the registry's banner names.
func (s *Service) FailingNotifiers(ctx context.Context, namespace string) ([]models.Notifier, map[string]models.NotifierHealth, error) {
	list, err := s.ListNotifiers(ctx, namespace)
	if err != nil {
		return nil, nil, err
	}
	health, err := s.NotifierHealth(ctx, list)
	if err != nil {
		return nil, nil, err
	}
	failing := list[:0:0]
	for _, n := range list {
		if health[n.ID].FailingSince != nil {
			failing = append(failing, n)
		}
	}
	return failing, health, nil
}

// Redeliver sends one dead delivery of a notifier back to pending, due
// now, with a fresh retry window (409 delivery_not_dead otherwise).
func (s *Service) Redeliver(ctx context.Context, namespace, name, deliveryID string, cc *CommandContext) (*models.Delivery, error) {
	if err := cc.validate(); err != nil {
		return nil, err
	}
	var out *models.Delivery
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		nf, err := models.GetNotifier(ctx, tx, namespace, name)
		if errors.Is(err, sql.ErrNoRows) {
			return notifierNotFound(namespace, name)
		}
		if err != nil {
			return err
		}
		d, err := models.LockDelivery(ctx, tx, nf.ID, deliveryID)
		if errors.Is(err, sql.ErrNoRows) {
			return &NotFoundError{Code: CodeDeliveryNotFound, Message: fmt.Sprintf("delivery %q not found in notifier %q", deliveryID, name)}
		}
		if err != nil {
			return err
		}
		if d.Status != models.DeliveryDead {
			return conflict(CodeDeliveryNotDead, "delivery %q is %s: only a dead delivery can be redelivered", d.ID, d.Status)
		}
		if err := s.redeliver(ctx, tx, d); err != nil {
			return err
		}
		out = d
		return s.recordObjectChange(ctx, tx, namespace, ObjectKindNotifier, nf.Name, EventNotifierRedelivered, cc,
			redeliveredPayload(1, d.ID, cc))
	})
	return out, err
}

// RedeliverDead sends up to MaxRedeliver dead deliveries of a notifier
// back, oldest first, in one transaction; it returns how many and whether
// more remain. Nothing dead is not an error: it answers 0.
func (s *Service) RedeliverDead(ctx context.Context, namespace, name string, cc *CommandContext) (n int, more bool, err error) {
	if err := cc.validate(); err != nil {
		return 0, false, err
	}
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		nf, err := models.GetNotifier(ctx, tx, namespace, name)
		if errors.Is(err, sql.ErrNoRows) {
			return notifierNotFound(namespace, name)
		}
		if err != nil {
			return err
		}
		dead, err := models.LockDeadDeliveries(ctx, tx, nf.ID, MaxRedeliver+1)
		if err != nil {
			return err
		}
		if more = len(dead) > MaxRedeliver; more {
			dead = dead[:MaxRedeliver]
		}
		for i := range dead {
			if err := s.redeliver(ctx, tx, &dead[i]); err != nil {
				return err
			}
		}
		n = len(dead)
		if n == 0 {
			return nil
		}
		return s.recordObjectChange(ctx, tx, namespace, ObjectKindNotifier, nf.Name, EventNotifierRedelivered, cc,
			redeliveredPayload(n, "", cc))
	})
	return n, more, err
}

// redeliver makes one locked dead delivery pending again, due now. Its
// attempts count again from zero, so the retry delays start short; the
// last error stays until the next attempt replaces it.
func (s *Service) redeliver(ctx context.Context, tx bun.IDB, d *models.Delivery) error {
	now := s.now()
	d.Status, d.Attempts, d.NextAttemptAt, d.RedeliveredAt, d.UpdatedAt = models.DeliveryPending, 0, &now, &now, now
	return models.UpdateDelivery(ctx, tx, d)
}

// redeliveredPayload is a NotifierRedelivered event's payload: how many,
// which one when one, and the operator's reason when given (object events
// carry no reason of their own).
func redeliveredPayload(n int, deliveryID string, cc *CommandContext) map[string]any {
	p := map[string]any{"deliveries": n}
	if deliveryID != "" {
		p["delivery_id"] = deliveryID
	}
	if cc != nil && cc.Reason != "" {
		p["reason"] = cc.Reason
	}
	return p
}
