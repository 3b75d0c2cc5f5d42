-- Run outcomes (retries, health, pause on failure).
--
-- failures_count used to count fires that could not start; it is now
-- start_failures_count, and failures_count counts unsuccessful finished runs
-- in workflow_schedule_health. Health lives in its own table because runs
-- end in transactions that lock the run first (workers, the deadline sweep)
-- while the tick locks schedules first: a counter on the schedule row would
-- give those transactions opposite lock orders. Health rows are written
-- last in a transaction, in schedule order, so they never close a cycle.
ALTER TABLE workflow_schedules RENAME COLUMN failures_count TO start_failures_count;
ALTER TABLE workflow_schedules ADD COLUMN pause_after_failures integer;

-- A run waiting for its next attempt is pending with available_at in the
-- future; the retry policy and run timeout are copied from the action when
-- the run starts, so an edit of the schedule does not change runs in flight.
ALTER TABLE workflow_runs ADD COLUMN available_at timestamptz;
ALTER TABLE workflow_runs ADD COLUMN retry_policy jsonb;
ALTER TABLE workflow_runs ADD COLUMN run_timeout_seconds bigint;

CREATE TABLE workflow_schedule_health (
    schedule_ulid        text PRIMARY KEY REFERENCES workflow_schedules (id),
    consecutive_failures bigint NOT NULL DEFAULT 0,
    failures_count       bigint NOT NULL DEFAULT 0,
    -- consecutive_failures when the scheduler last paused the schedule for
    -- them: it pauses again only after a further failure.
    paused_at_failures   bigint NOT NULL DEFAULT 0,
    last_run_id          text,
    last_run_status      text,
    last_run_finished_at timestamptz,
    last_run_error       text,
    -- The last 10 finished runs, newest first: the registry's strip.
    recent_runs          jsonb NOT NULL DEFAULT '[]',
    updated_at           timestamptz NOT NULL
);
-- Failing schedules are few: the pause-on-failure pass and the registry's
-- health=failing filter start from them.
CREATE INDEX workflow_schedule_health_failing_idx ON workflow_schedule_health (schedule_ulid) WHERE consecutive_failures > 0;

INSERT INTO workflow_schedule_health (schedule_ulid, failures_count, consecutive_failures, updated_at)
SELECT s.id,
       (SELECT count(*) FROM workflow_runs r WHERE r.workflow_schedule_id = s.id AND r.status IN ('failed', 'timed_out')),
       (SELECT count(*) FROM workflow_runs r WHERE r.workflow_schedule_id = s.id AND r.status IN ('failed', 'timed_out')
           AND r.finished_at > COALESCE((SELECT max(c.finished_at) FROM workflow_runs c
                                         WHERE c.workflow_schedule_id = s.id AND c.status = 'completed'), '-infinity')),
       now()
FROM workflow_schedules s;
UPDATE workflow_schedule_health h SET last_run_id = (
    SELECT r.id FROM workflow_runs r WHERE r.workflow_schedule_id = h.schedule_ulid AND r.finished_at IS NOT NULL
    ORDER BY r.finished_at DESC, r.id DESC LIMIT 1);
UPDATE workflow_schedule_health h SET last_run_status = r.status, last_run_finished_at = r.finished_at, last_run_error = r.failure_message
FROM workflow_runs r WHERE r.id = h.last_run_id;
UPDATE workflow_schedule_health h SET recent_runs = COALESCE((
    SELECT jsonb_agg(jsonb_build_object('run_id', r.id, 'status', r.status, 'occurrence_ms', (EXTRACT(EPOCH FROM r.occurrence_time) * 1000)::bigint,
        'duration_ms', (EXTRACT(EPOCH FROM (r.finished_at - r.started_at)) * 1000)::bigint) ORDER BY r.finished_at DESC, r.id DESC)
    FROM (SELECT * FROM workflow_runs r WHERE r.workflow_schedule_id = h.schedule_ulid AND r.finished_at IS NOT NULL
          ORDER BY r.finished_at DESC, r.id DESC LIMIT 10) r), '[]');

-- Retention (CONTRACT §13) deletes finished runs oldest first, never a
-- schedule's latest run: these two indexes let it read only what it deletes.
CREATE INDEX workflow_runs_finished_idx ON workflow_runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX workflow_schedules_latest_run_idx ON workflow_schedules (latest_run_id);
