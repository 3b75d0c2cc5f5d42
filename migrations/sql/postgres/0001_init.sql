-- Tideline schema, PostgreSQL. Times are timestamptz (stored UTC); JSON is jsonb.

CREATE TABLE workflow_schedules (
    id                    text PRIMARY KEY,
    namespace             text NOT NULL,
    schedule_id           text NOT NULL,
    status                text NOT NULL,
    spec                  jsonb NOT NULL,
    action                jsonb NOT NULL,
    overlap_policy        text NOT NULL,
    jitter_seconds        integer NOT NULL DEFAULT 0,
    max_runs              bigint,
    remaining_actions     bigint,
    connection            text,
    queue                 text,
    labels                jsonb NOT NULL DEFAULT '{}',
    memo                  jsonb NOT NULL DEFAULT '{}',
    search_attributes     jsonb NOT NULL DEFAULT '{}',
    note                  text NOT NULL DEFAULT '',
    fires_count           bigint NOT NULL DEFAULT 0,
    failures_count        bigint NOT NULL DEFAULT 0,
    skipped_trigger_count bigint NOT NULL DEFAULT 0,
    last_skip_reason      text,
    last_skipped_at       timestamptz,
    next_fire_at          timestamptz,
    next_nominal_at       timestamptz,
    last_fired_at         timestamptz,
    latest_instance_id    text,
    latest_run_id         text,
    buffered_actions      jsonb NOT NULL DEFAULT '[]',
    buffer_depth          integer NOT NULL DEFAULT 0,
    recent_actions        jsonb NOT NULL DEFAULT '[]',
    last_sequence         bigint NOT NULL DEFAULT 0,
    paused_at             timestamptz,
    deleted_at            timestamptz,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL
);
CREATE UNIQUE INDEX workflow_schedules_namespace_schedule_id_key ON workflow_schedules (namespace, schedule_id);
-- The loop's claim query: status = 'active' AND next_fire_at <= now ORDER BY next_fire_at.
CREATE INDEX workflow_schedules_status_next_fire_at_idx ON workflow_schedules (status, next_fire_at);
-- Buffer draining only looks at the few schedules that have something buffered.
CREATE INDEX workflow_schedules_buffered_idx ON workflow_schedules (status, id) WHERE buffer_depth > 0;

CREATE TABLE workflow_schedule_history_events (
    id                   text PRIMARY KEY,
    workflow_schedule_id text NOT NULL REFERENCES workflow_schedules (id),
    sequence             bigint NOT NULL,
    event_type           text NOT NULL,
    payload              jsonb NOT NULL,
    workflow_instance_id text,
    workflow_run_id      text,
    recorded_at          timestamptz NOT NULL
);
-- Gap-free, duplicate-free sequences; also the keyset index for history paging.
CREATE UNIQUE INDEX workflow_schedule_history_events_schedule_sequence_key
    ON workflow_schedule_history_events (workflow_schedule_id, sequence);

CREATE TABLE workflow_instances (
    id                   text PRIMARY KEY,
    namespace            text NOT NULL,
    instance_id          text NOT NULL,
    workflow_type        text NOT NULL,
    workflow_class       text NOT NULL DEFAULT '',
    workflow_schedule_id text REFERENCES workflow_schedules (id),
    schedule_id          text,
    status               text NOT NULL,
    latest_run_id        text,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL
);
-- The same occurrence can never start twice, even across scheduler replicas.
CREATE UNIQUE INDEX workflow_instances_namespace_instance_id_key ON workflow_instances (namespace, instance_id);

CREATE TABLE workflow_runs (
    id                    text PRIMARY KEY,
    namespace             text NOT NULL,
    workflow_instance_id  text NOT NULL REFERENCES workflow_instances (id),
    instance_id           text NOT NULL,
    workflow_schedule_id  text REFERENCES workflow_schedules (id),
    schedule_id           text,
    workflow_type         text NOT NULL,
    workflow_class        text NOT NULL DEFAULT '',
    input                 jsonb,
    output                jsonb,
    status                text NOT NULL,
    trigger               text NOT NULL,
    connection            text NOT NULL,
    queue                 text NOT NULL,
    attempt               integer NOT NULL DEFAULT 0,
    occurrence_time       timestamptz,
    worker_id             text,
    lease_expires_at      timestamptz,
    run_deadline_at       timestamptz,
    execution_deadline_at timestamptz,
    cancel_requested_at   timestamptz,
    failure_message       text,
    failure_type          text,
    last_sequence         bigint NOT NULL DEFAULT 0,
    created_at            timestamptz NOT NULL,
    started_at            timestamptz,
    finished_at           timestamptz,
    updated_at            timestamptz NOT NULL
);
-- Workers claim pending runs of one (namespace, connection, queue) oldest first.
CREATE INDEX workflow_runs_claim_idx ON workflow_runs (namespace, connection, queue, status, id);
-- Runs started by a schedule, newest first (keyset by id).
CREATE INDEX workflow_runs_schedule_idx ON workflow_runs (workflow_schedule_id, id);
-- Run listing per namespace (keyset by id) and the loop's lease/deadline sweep.
CREATE INDEX workflow_runs_namespace_idx ON workflow_runs (namespace, status, id);
CREATE INDEX workflow_runs_active_idx ON workflow_runs (status, lease_expires_at);

CREATE TABLE workflow_history_events (
    id              text PRIMARY KEY,
    workflow_run_id text NOT NULL REFERENCES workflow_runs (id),
    sequence        bigint NOT NULL,
    event_type      text NOT NULL,
    payload         jsonb NOT NULL,
    recorded_at     timestamptz NOT NULL
);
CREATE UNIQUE INDEX workflow_history_events_run_sequence_key ON workflow_history_events (workflow_run_id, sequence);
