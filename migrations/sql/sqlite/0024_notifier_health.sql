-- Notifier health; see the PostgreSQL migration of the same number.
CREATE TABLE notifier_health (
    notifier_id     text PRIMARY KEY,
    last_success_at text,
    last_failure_at text,
    failing_since   text,
    last_error      text
);

CREATE INDEX notification_deliveries_open_idx ON notification_deliveries (notifier_id, status)
    WHERE status IN ('pending', 'sending', 'dead');

ALTER TABLE notification_deliveries ADD COLUMN redelivered_at text;
