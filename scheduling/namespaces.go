package scheduling

import (
	"context"

	"github.com/tidelinehq/tideline/models"
)

// MaxNamespaces bounds the namespaces the console lists for a viewer who
// may see all of them: a switcher of more would not be read anyway.
const MaxNamespaces = 100

// Namespaces returns the namespaces that hold live schedules (up to
// MaxNamespaces, in order), read from their status counts rather than
// from the schedules.
func (s *Service) Namespaces(ctx context.Context) ([]string, error) {
	return models.ListNamespaces(ctx, s.db, MaxNamespaces)
}

// NamespacesHolding returns which of namespaces (at most MaxNamespaces are
// looked at) hold a schedule with this ID, deleted ones included: the
// console's "not found here, but in …" hint.
func (s *Service) NamespacesHolding(ctx context.Context, scheduleID string, namespaces []string) ([]string, error) {
	if !ValidScheduleID(scheduleID) {
		return nil, nil
	}
	if len(namespaces) > MaxNamespaces {
		namespaces = namespaces[:MaxNamespaces]
	}
	return models.NamespacesHolding(ctx, s.db, scheduleID, namespaces)
}
