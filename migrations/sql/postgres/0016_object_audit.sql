-- The audit trail of namespace objects other than schedules (issue 36):
-- notifiers now, calendars next (SPEC §16's GET /calendars/{name}/history
-- reads the same table with object_kind 'calendar'). Schedules keep their
-- own stream (workflow_schedule_history_events): its sequences and fire
-- events are a contract of their own. One row per change, in id (ULID)
-- order; the actor, source and request ID name who made it; payload holds
-- what changed, never a secret. Rows outlive their object: a deleted
-- notifier's trail stays readable under its name.
CREATE TABLE object_audit_events (
    id          text PRIMARY KEY,
    namespace   text NOT NULL,
    object_kind text NOT NULL,
    object_name text NOT NULL,
    event_type  text NOT NULL,
    actor       text NOT NULL,
    source      text NOT NULL,
    request_id  text NOT NULL,
    payload     jsonb NOT NULL,
    recorded_at timestamptz NOT NULL
);

-- One object's trail, paged by id.
CREATE INDEX object_audit_events_object_idx ON object_audit_events (namespace, object_kind, object_name, id);
