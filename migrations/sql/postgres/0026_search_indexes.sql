-- The registry's and the API list's filters by workflow type and by label
-- (issue 35, "the registry flat in the number of schedules"). Without
-- these, a page filtered by a rare type or label walks the namespace's
-- (namespace, schedule_id) key until it has found a page of matches: the
-- whole namespace when there are fewer than a page.
--
-- The type index holds the page order itself (schedule_id after the type),
-- so a filtered page is a range of it. The label filter is a containment
-- query (labels @> {"key": "value"}), which the GIN index answers; the
-- planner still walks the ID key when the label is common.
CREATE INDEX IF NOT EXISTS workflow_schedules_workflow_type_idx
    ON workflow_schedules (namespace, (action->>'workflow_type'), schedule_id);
CREATE INDEX IF NOT EXISTS workflow_schedules_labels_idx ON workflow_schedules USING gin (labels jsonb_path_ops);
