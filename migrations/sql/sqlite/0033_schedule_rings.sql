-- The ring of recent actions, one row a schedule: the PostgreSQL migration
-- of the same number says why and how the two tables are read together.
CREATE TABLE workflow_schedule_rings (
    schedule_ulid text PRIMARY KEY,
    ring          blob NOT NULL
) WITHOUT ROWID;
