-- The due queue (issue 22; the PostgreSQL migration says why): the claim
-- order (next_fire_at, schedule_ulid) of the schedules that can fire, kept
-- by triggers from whatever writes workflow_schedules. SQLite rewrites a
-- row in place and gains nothing in bytes; the table is here so that both
-- databases answer "what is due" with the same queries.
CREATE TABLE workflow_schedule_due (
    next_fire_at  text NOT NULL,
    schedule_ulid text NOT NULL,
    PRIMARY KEY (next_fire_at, schedule_ulid)
) WITHOUT ROWID;

INSERT INTO workflow_schedule_due (next_fire_at, schedule_ulid)
    SELECT next_fire_at, id FROM workflow_schedules WHERE status = 'active' AND next_fire_at IS NOT NULL;

CREATE TRIGGER workflow_schedules_due_insert AFTER INSERT ON workflow_schedules
    WHEN NEW.status = 'active' AND NEW.next_fire_at IS NOT NULL
BEGIN
    INSERT INTO workflow_schedule_due (next_fire_at, schedule_ulid) VALUES (NEW.next_fire_at, NEW.id);
END;

CREATE TRIGGER workflow_schedules_due_update AFTER UPDATE OF status, next_fire_at ON workflow_schedules
    WHEN OLD.status IS NOT NEW.status OR OLD.next_fire_at IS NOT NEW.next_fire_at
BEGIN
    DELETE FROM workflow_schedule_due WHERE next_fire_at = OLD.next_fire_at AND schedule_ulid = OLD.id;
    INSERT INTO workflow_schedule_due (next_fire_at, schedule_ulid)
        SELECT NEW.next_fire_at, NEW.id WHERE NEW.status = 'active' AND NEW.next_fire_at IS NOT NULL;
END;

CREATE TRIGGER workflow_schedules_due_delete AFTER DELETE ON workflow_schedules
BEGIN
    DELETE FROM workflow_schedule_due WHERE next_fire_at = OLD.next_fire_at AND schedule_ulid = OLD.id;
END;

DROP INDEX workflow_schedules_status_next_fire_at_id_idx;

-- Recent actions leave the schedule row for a ring of ten rows per
-- schedule (the PostgreSQL migration says why; here it keeps the two
-- schemas alike and the fire's write small).
CREATE TABLE workflow_schedule_recent_actions (
    schedule_ulid   text NOT NULL,
    slot            integer NOT NULL,
    n               integer NOT NULL,
    outcome         text NOT NULL,
    instance_id     text,
    run_id          text,
    fired_at        text NOT NULL,
    occurrence_time text NOT NULL,
    fire_lag_ms     integer NOT NULL,
    reason          text,
    PRIMARY KEY (schedule_ulid, slot)
) WITHOUT ROWID;

ALTER TABLE workflow_schedules ADD COLUMN actions_count integer NOT NULL DEFAULT 0;

-- The stored list is newest first: its entry at key k (from 0) is action
-- n = length - 1 - k.
INSERT INTO workflow_schedule_recent_actions (schedule_ulid, slot, n, outcome, instance_id, run_id, fired_at,
        occurrence_time, fire_lag_ms, reason)
    SELECT s.id, (json_array_length(s.recent_actions) - 1 - a.key) % 10, json_array_length(s.recent_actions) - 1 - a.key,
        json_extract(a.value, '$.outcome'), NULLIF(json_extract(a.value, '$.instance_id'), ''),
        NULLIF(json_extract(a.value, '$.run_id'), ''), json_extract(a.value, '$.fired_at'),
        json_extract(a.value, '$.occurrence_time'), COALESCE(json_extract(a.value, '$.fire_lag_ms'), 0),
        NULLIF(json_extract(a.value, '$.reason'), '')
    FROM workflow_schedules AS s, json_each(s.recent_actions) AS a
    WHERE json_array_length(s.recent_actions) - 1 - a.key < 10;
UPDATE workflow_schedules SET actions_count = json_array_length(recent_actions) WHERE recent_actions <> '[]';
ALTER TABLE workflow_schedules DROP COLUMN recent_actions;

-- A fire's audit event, ScheduleTriggered, in typed columns (issue 22; the
-- PostgreSQL migration says why): its facts in these columns, the payload
-- keeping only what is not one. scheduling/audit.go (storedForm and
-- servedPayload) serves the payload as before. Null on other event types
-- and on every ScheduleTriggered stored before this migration.
ALTER TABLE workflow_schedule_history_events ADD COLUMN trigger_number integer;
ALTER TABLE workflow_schedule_history_events ADD COLUMN occurrence_time text;
ALTER TABLE workflow_schedule_history_events ADD COLUMN trigger_outcome text;
ALTER TABLE workflow_schedule_history_events ADD COLUMN effective_overlap_policy text;
