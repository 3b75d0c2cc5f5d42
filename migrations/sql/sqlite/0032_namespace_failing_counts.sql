-- The registry's Failing chip (issue 35 goal 3; the PostgreSQL migration
-- says why): a namespace's live schedules whose health row says
-- consecutive_failures > 0, kept beside the status counts of migration
-- 0025 by triggers on both tables. SQLite has one writer at a time, so
-- each trigger reads the other table as it is.
ALTER TABLE namespace_schedule_counts ADD COLUMN failing integer NOT NULL DEFAULT 0;

INSERT INTO namespace_schedule_counts (namespace, part, active, paused, failing)
    SELECT s.namespace, 0, 0, 0, count(*) FROM workflow_schedules AS s
    JOIN workflow_schedule_health AS h ON h.schedule_ulid = s.id
    WHERE h.consecutive_failures > 0 AND s.status IN ('active', 'paused') GROUP BY s.namespace
    ON CONFLICT (namespace, part) DO UPDATE SET failing = excluded.failing;

-- A status or namespace change moves the schedule's failure with it. (A
-- new schedule has no health row yet, and a schedule's health row is
-- deleted before it: the insert and delete triggers of 0025 stay.)
DROP TRIGGER namespace_schedule_counts_update;
CREATE TRIGGER namespace_schedule_counts_update AFTER UPDATE OF status, namespace ON workflow_schedules
    WHEN OLD.status IS NOT NEW.status OR OLD.namespace IS NOT NEW.namespace
BEGIN
    INSERT INTO namespace_schedule_counts (namespace, part, active, paused, failing)
        SELECT OLD.namespace, 0, -(OLD.status = 'active'), -(OLD.status = 'paused'),
            -EXISTS (SELECT 1 FROM workflow_schedule_health AS h WHERE h.schedule_ulid = OLD.id AND h.consecutive_failures > 0)
        WHERE OLD.status IN ('active', 'paused')
        ON CONFLICT (namespace, part) DO UPDATE SET active = active + excluded.active, paused = paused + excluded.paused,
            failing = failing + excluded.failing;
    INSERT INTO namespace_schedule_counts (namespace, part, active, paused, failing)
        SELECT NEW.namespace, 0, NEW.status = 'active', NEW.status = 'paused',
            EXISTS (SELECT 1 FROM workflow_schedule_health AS h WHERE h.schedule_ulid = NEW.id AND h.consecutive_failures > 0)
        WHERE NEW.status IN ('active', 'paused')
        ON CONFLICT (namespace, part) DO UPDATE SET active = active + excluded.active, paused = paused + excluded.paused,
            failing = failing + excluded.failing;
END;

-- The health side: only a change of consecutive_failures across 0 (a
-- first failure, a recovery), an insert or a delete of a failing row.
CREATE TRIGGER namespace_failing_counts_insert AFTER INSERT ON workflow_schedule_health
    WHEN NEW.consecutive_failures > 0
BEGIN
    INSERT INTO namespace_schedule_counts (namespace, part, active, paused, failing)
        SELECT s.namespace, 0, 0, 0, 1 FROM workflow_schedules AS s WHERE s.id = NEW.schedule_ulid AND s.status IN ('active', 'paused')
        ON CONFLICT (namespace, part) DO UPDATE SET failing = failing + excluded.failing;
END;

CREATE TRIGGER namespace_failing_counts_update AFTER UPDATE OF consecutive_failures ON workflow_schedule_health
    WHEN (OLD.consecutive_failures > 0) IS NOT (NEW.consecutive_failures > 0)
BEGIN
    INSERT INTO namespace_schedule_counts (namespace, part, active, paused, failing)
        SELECT s.namespace, 0, 0, 0, CASE WHEN NEW.consecutive_failures > 0 THEN 1 ELSE -1 END
        FROM workflow_schedules AS s WHERE s.id = NEW.schedule_ulid AND s.status IN ('active', 'paused')
        ON CONFLICT (namespace, part) DO UPDATE SET failing = failing + excluded.failing;
END;

CREATE TRIGGER namespace_failing_counts_delete AFTER DELETE ON workflow_schedule_health
    WHEN OLD.consecutive_failures > 0
BEGIN
    INSERT INTO namespace_schedule_counts (namespace, part, active, paused, failing)
        SELECT s.namespace, 0, 0, 0, -1 FROM workflow_schedules AS s WHERE s.id = OLD.schedule_ulid AND s.status IN ('active', 'paused')
        ON CONFLICT (namespace, part) DO UPDATE SET failing = failing + excluded.failing;
END;
