-- The ring of recent actions, one row a schedule (issue 35, "halve the
-- ring"). workflow_schedule_recent_actions keeps a schedule's last ten
-- actions as ten rows: each pays a 24-byte tuple header, a 4-byte line
-- pointer and its (schedule_ulid, slot) key twice, in the row and in the
-- primary key's index (~70 bytes an entry) — 2.3 KB a schedule after 0027
-- compacted the columns. Here the ten actions are one value, packed by
-- models (ring.go: varints, the outcome and reason as a code, the run ID
-- as its 16 bytes, what a read can recompute left out), in one row a
-- schedule with one index entry.
--
-- The ring is a bytea[] of packed actions, newest first: a fire sends its
-- own action (~30 bytes) and one statement pushes it in front and cuts the
-- array to ten ((new || ring)[1:10]), so nothing is read back; the fire
-- holds the schedule's row lock, and the schedule's actions_count numbers
-- its actions, so a new one is always the newest. A batch of fires
-- rewrites the rings of schedules whose rows were written side by side, so
-- most rows of a page change in one transaction: the fill factor leaves
-- each page room for a new version of every row on it, so the update stays
-- on the page (HOT: no new index entry, and the old version is pruned
-- in-page).
--
-- Expand only, for a rolling upgrade: the previous release still reads and
-- writes workflow_schedule_recent_actions, and this release reads both
-- tables, merging by action number (the schedule's actions_count, which
-- both releases advance under the row lock), so every action either
-- release recorded is shown by this one; the previous release shows the
-- actions it recorded itself until it is replaced (display only). The
-- contract step, once no replica of the previous release runs: drop
-- workflow_schedule_recent_actions and its read.
CREATE TABLE workflow_schedule_rings (
    schedule_ulid text PRIMARY KEY,
    ring          bytea[] NOT NULL
) WITH (fillfactor = 50);
