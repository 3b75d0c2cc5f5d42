-- The registry's Failing chip (issue 35 goal 3): a namespace's live
-- (active or paused) schedules whose health row says consecutive_failures
-- > 0, kept beside the status counts of migration 0025, in the same
-- transaction as the rows it counts, with the same parts and try-only
-- advisory lock (no writer waits on a counter). Counting it per view
-- started from the failing-health index, which has no namespace: one
-- namespace's view paid for every namespace's failures, and a million
-- failing schedules cost a million-row count per view.
--
-- The state is a join of two rows written by different transactions —
-- the schedule's status (a delete, the tick's max_runs soft delete) and
-- its health row's counter (run ends) — so the two sides must not each
-- count a change against the other's uncommitted state. The health side
-- reads the schedule without a lock: run ends lock a run first and write
-- health last, and must never wait for a schedule the tick holds. The
-- schedule side, which already holds the schedule's row lock (the order
-- every path takes: schedule, run, health), locks the health row FOR
-- SHARE and counts from its latest version: a run end writing that row
-- either finished first (its commit is waited for and seen) or waits for
-- this transaction and then sees the schedule's new status. A schedule
-- without a health row gets an empty one first (ON CONFLICT DO NOTHING),
-- which waits for a run end inserting the row at that moment. Only
-- changes that make a schedule enter or leave a namespace's live ones
-- (deletes; a pause or resume does not) do this.
--
-- The health side is row triggers whose column list and WHEN pass only a
-- change of consecutive_failures across 0 (a first failure, a recovery):
-- the fold's bulk update of the strip and the upserts of further failures
-- call no function. A statement trigger with transition tables would
-- capture every row of every health write (each fold, each run end) to
-- find the few that cross 0; the writes that cross are one statement per
-- schedule anyway (models.AddHealth).

-- Writers of the previous release, which only read active and paused,
-- keep working: the column has a default and the triggers count it.
ALTER TABLE namespace_schedule_counts ADD COLUMN failing bigint NOT NULL DEFAULT 0;

-- No write to either table between the backfill below and the triggers:
-- replacing a function locks no table, so both are locked here, in the
-- tick's order (schedules, then health).
LOCK TABLE workflow_schedules, workflow_schedule_health IN SHARE ROW EXCLUSIVE MODE;

