-- The arrival profile of every source inside each subinterval, for predictions
-- (estimator.profile): the fitted model pushes these counts through the operators to
-- predict each node's work per sub-bucket, as node_profile holds it for the measured work.
-- Source events per source, subinterval of their stimulus time and sub-bucket of that
-- subinterval, with node_profile's rule: sub_bucket = floor((t / w - interval) * k),
-- k = the run's runs.profile_sub_buckets (migration 9) equal parts, the grid of its
-- node_profile. Only non-zero cells are stored; merged by addition when late files arrive. Per source and subinterval its sum equals
-- source_arrivals.events. Runs measured by counters (samples/) have no rows.
CREATE TABLE source_profile (
    run_id     VARCHAR  NOT NULL,
    source     VARCHAR  NOT NULL,
    interval   BIGINT   NOT NULL,
    sub_bucket SMALLINT NOT NULL,
    events     BIGINT   NOT NULL,
    run_key    BIGINT   NOT NULL,
    PRIMARY KEY (run_id, source, interval, sub_bucket)
);
