-- Notifier health (docs/NOTIFICATIONS.md "Notifier health"): what the
-- dispatcher last saw of each notifier, written after every attempt. Kept
-- apart from notifiers so that an admin's edit (which writes the whole
-- notifier row, as does a replica of the previous release) never erases
-- it, and so that a fact's transaction, which reads notifiers, never waits
-- on a sender.
CREATE TABLE notifier_health (
    notifier_id     text PRIMARY KEY,
    last_success_at timestamptz,
    last_failure_at timestamptz,
    -- The first failed attempt after the last success; null while the
    -- latest attempt succeeded.
    failing_since   timestamptz,
    -- The error of the latest failed attempt.
    last_error      text
);

-- Pending and dead counts per notifier come from this index alone: it
-- leaves out delivered rows, the bulk of the log.
CREATE INDEX notification_deliveries_open_idx ON notification_deliveries (notifier_id, status)
    WHERE status IN ('pending', 'sending', 'dead');

-- When an operator last sent a dead delivery back to pending: its retry
-- window counts from then instead of from created_at.
ALTER TABLE notification_deliveries ADD COLUMN redelivered_at timestamptz;
