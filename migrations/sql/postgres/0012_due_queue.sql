-- The due queue (issue 22, "table bytes per fire").
--
-- Every fire moves its schedule's next_fire_at, and with next_fire_at in
-- an index of workflow_schedules each fire's new row version was a
-- non-HOT update: a full copy of the ~1 KB row plus an entry in each of
-- the table's indexes, kept until vacuum — more than the fire's run and
-- audit event together. The index now lives on a narrow table of its own,
-- one row per schedule that can fire (active, with a next fire), kept by
-- the triggers below from whatever writes workflow_schedules. A fire then
-- changes no indexed column of the schedule row, so PostgreSQL writes the
-- new version on the same page (a HOT update: no index entries, and the
-- old version is pruned in-page without waiting for vacuum); the fill
-- factor leaves each page the room for it. What a fire still leaves
-- behind in this table is one narrow row version (~120 bytes).
--
-- The queue's key is its only index: (next_fire_at, schedule_ulid) is the
-- claim order, and the triggers find a schedule's row by its old values.
CREATE TABLE workflow_schedule_due (
    next_fire_at  timestamptz NOT NULL,
    schedule_ulid text NOT NULL,
    PRIMARY KEY (next_fire_at, schedule_ulid)
);

INSERT INTO workflow_schedule_due (next_fire_at, schedule_ulid)
    SELECT next_fire_at, id FROM workflow_schedules WHERE status = 'active' AND next_fire_at IS NOT NULL;

-- Statement-level triggers with transition tables: a tick's UPDATE of
-- 500 schedules moves their queue rows with three set statements rather
-- than 500 trigger calls (row triggers cost a quarter of the fire path).
CREATE FUNCTION workflow_schedule_due_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO workflow_schedule_due (next_fire_at, schedule_ulid)
            SELECT n.next_fire_at, n.id FROM new_rows AS n WHERE n.status = 'active' AND n.next_fire_at IS NOT NULL;
    ELSIF TG_OP = 'DELETE' THEN
        DELETE FROM workflow_schedule_due AS d USING old_rows AS o
            WHERE d.next_fire_at = o.next_fire_at AND d.schedule_ulid = o.id;
    ELSE
        -- A schedule that stays due moves in place; others leave or join.
        UPDATE workflow_schedule_due AS d SET next_fire_at = n.next_fire_at
            FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id
            WHERE d.next_fire_at = o.next_fire_at AND d.schedule_ulid = o.id
                AND n.status = 'active' AND n.next_fire_at IS NOT NULL AND n.next_fire_at <> o.next_fire_at;
        DELETE FROM workflow_schedule_due AS d USING old_rows AS o JOIN new_rows AS n ON n.id = o.id
            WHERE d.next_fire_at = o.next_fire_at AND d.schedule_ulid = o.id
                AND NOT (n.status = 'active' AND n.next_fire_at IS NOT NULL);
        INSERT INTO workflow_schedule_due (next_fire_at, schedule_ulid)
            SELECT n.next_fire_at, n.id FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id
            WHERE n.status = 'active' AND n.next_fire_at IS NOT NULL
                AND NOT (o.status = 'active' AND o.next_fire_at IS NOT NULL);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER workflow_schedules_due_insert AFTER INSERT ON workflow_schedules
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION workflow_schedule_due_sync();
CREATE TRIGGER workflow_schedules_due_update AFTER UPDATE ON workflow_schedules
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION workflow_schedule_due_sync();
CREATE TRIGGER workflow_schedules_due_delete AFTER DELETE ON workflow_schedules
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION workflow_schedule_due_sync();

DROP INDEX workflow_schedules_status_next_fire_at_id_idx;
-- Room on each page for a schedule's next version (rows are ~1 KB). It
-- applies to pages written from now on; existing ones gain it as their
-- rows move.
ALTER TABLE workflow_schedules SET (fillfactor = 50);

-- Recent actions (the last ten fires, skips and buffers of a schedule)
-- leave the schedule row. As a JSON list in the row they were ~230 bytes
-- an entry, rewritten whole by every fire, and they made the row grow
-- until its new versions no longer fitted its page. Now each schedule
-- has a ring of ten rows, slot = n % 10 where n numbers its actions
-- (actions_count on the schedule is the next n): a fire overwrites one
-- slot in place, a HOT update of a fixed-size row, and adds nothing once
-- the ring is full. The fill factor leaves room for those new versions.
CREATE TABLE workflow_schedule_recent_actions (
    schedule_ulid   text NOT NULL,
    slot            smallint NOT NULL,
    n               bigint NOT NULL,
    outcome         text NOT NULL,
    instance_id     text,
    run_id          text,
    fired_at        timestamptz NOT NULL,
    occurrence_time timestamptz NOT NULL,
    fire_lag_ms     bigint NOT NULL,
    reason          text,
    PRIMARY KEY (schedule_ulid, slot)
) WITH (fillfactor = 80);

ALTER TABLE workflow_schedules ADD COLUMN actions_count bigint NOT NULL DEFAULT 0;

-- The stored list is newest first: its k-th entry (from 1) is action
-- n = length - k.
INSERT INTO workflow_schedule_recent_actions (schedule_ulid, slot, n, outcome, instance_id, run_id, fired_at,
        occurrence_time, fire_lag_ms, reason)
    SELECT s.id, ((jsonb_array_length(s.recent_actions) - a.k) % 10)::smallint, jsonb_array_length(s.recent_actions) - a.k,
        a.e->>'outcome', NULLIF(a.e->>'instance_id', ''), NULLIF(a.e->>'run_id', ''), (a.e->>'fired_at')::timestamptz,
        (a.e->>'occurrence_time')::timestamptz, COALESCE((a.e->>'fire_lag_ms')::bigint, 0), NULLIF(a.e->>'reason', '')
    FROM workflow_schedules AS s, jsonb_array_elements(s.recent_actions) WITH ORDINALITY AS a (e, k)
    WHERE jsonb_array_length(s.recent_actions) - a.k < 10;
UPDATE workflow_schedules SET actions_count = jsonb_array_length(recent_actions) WHERE recent_actions <> '[]'::jsonb;
ALTER TABLE workflow_schedules DROP COLUMN recent_actions;

-- A fire's audit event, ScheduleTriggered, in typed columns (issue 22,
-- "table bytes per fire"). Its jsonb payload was 203 of the row's ~390
-- bytes, kept for the schedule's lifetime. Its facts now live in these
-- columns, and the payload keeps only what is not one: the command context,
-- and not even that when it is the scheduler's own, so a regular fire
-- stores '{}' (~235 bytes a row, BenchmarkFireThroughput). Readers see the
-- payload as before: scheduling/audit.go (storedForm, servedPayload) is
-- the one place that knows the stored form. The columns are null on other
-- event types and on every ScheduleTriggered stored before this migration,
-- whose payload still holds every key; no existing row is rewritten. (A
-- new row of another type with a null column pays 8 bytes more: its null
-- bitmap no longer fits the tuple header's padding.)
--
-- Fixed-width columns first: after recorded_at (8-aligned) they need no
-- padding, and the two short texts after them none either.
ALTER TABLE workflow_schedule_history_events ADD COLUMN trigger_number bigint;
ALTER TABLE workflow_schedule_history_events ADD COLUMN occurrence_time timestamptz;
ALTER TABLE workflow_schedule_history_events ADD COLUMN trigger_outcome text;
ALTER TABLE workflow_schedule_history_events ADD COLUMN effective_overlap_policy text;
