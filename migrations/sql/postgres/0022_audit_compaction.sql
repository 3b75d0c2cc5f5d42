-- Audit compaction (SPEC §19, docs/RETENTION.md "Audit compaction").
--
-- One row per schedule whose fire and skip events older than --retain-runs
-- were deleted: what is gone, so that history pages say so and the ledger
-- reads a missing run as compacted, not missed. Kept apart from
-- workflow_schedules so that neither the fire path (which updates the
-- schedule row each fire) nor a replica of the previous release (which
-- writes the whole schedule row) ever touches it.
CREATE TABLE workflow_schedule_compaction (
    workflow_schedule_id text PRIMARY KEY REFERENCES workflow_schedules (id),
    -- The first and the last compacted sequence: every fire and skip event
    -- with a sequence in [from_sequence, through_sequence] is gone (the
    -- lifecycle events in between are kept).
    from_sequence        bigint NOT NULL,
    through_sequence     bigint NOT NULL,
    fires                bigint NOT NULL,
    skips                bigint NOT NULL,
    -- The latest instant a compacted event stood for (its occurrence, or
    -- when it was recorded if later): ledger occurrences up to it without
    -- evidence read "compacted".
    through_at           timestamptz NOT NULL
);
