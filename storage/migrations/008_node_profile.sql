-- The arrival profile inside each subinterval, for the burst-aware estimator
-- (estimator.burst). CPU-seconds of every execution, per node it ran on, subinterval of
-- its stimulus time and sub-bucket of that subinterval: sub_bucket = floor((t / w -
-- interval) * k), k = estimator.burst.SUB_BUCKETS = 8 equal parts. Only non-zero cells are
-- stored. Raw work rather than the estimator's (head, rise, tail) summary: it merges by
-- addition when late files arrive (the summary does not), and it does not depend on the
-- nodes' capacities (what-if can change them). Per node and subinterval its sum equals
-- the node's DLTS from operator_stats when the placement is the one executed.
CREATE TABLE node_profile (
    run_id      VARCHAR  NOT NULL,
    node        VARCHAR  NOT NULL,
    interval    BIGINT   NOT NULL,
    sub_bucket  SMALLINT NOT NULL,
    cpu_seconds DOUBLE   NOT NULL,
    run_key     BIGINT   NOT NULL,
    PRIMARY KEY (run_id, node, interval, sub_bucket)
);
