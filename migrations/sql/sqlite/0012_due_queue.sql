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

-- A fire's audit event, ScheduleTriggered, in typed columns (issue 22; the
-- PostgreSQL migration says why): its facts in these columns, the payload
-- keeping only what is not one. scheduling/audit.go (storedForm and
-- servedPayload) serves the payload as before. Null on other event types
-- and on every ScheduleTriggered stored before this migration.
ALTER TABLE workflow_schedule_history_events ADD COLUMN trigger_number integer;
ALTER TABLE workflow_schedule_history_events ADD COLUMN occurrence_time text;
ALTER TABLE workflow_schedule_history_events ADD COLUMN trigger_outcome text;
ALTER TABLE workflow_schedule_history_events ADD COLUMN effective_overlap_policy text;
