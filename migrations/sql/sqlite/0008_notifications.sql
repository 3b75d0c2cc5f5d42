-- Notifications (CONTRACT §11); see the PostgreSQL migration of the same number
-- for the reasons behind the layout.
ALTER TABLE workflow_schedules ADD COLUMN start_deadline_seconds integer;
ALTER TABLE workflow_runs ADD COLUMN start_deadline_at text;
CREATE INDEX workflow_runs_start_deadline_idx ON workflow_runs (start_deadline_at)
    WHERE start_deadline_at IS NOT NULL AND status = 'pending';

CREATE TABLE notifiers (
    id             text PRIMARY KEY,
    namespace      text NOT NULL,
    name           text NOT NULL,
    url            text NOT NULL,
    format         text NOT NULL,
    events         text NOT NULL,
    label_selector text NOT NULL,
    secret         text NOT NULL,
    created_at     text NOT NULL,
    updated_at     text NOT NULL,
    UNIQUE (namespace, name)
);

CREATE TABLE notification_deliveries (
    id               text PRIMARY KEY,
    namespace        text NOT NULL,
    notifier_id      text NOT NULL,
    event_type       text NOT NULL,
    schedule_id      text,
    run_id           text,
    document         text NOT NULL,
    status           text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  text,
    last_attempt_at  text,
    last_status_code integer,
    last_error       text,
    delivered_at     text,
    created_at       text NOT NULL,
    updated_at       text NOT NULL
);
CREATE INDEX notification_deliveries_due_idx ON notification_deliveries (next_attempt_at)
    WHERE status IN ('pending', 'sending');
CREATE INDEX notification_deliveries_notifier_idx ON notification_deliveries (notifier_id, id);

-- Retention deletes settled deliveries with the runs (--retain-runs).
CREATE INDEX notification_deliveries_settled_idx ON notification_deliveries (updated_at) WHERE status IN ('delivered', 'dead');
