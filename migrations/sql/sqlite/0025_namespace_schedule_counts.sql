-- The registry's status chips (issue 35 goal 3; the PostgreSQL migration
-- says why): a namespace's active and paused schedules, kept by triggers
-- on workflow_schedules in the transaction that changes the rows they
-- count. SQLite has one writer at a time, so a namespace has one row
-- (part 0); the columns are PostgreSQL's, where concurrent writers may add
-- parts, and CountSchedules sums a namespace's rows on both.
CREATE TABLE namespace_schedule_counts (
    namespace text NOT NULL,
    part      integer NOT NULL DEFAULT 0,
    active    integer NOT NULL,
    paused    integer NOT NULL,
    PRIMARY KEY (namespace, part)
) WITHOUT ROWID;

INSERT INTO namespace_schedule_counts (namespace, part, active, paused)
    SELECT namespace, 0, SUM(status = 'active'), SUM(status = 'paused')
    FROM workflow_schedules WHERE status IN ('active', 'paused') GROUP BY namespace;

CREATE TRIGGER namespace_schedule_counts_insert AFTER INSERT ON workflow_schedules
    WHEN NEW.status IN ('active', 'paused')
BEGIN
    INSERT INTO namespace_schedule_counts (namespace, part, active, paused)
        VALUES (NEW.namespace, 0, NEW.status = 'active', NEW.status = 'paused')
        ON CONFLICT (namespace, part) DO UPDATE SET active = active + excluded.active, paused = paused + excluded.paused;
END;

-- Only when status or namespace changed: the fire path's update sets
-- status on every row it writes, and mostly to the value it had.
CREATE TRIGGER namespace_schedule_counts_update AFTER UPDATE OF status, namespace ON workflow_schedules
    WHEN OLD.status IS NOT NEW.status OR OLD.namespace IS NOT NEW.namespace
BEGIN
    INSERT INTO namespace_schedule_counts (namespace, part, active, paused)
        SELECT OLD.namespace, 0, -(OLD.status = 'active'), -(OLD.status = 'paused') WHERE OLD.status IN ('active', 'paused')
        ON CONFLICT (namespace, part) DO UPDATE SET active = active + excluded.active, paused = paused + excluded.paused;
    INSERT INTO namespace_schedule_counts (namespace, part, active, paused)
        SELECT NEW.namespace, 0, NEW.status = 'active', NEW.status = 'paused' WHERE NEW.status IN ('active', 'paused')
        ON CONFLICT (namespace, part) DO UPDATE SET active = active + excluded.active, paused = paused + excluded.paused;
END;

-- The purge of soft-deleted schedules passes uncounted.
CREATE TRIGGER namespace_schedule_counts_delete AFTER DELETE ON workflow_schedules
    WHEN OLD.status IN ('active', 'paused')
BEGIN
    INSERT INTO namespace_schedule_counts (namespace, part, active, paused)
        VALUES (OLD.namespace, 0, -(OLD.status = 'active'), -(OLD.status = 'paused'))
        ON CONFLICT (namespace, part) DO UPDATE SET active = active + excluded.active, paused = paused + excluded.paused;
END;
