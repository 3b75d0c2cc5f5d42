-- The free-text search of the registry and the API list (q: a part of the
-- schedule ID, the note or the workflow type, any case) as trigram indexes
-- (issue 35, "the registry flat in the number of schedules"). Without them
-- a search that matches a few schedules walks the namespace's
-- (namespace, schedule_id) key until it has found a page: the whole
-- namespace when fewer match. The query is unchanged; the planner takes
-- these indexes for a search of three characters or more that it expects
-- to be rare.
--
-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension, but
-- the database user may still not be allowed to create it (PostgreSQL 15
-- no longer lets every user create objects in public). Then this migration
-- only says so (a NOTICE) and search stays a walk; docs/PRODUCTION.md says
-- how to add the extension and the indexes later. The extension goes to
-- public when that exists (shared by every schema of the database, which
-- is what one installation per database wants), and the indexes name its
-- operator class by schema, so they work whatever the search_path.
-- Like 0026, the indexes are built in this transaction (writes to the
-- table wait meanwhile); an operator who wants no wait builds them first
-- with CREATE INDEX CONCURRENTLY under these names (IF NOT EXISTS).
DO $$
DECLARE
    ext_schema text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        BEGIN
            IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'public') THEN
                CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
            ELSE
                CREATE EXTENSION IF NOT EXISTS pg_trgm;
            END IF;
        EXCEPTION
            WHEN unique_violation OR duplicate_object THEN
                NULL; -- another schema's migration created it at the same time
            WHEN OTHERS THEN
                RAISE NOTICE 'pg_trgm is not available (%): the schedule search stays unindexed; see docs/PRODUCTION.md', SQLERRM;
        END;
    END IF;
    SELECT extnamespace::regnamespace::text INTO ext_schema FROM pg_extension WHERE extname = 'pg_trgm';
    IF ext_schema IS NULL THEN
        RETURN;
    END IF;
    EXECUTE format('CREATE INDEX IF NOT EXISTS workflow_schedules_id_trgm_idx ON workflow_schedules
        USING gin (lower(schedule_id) %I.gin_trgm_ops)', ext_schema);
    EXECUTE format('CREATE INDEX IF NOT EXISTS workflow_schedules_note_trgm_idx ON workflow_schedules
        USING gin (lower(note) %I.gin_trgm_ops)', ext_schema);
    EXECUTE format('CREATE INDEX IF NOT EXISTS workflow_schedules_type_trgm_idx ON workflow_schedules
        USING gin (lower(action->>''workflow_type'') %I.gin_trgm_ops)', ext_schema);
END
$$;
