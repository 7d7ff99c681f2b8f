-- The sub-buckets k of a run's stored node_profile. It was 8 for every run
-- (estimator.burst.SUB_BUCKETS); new runs get 32, the per-origin replay's finer step.
-- A run keeps the k its profile started with, so that rows merged from late files
-- share the sub-bucket grid of the rows already stored. Runs that have profile rows
-- were ingested at 8; the others get their k at their next ingestion.
ALTER TABLE runs ADD COLUMN profile_sub_buckets SMALLINT;
UPDATE runs SET profile_sub_buckets = 8
    WHERE run_id IN (SELECT DISTINCT run_id FROM node_profile);
