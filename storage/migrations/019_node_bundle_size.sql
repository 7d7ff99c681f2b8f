-- A thread of Python operators finishes a bundle at once when it holds this many records
-- (Flink's python.fn-execution.bundle.size). NULL: no such limit recorded. The bundle
-- cycle is played per thread now, so bundle_stages is no longer read.
ALTER TABLE nodes ADD COLUMN bundle_size INTEGER;
