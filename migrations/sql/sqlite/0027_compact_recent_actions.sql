-- The ring of recent actions, compacted (issue 35; the PostgreSQL
-- migration says why and what a row stores now). SQLite cannot drop a
-- NOT NULL constraint, so the table is rebuilt with outcome and
-- fire_lag_ms nullable and the code and run_ulid columns added; an embedded database
-- has one process, so no older binary shares it during the rebuild.
CREATE TABLE workflow_schedule_recent_actions_0027 (
    schedule_ulid   text NOT NULL,
    slot            integer NOT NULL,
    n               integer NOT NULL,
    outcome         text,
    instance_id     text,
    run_id          text,
    fired_at        text NOT NULL,
    occurrence_time text NOT NULL,
    fire_lag_ms     integer,
    reason          text,
    code            integer,
    run_ulid        blob,
    PRIMARY KEY (schedule_ulid, slot)
) WITHOUT ROWID;

INSERT INTO workflow_schedule_recent_actions_0027 (schedule_ulid, slot, n, outcome, instance_id, run_id, fired_at,
        occurrence_time, fire_lag_ms, reason)
    SELECT schedule_ulid, slot, n, outcome, instance_id, run_id, fired_at, occurrence_time, fire_lag_ms, reason
    FROM workflow_schedule_recent_actions;
DROP TABLE workflow_schedule_recent_actions;
ALTER TABLE workflow_schedule_recent_actions_0027 RENAME TO workflow_schedule_recent_actions;
