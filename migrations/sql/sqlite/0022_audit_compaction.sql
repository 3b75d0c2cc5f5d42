-- Audit compaction (SPEC §19); see the PostgreSQL migration of the same
-- number.
CREATE TABLE workflow_schedule_compaction (
    workflow_schedule_id text PRIMARY KEY REFERENCES workflow_schedules (id),
    from_sequence        integer NOT NULL,
    through_sequence     integer NOT NULL,
    fires                integer NOT NULL,
    skips                integer NOT NULL,
    through_at           text NOT NULL
);
