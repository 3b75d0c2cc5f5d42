-- The audit trail of namespace objects other than schedules (notifiers,
-- calendars); see the PostgreSQL migration of the same number.
CREATE TABLE object_audit_events (
    id          text PRIMARY KEY,
    namespace   text NOT NULL,
    object_kind text NOT NULL,
    object_name text NOT NULL,
    event_type  text NOT NULL,
    actor       text NOT NULL,
    source      text NOT NULL,
    request_id  text NOT NULL,
    payload     text NOT NULL,
    recorded_at text NOT NULL
);

CREATE INDEX object_audit_events_object_idx ON object_audit_events (namespace, object_kind, object_name, id);
