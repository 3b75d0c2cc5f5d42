-- The registry's and the API list's label filter and free-text search on
-- SQLite (issue 35 goal 3, "the registry flat in the number of schedules";
-- PostgreSQL has had indexes for both since 0026 and 0028). SQLite indexes
-- neither a JSON object's pairs nor substrings, so a page filtered by a
-- rare label or text walked the namespace's (namespace, schedule_id) key
-- until it had a page: the whole namespace when fewer match. Two side
-- tables, kept by triggers on workflow_schedules like the due queue (0012)
-- and the counts (0025), so every writer (API, apply, loadgen's seeds, a
-- later migration's INSERT … SELECT) keeps them right with no Go code. The
-- queries that read them are database.Dialect's ScheduleLabel and
-- ScheduleTextCandidates. The fire path's update sets none of the columns
-- the triggers watch (models.FireColumns), so no fire runs them.
--
-- A migration that rebuilds workflow_schedules (CREATE, copy, DROP,
-- RENAME) drops these triggers with the table: it must create them again.
--
-- Labels: one row per string-valued label (a number, object or array never
-- matched the filter on PostgreSQL, and now not here either; a labels
-- column that is not a JSON object has no labels). The primary key serves
-- "namespace, key, value" in schedule_id order; schedule_ulid finds a
-- schedule's rows to replace them. DISTINCT: a key written twice with
-- one value (no Go writer does) is one row.
CREATE TABLE workflow_schedule_labels (
    namespace     text NOT NULL,
    label_key     text NOT NULL,
    label_value   text NOT NULL,
    schedule_id   text NOT NULL,
    schedule_ulid text NOT NULL,
    PRIMARY KEY (namespace, label_key, label_value, schedule_id)
) WITHOUT ROWID;
CREATE INDEX workflow_schedule_labels_schedule_idx ON workflow_schedule_labels (schedule_ulid);

INSERT INTO workflow_schedule_labels (namespace, label_key, label_value, schedule_id, schedule_ulid)
    SELECT DISTINCT s.namespace, j.key, j.value, s.schedule_id, s.id
    FROM workflow_schedules AS s,
         json_each(CASE WHEN json_valid(s.labels) THEN CASE WHEN json_type(s.labels) = 'object' THEN s.labels END END) AS j
    WHERE j.type = 'text';

CREATE TRIGGER workflow_schedule_labels_insert AFTER INSERT ON workflow_schedules
BEGIN
    INSERT INTO workflow_schedule_labels (namespace, label_key, label_value, schedule_id, schedule_ulid)
        SELECT DISTINCT NEW.namespace, j.key, j.value, NEW.schedule_id, NEW.id
        FROM json_each(CASE WHEN json_valid(NEW.labels) THEN CASE WHEN json_type(NEW.labels) = 'object' THEN NEW.labels END END) AS j
        WHERE j.type = 'text';
END;

-- Only when a watched value changed: bun's UpdateSchedule sets every
-- column, mostly to the values they had.
CREATE TRIGGER workflow_schedule_labels_update AFTER UPDATE OF id, namespace, schedule_id, labels ON workflow_schedules
    WHEN OLD.id IS NOT NEW.id OR OLD.namespace IS NOT NEW.namespace OR OLD.schedule_id IS NOT NEW.schedule_id OR OLD.labels IS NOT NEW.labels
BEGIN
    DELETE FROM workflow_schedule_labels WHERE schedule_ulid = OLD.id;
    INSERT INTO workflow_schedule_labels (namespace, label_key, label_value, schedule_id, schedule_ulid)
        SELECT DISTINCT NEW.namespace, j.key, j.value, NEW.schedule_id, NEW.id
        FROM json_each(CASE WHEN json_valid(NEW.labels) THEN CASE WHEN json_type(NEW.labels) = 'object' THEN NEW.labels END END) AS j
        WHERE j.type = 'text';
END;

CREATE TRIGGER workflow_schedule_labels_delete AFTER DELETE ON workflow_schedules
BEGIN
    DELETE FROM workflow_schedule_labels WHERE schedule_ulid = OLD.id;
END;

-- Text: an FTS5 table with the trigram tokenizer over the schedule ID, the
-- note and the workflow type, which finds any substring of three
-- characters or more. It folds case (Unicode, where LIKE folds ASCII), so
-- the LIKE still decides among what it finds; shorter texts keep the walk.
-- Contentless (content=''): the text lives in workflow_schedules, which the
-- LIKE reads anyway, so a copy would only double it; contentless_delete
-- lets a trigger delete a document by its rowid alone, where an external
-- content table must be given the old values exactly or its index goes
-- wrong silently. The rowid is workflow_schedule_search_docs.doc, an
-- INTEGER PRIMARY KEY of our own, not workflow_schedules' rowid: a table
-- keyed by text may have its rowids renumbered by VACUUM (and by a
-- rebuild), which would point the index at other schedules.
CREATE TABLE workflow_schedule_search_docs (
    doc           integer PRIMARY KEY,
    schedule_ulid text NOT NULL UNIQUE
);
CREATE VIRTUAL TABLE workflow_schedule_search USING fts5 (
    schedule_id, note, workflow_type,
    content = '', contentless_delete = 1, tokenize = 'trigram'
);

INSERT INTO workflow_schedule_search_docs (schedule_ulid) SELECT id FROM workflow_schedules ORDER BY id;
INSERT INTO workflow_schedule_search (rowid, schedule_id, note, workflow_type)
    SELECT d.doc, s.schedule_id, s.note, json_extract(s.action, '$.workflow_type')
    FROM workflow_schedule_search_docs AS d JOIN workflow_schedules AS s ON s.id = d.schedule_ulid;

CREATE TRIGGER workflow_schedule_search_insert AFTER INSERT ON workflow_schedules
BEGIN
    INSERT INTO workflow_schedule_search_docs (schedule_ulid) VALUES (NEW.id);
    INSERT INTO workflow_schedule_search (rowid, schedule_id, note, workflow_type)
        SELECT doc, NEW.schedule_id, NEW.note, json_extract(NEW.action, '$.workflow_type')
        FROM workflow_schedule_search_docs WHERE schedule_ulid = NEW.id;
END;

CREATE TRIGGER workflow_schedule_search_update AFTER UPDATE OF id, schedule_id, note, action ON workflow_schedules
    WHEN OLD.id IS NOT NEW.id OR OLD.schedule_id IS NOT NEW.schedule_id OR OLD.note IS NOT NEW.note
        OR json_extract(OLD.action, '$.workflow_type') IS NOT json_extract(NEW.action, '$.workflow_type')
BEGIN
    DELETE FROM workflow_schedule_search WHERE rowid = (SELECT doc FROM workflow_schedule_search_docs WHERE schedule_ulid = OLD.id);
    UPDATE workflow_schedule_search_docs SET schedule_ulid = NEW.id WHERE schedule_ulid = OLD.id;
    INSERT INTO workflow_schedule_search (rowid, schedule_id, note, workflow_type)
        SELECT doc, NEW.schedule_id, NEW.note, json_extract(NEW.action, '$.workflow_type')
        FROM workflow_schedule_search_docs WHERE schedule_ulid = NEW.id;
END;

CREATE TRIGGER workflow_schedule_search_delete AFTER DELETE ON workflow_schedules
BEGIN
    DELETE FROM workflow_schedule_search WHERE rowid = (SELECT doc FROM workflow_schedule_search_docs WHERE schedule_ulid = OLD.id);
    DELETE FROM workflow_schedule_search_docs WHERE schedule_ulid = OLD.id;
END;
