-- The registry's and the API list's filter by workflow type (issue 35;
-- the PostgreSQL migration says why). SQLite has no index over a JSON
-- object's keys, so its label filter keeps walking the ID key.
CREATE INDEX IF NOT EXISTS workflow_schedules_workflow_type_idx
    ON workflow_schedules (namespace, json_extract(action, '$.workflow_type'), schedule_id);
