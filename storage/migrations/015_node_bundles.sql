-- A thread of Python operators: Flink's python.fn-execution.bundle.time in seconds and
-- how many Python operators in a row a record meets on it. NULL: not such a thread.
ALTER TABLE nodes ADD COLUMN bundle_time DOUBLE;
ALTER TABLE nodes ADD COLUMN bundle_stages INTEGER;
