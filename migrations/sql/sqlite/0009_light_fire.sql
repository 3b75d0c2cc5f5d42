-- A lighter fire (issue 22); see the PostgreSQL migration of the same
-- number. SQLite cannot drop a column that a foreign key names, so
-- workflow_runs is rebuilt without workflow_instance_id (the procedure of
-- https://www.sqlite.org/lang_altertable.html#otheralter; the migration
-- runner turns foreign-key enforcement off for it and checks every key
-- before committing).
CREATE TABLE workflow_runs_new (
    id                     text PRIMARY KEY,
    namespace              text NOT NULL,
    instance_id            text NOT NULL,
    workflow_schedule_id   text REFERENCES workflow_schedules (id),
    schedule_id            text,
    workflow_type          text NOT NULL,
    workflow_class         text NOT NULL DEFAULT '',
    input                  text,
    output                 text,
    status                 text NOT NULL,
    trigger                text NOT NULL,
    connection             text NOT NULL,
    queue                  text NOT NULL,
    attempt                integer NOT NULL DEFAULT 0,
    occurrence_time        text,
    worker_id              text,
    lease_expires_at       text,
    run_deadline_at        text,
    execution_deadline_at  text,
    cancel_requested_at    text,
    failure_message        text,
    failure_type           text,
    last_sequence          integer NOT NULL DEFAULT 0,
    created_at             text NOT NULL,
    started_at             text,
    finished_at            text,
    updated_at             text NOT NULL,
    available_at           text,
    retry_policy           text,
    run_timeout_seconds    integer,
    worker_principal       text,
    start_deadline_at      text,
    trigger_number         integer,
    trigger_cron           text,
    trigger_timezone       text,
    trigger_overlap_policy text
);
INSERT INTO workflow_runs_new (id, namespace, instance_id, workflow_schedule_id, schedule_id, workflow_type, workflow_class,
    input, output, status, trigger, connection, queue, attempt, occurrence_time, worker_id, lease_expires_at, run_deadline_at,
    execution_deadline_at, cancel_requested_at, failure_message, failure_type, last_sequence, created_at, started_at,
    finished_at, updated_at, available_at, retry_policy, run_timeout_seconds, worker_principal, start_deadline_at)
SELECT id, namespace, instance_id, workflow_schedule_id, schedule_id, workflow_type, workflow_class,
    input, output, status, trigger, connection, queue, attempt, occurrence_time, worker_id, lease_expires_at, run_deadline_at,
    execution_deadline_at, cancel_requested_at, failure_message, failure_type, last_sequence, created_at, started_at,
    finished_at, updated_at, available_at, retry_policy, run_timeout_seconds, worker_principal, start_deadline_at
FROM workflow_runs;
DROP TABLE workflow_runs;
ALTER TABLE workflow_runs_new RENAME TO workflow_runs;
DROP TABLE workflow_instances;

CREATE UNIQUE INDEX workflow_runs_namespace_instance_id_key ON workflow_runs (namespace, instance_id);
CREATE INDEX workflow_runs_claim_idx ON workflow_runs (namespace, connection, queue, status, id);
CREATE INDEX workflow_runs_schedule_idx ON workflow_runs (workflow_schedule_id, id);
CREATE INDEX workflow_runs_namespace_idx ON workflow_runs (namespace, status, id);
CREATE INDEX workflow_runs_active_idx ON workflow_runs (status, lease_expires_at);
CREATE INDEX workflow_runs_execution_deadline_idx ON workflow_runs (execution_deadline_at)
    WHERE status IN ('pending', 'running') AND execution_deadline_at IS NOT NULL;
CREATE INDEX workflow_runs_run_deadline_idx ON workflow_runs (run_deadline_at)
    WHERE status IN ('pending', 'running') AND run_deadline_at IS NOT NULL;
CREATE INDEX workflow_runs_cancel_requested_idx ON workflow_runs (cancel_requested_at)
    WHERE status IN ('pending', 'running') AND cancel_requested_at IS NOT NULL;
CREATE INDEX workflow_runs_finished_idx ON workflow_runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX workflow_runs_start_deadline_idx ON workflow_runs (start_deadline_at)
    WHERE start_deadline_at IS NOT NULL AND status = 'pending';

-- As on PostgreSQL: retention finds a run's schedule by primary key, so
-- the index on latest_run_id, which every fire wrote, goes. (SQLite keeps
-- its foreign keys: they are an index probe there, not a trigger.)
DROP INDEX workflow_schedules_latest_run_idx;
