-- Backfills as durable jobs (SPEC §18); see the PostgreSQL migration of the
-- same number for the reasons behind the layout.
CREATE TABLE backfills (
    id                  text PRIMARY KEY,
    namespace           text NOT NULL,
    schedule_ulid       text NOT NULL,
    schedule_id         text NOT NULL,
    range_from          text NOT NULL,
    range_to            text NOT NULL,
    overlap_policy      text NOT NULL,
    only_times          text,
    max_per_minute      integer,
    max_concurrent_runs integer,
    status              text NOT NULL,
    total               integer NOT NULL,
    started             integer NOT NULL DEFAULT 0,
    skipped             integer NOT NULL DEFAULT 0,
    buffered            integer NOT NULL DEFAULT 0,
    failed              integer NOT NULL DEFAULT 0,
    cursor_at           text,
    error               text,
    pace_tokens         real NOT NULL DEFAULT 0,
    pace_at             text,
    pace_recent         text NOT NULL DEFAULT '[]',
    next_work_at        text NOT NULL,
    last_worked_at      text,
    created_by          text NOT NULL,
    source              text NOT NULL,
    reason              text NOT NULL DEFAULT '',
    request_id          text NOT NULL DEFAULT '',
    created_at          text NOT NULL,
    updated_at          text NOT NULL,
    finished_at         text
);
CREATE INDEX backfills_work_idx ON backfills (next_work_at) WHERE status = 'running';
CREATE INDEX backfills_namespace_idx ON backfills (namespace, id);
CREATE INDEX backfills_schedule_idx ON backfills (schedule_ulid, id);
CREATE INDEX workflow_runs_backfill_active_idx ON workflow_runs (namespace, instance_id)
    WHERE trigger = 'backfilled' AND status IN ('pending', 'running');
