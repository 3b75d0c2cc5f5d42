-- Run ends not yet folded into their schedule's health row; see the
-- PostgreSQL migration of the same number for why.
CREATE TABLE workflow_schedule_health_pending (
    schedule_ulid text NOT NULL,
    finished_at   text NOT NULL,
    run_id        text NOT NULL,
    status        text NOT NULL,
    occurrence_ms integer,
    duration_ms   integer,
    error_message text,
    PRIMARY KEY (schedule_ulid, finished_at, run_id)
);
