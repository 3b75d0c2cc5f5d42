-- Run outcomes (retries, health, pause on failure); see the PostgreSQL
-- migration of the same number for why health has a table of its own.
ALTER TABLE workflow_schedules RENAME COLUMN failures_count TO start_failures_count;
ALTER TABLE workflow_schedules ADD COLUMN pause_after_failures integer;

ALTER TABLE workflow_runs ADD COLUMN available_at text;
ALTER TABLE workflow_runs ADD COLUMN retry_policy text;
ALTER TABLE workflow_runs ADD COLUMN run_timeout_seconds integer;

CREATE TABLE workflow_schedule_health (
    schedule_ulid        text PRIMARY KEY REFERENCES workflow_schedules (id),
    consecutive_failures integer NOT NULL DEFAULT 0,
    failures_count       integer NOT NULL DEFAULT 0,
    paused_at_failures   integer NOT NULL DEFAULT 0,
    last_run_id          text,
    last_run_status      text,
    last_run_finished_at text,
    last_run_error       text,
    recent_runs          text NOT NULL DEFAULT '[]',
    updated_at           text NOT NULL
);
CREATE INDEX workflow_schedule_health_failing_idx ON workflow_schedule_health (schedule_ulid) WHERE consecutive_failures > 0;

INSERT INTO workflow_schedule_health (schedule_ulid, failures_count, consecutive_failures, updated_at)
SELECT s.id,
       (SELECT count(*) FROM workflow_runs r WHERE r.workflow_schedule_id = s.id AND r.status IN ('failed', 'timed_out')),
       (SELECT count(*) FROM workflow_runs r WHERE r.workflow_schedule_id = s.id AND r.status IN ('failed', 'timed_out')
           AND r.finished_at > COALESCE((SELECT max(c.finished_at) FROM workflow_runs c
                                         WHERE c.workflow_schedule_id = s.id AND c.status = 'completed'), '')),
       strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')
FROM workflow_schedules s;
UPDATE workflow_schedule_health SET last_run_id = (
    SELECT r.id FROM workflow_runs r WHERE r.workflow_schedule_id = workflow_schedule_health.schedule_ulid AND r.finished_at IS NOT NULL
    ORDER BY r.finished_at DESC, r.id DESC LIMIT 1);
UPDATE workflow_schedule_health SET
    last_run_status = (SELECT r.status FROM workflow_runs r WHERE r.id = workflow_schedule_health.last_run_id),
    last_run_finished_at = (SELECT r.finished_at FROM workflow_runs r WHERE r.id = workflow_schedule_health.last_run_id),
    last_run_error = (SELECT r.failure_message FROM workflow_runs r WHERE r.id = workflow_schedule_health.last_run_id);
UPDATE workflow_schedule_health SET recent_runs = (
    SELECT json_group_array(json_object('run_id', r.id, 'status', r.status,
        'occurrence_ms', CAST(strftime('%s', r.occurrence_time) AS INTEGER) * 1000 + CAST(substr(strftime('%f', r.occurrence_time), 4, 3) AS INTEGER),
        'duration_ms', CAST(ROUND((julianday(r.finished_at) - julianday(r.started_at)) * 86400000) AS INTEGER)))
    FROM (SELECT * FROM workflow_runs r WHERE r.workflow_schedule_id = workflow_schedule_health.schedule_ulid
          AND r.finished_at IS NOT NULL ORDER BY r.finished_at DESC, r.id DESC LIMIT 10) r);

-- Retention (CONTRACT §13) deletes finished runs oldest first, never a
-- schedule's latest run: these two indexes let it read only what it deletes.
CREATE INDEX workflow_runs_finished_idx ON workflow_runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX workflow_schedules_latest_run_idx ON workflow_schedules (latest_run_id);
