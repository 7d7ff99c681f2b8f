-- A node's host: the node whose capacity its work also uses (a thread inside a
-- machine: a Flink subtask's thread on its TaskManager's cores). NULL: none.
ALTER TABLE nodes ADD COLUMN host VARCHAR;
