-- Work measured outside a thread: a Python worker's CPU and wait for a core, charged to
-- the threads it serves (mace collect flink beside a local cluster). NULL: not measured.
ALTER TABLE operator_stats ADD COLUMN work_seconds DOUBLE;
ALTER TABLE sample_state ADD COLUMN work_seconds DOUBLE;
