-- Notifications (CONTRACT §11).
--
-- start_deadline_seconds: a run still pending that long after its
-- occurrence is reported as run_not_started. The run carries its own
-- deadline (start_deadline_at), cleared when a worker claims it or once it
-- has been reported, so the check reads a partial index that only holds
-- pending runs still owing a report — its size follows the queue, not the
-- table.
ALTER TABLE workflow_schedules ADD COLUMN start_deadline_seconds bigint;
ALTER TABLE workflow_runs ADD COLUMN start_deadline_at timestamptz;
CREATE INDEX workflow_runs_start_deadline_idx ON workflow_runs (start_deadline_at)
    WHERE start_deadline_at IS NOT NULL AND status = 'pending';

CREATE TABLE notifiers (
    id             text PRIMARY KEY,
    namespace      text NOT NULL,
    name           text NOT NULL,
    url            text NOT NULL,
    format         text NOT NULL,
    events         jsonb NOT NULL,
    label_selector jsonb NOT NULL,
    -- The HMAC key must be readable to sign, so it is stored as given; the
    -- API shows it once, when it is created or rotated.
    secret         text NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    UNIQUE (namespace, name)
);

-- The outbox: one row per (notifier, fact), written in the transaction that
-- records the fact. No foreign key to notifiers: a key check would make the
-- fact's transaction (a tick batch, a worker's fail) wait on an admin
-- editing the notifier; the dispatcher finds a deleted notifier itself.
CREATE TABLE notification_deliveries (
    id               text PRIMARY KEY,
    namespace        text NOT NULL,
    notifier_id      text NOT NULL,
    event_type       text NOT NULL,
    schedule_id      text,
    run_id           text,
    document         jsonb NOT NULL,
    -- pending | sending | delivered | dead
    status           text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    -- When pending: not before. When sending: the claim's lease end, after
    -- which another dispatcher may take the row over. Null once final.
    next_attempt_at  timestamptz,
    last_attempt_at  timestamptz,
    last_status_code integer,
    last_error       text,
    delivered_at     timestamptz,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX notification_deliveries_due_idx ON notification_deliveries (next_attempt_at)
    WHERE status IN ('pending', 'sending');
CREATE INDEX notification_deliveries_notifier_idx ON notification_deliveries (notifier_id, id);

-- Retention deletes settled deliveries with the runs (--retain-runs).
CREATE INDEX notification_deliveries_settled_idx ON notification_deliveries (updated_at) WHERE status IN ('delivered', 'dead');
