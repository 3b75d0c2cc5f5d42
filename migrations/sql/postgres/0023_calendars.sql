-- Calendars (issue 31, CONTRACT §16): namespace objects holding the dates
-- that schedules listing them in spec.exclude_calendars do not fire on.
-- dates and weekend are JSON arrays of strings ("2026-12-25", "sat");
-- version counts the changes, so a process's compiled calendars can tell
-- they are stale with one narrow query. Their history is object_audit_events
-- with object_kind 'calendar' (migration 0016). Schedules name calendars in
-- their spec; the service finds the users of one by reading the specs of the
-- namespace's live schedules, so nothing here points at a schedule.
CREATE TABLE calendars (
    namespace   text NOT NULL,
    name        text NOT NULL,
    description text NOT NULL,
    dates       jsonb NOT NULL,
    weekend     jsonb NOT NULL,
    version     bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (namespace, name)
);