DROP FUNCTION namespace_schedule_counts_add(text, bigint, bigint);
CREATE FUNCTION namespace_schedule_counts_add(ns text, d_active bigint, d_paused bigint, d_failing bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF d_active = 0 AND d_paused = 0 AND d_failing = 0 THEN
        RETURN;
    END IF;
    -- Migration 0025 explains the parts and the try-only lock.
    IF pg_try_advisory_xact_lock(1953391476, hashtext(ns)) THEN
        WITH folded AS (
            DELETE FROM namespace_schedule_counts WHERE namespace = ns AND part <> 0 RETURNING active, paused, failing)
        INSERT INTO namespace_schedule_counts AS c (namespace, part, active, paused, failing)
            SELECT ns, 0, d_active + COALESCE(sum(f.active), 0), d_paused + COALESCE(sum(f.paused), 0),
                d_failing + COALESCE(sum(f.failing), 0) FROM folded AS f
            ON CONFLICT (namespace, part) DO UPDATE SET active = c.active + EXCLUDED.active, paused = c.paused + EXCLUDED.paused,
                failing = c.failing + EXCLUDED.failing;
    ELSE
        INSERT INTO namespace_schedule_counts (namespace, active, paused, failing) VALUES (ns, d_active, d_paused, d_failing);
    END IF;
END
$$;

-- A new schedule has no health row yet (its foreign key needs the
-- schedule first), so an insert counts no failing schedule.
CREATE OR REPLACE FUNCTION namespace_schedule_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT n.namespace, count(*) FILTER (WHERE n.status = 'active') AS active,
            count(*) FILTER (WHERE n.status = 'paused') AS paused
        FROM new_rows AS n WHERE n.status IN ('active', 'paused') GROUP BY n.namespace ORDER BY n.namespace
    LOOP
        PERFORM namespace_schedule_counts_add(r.namespace, r.active, r.paused, 0);
    END LOOP;
    RETURN NULL;
END
$$;

-- Deleting a schedule deletes its health row first (the foreign key), and
-- that delete counted it.
CREATE OR REPLACE FUNCTION namespace_schedule_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM namespace_schedule_counts_add(OLD.namespace, -(OLD.status = 'active')::int, -(OLD.status = 'paused')::int, 0);
    RETURN NULL;
END
$$;

-- The fire path still returns at the first line (the mark trigger is
-- unchanged); a change of status or namespace now also moves the failing
-- schedules among those it changed.
CREATE OR REPLACE FUNCTION namespace_schedule_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
    moved text[];
BEGIN
    IF current_setting('tideline.schedule_counts_changed', true) IS DISTINCT FROM 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('tideline.schedule_counts_changed', '', true);
    -- The schedules that entered or left a namespace's live ones.
    SELECT array_agg(o.id ORDER BY o.id) INTO moved
        FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id
        WHERE (o.status IN ('active', 'paused')) IS DISTINCT FROM (n.status IN ('active', 'paused'))
            OR (o.namespace IS DISTINCT FROM n.namespace AND (o.status IN ('active', 'paused') OR n.status IN ('active', 'paused')));
    IF moved IS NOT NULL THEN
        INSERT INTO workflow_schedule_health (schedule_ulid, updated_at)
            SELECT m.id, now() FROM unnest(moved) AS m(id) ORDER BY m.id
            ON CONFLICT (schedule_ulid) DO NOTHING;
    END IF;
    FOR r IN WITH failing AS (
            -- The latest version of each row, locked: see the top.
            SELECT h.schedule_ulid AS id, h.consecutive_failures > 0 AS failing
            FROM workflow_schedule_health AS h WHERE h.schedule_ulid = ANY (moved)
            ORDER BY h.schedule_ulid FOR SHARE),
        changed AS (
            SELECT o.namespace AS old_ns, o.status AS old_status, n.namespace AS new_ns, n.status AS new_status,
                COALESCE(f.failing, false) AS failing
            FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id LEFT JOIN failing AS f ON f.id = o.id
            WHERE o.status IS DISTINCT FROM n.status OR o.namespace IS DISTINCT FROM n.namespace)
        SELECT d.ns, sum(d.active) AS active, sum(d.paused) AS paused, sum(d.failing) AS failing FROM (
            SELECT old_ns AS ns, -(old_status = 'active')::int AS active, -(old_status = 'paused')::int AS paused,
                -(failing AND old_status IN ('active', 'paused'))::int AS failing FROM changed
            UNION ALL
            SELECT new_ns, (new_status = 'active')::int, (new_status = 'paused')::int,
                (failing AND new_status IN ('active', 'paused'))::int FROM changed) AS d
        GROUP BY d.ns ORDER BY d.ns
    LOOP
        PERFORM namespace_schedule_counts_add(r.ns, r.active, r.paused, r.failing);
    END LOOP;
    RETURN NULL;
END
$$;

-- The health side: a row's consecutive_failures crossed 0, it was
-- inserted failing, or deleted failing; counted when its schedule is live.
CREATE FUNCTION namespace_failing_counts_health() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ulid text;
    delta int;
    ns text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        ulid := OLD.schedule_ulid;
        delta := -1;
    ELSE
        ulid := NEW.schedule_ulid;
        delta := CASE WHEN NEW.consecutive_failures > 0 THEN 1 ELSE -1 END;
    END IF;
    SELECT s.namespace INTO ns FROM workflow_schedules AS s WHERE s.id = ulid AND s.status IN ('active', 'paused');
    IF ns IS NOT NULL THEN
        PERFORM namespace_schedule_counts_add(ns, 0, 0, delta);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER namespace_failing_counts_insert AFTER INSERT ON workflow_schedule_health
    FOR EACH ROW WHEN (NEW.consecutive_failures > 0) EXECUTE FUNCTION namespace_failing_counts_health();
CREATE TRIGGER namespace_failing_counts_update AFTER UPDATE OF consecutive_failures ON workflow_schedule_health
    FOR EACH ROW WHEN ((OLD.consecutive_failures > 0) <> (NEW.consecutive_failures > 0)) EXECUTE FUNCTION namespace_failing_counts_health();
CREATE TRIGGER namespace_failing_counts_delete AFTER DELETE ON workflow_schedule_health
    FOR EACH ROW WHEN (OLD.consecutive_failures > 0) EXECUTE FUNCTION namespace_failing_counts_health();

-- The backfill, with both tables locked since the LOCK above. The column
-- is 0 in every part, so part 0 takes the namespace's count.
INSERT INTO namespace_schedule_counts AS c (namespace, part, active, paused, failing)
    SELECT s.namespace, 0, 0, 0, count(*) FROM workflow_schedules AS s
    JOIN workflow_schedule_health AS h ON h.schedule_ulid = s.id
    WHERE h.consecutive_failures > 0 AND s.status IN ('active', 'paused') GROUP BY s.namespace
    ON CONFLICT (namespace, part) DO UPDATE SET failing = EXCLUDED.failing;
