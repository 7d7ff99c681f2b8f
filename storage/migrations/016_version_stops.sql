-- A placement version that began with a restart (a Flink rescale: the job is cancelled
-- and restarted at the new parallelism): when the job stopped processing, from
-- topology-<epoch>.yaml's "stopped". The version is valid from the job's return
-- (placements.valid_from); in between nothing is served. A version without a row began
-- without a stop.
CREATE TABLE version_stops (
    run_id     VARCHAR NOT NULL,
    version    INTEGER NOT NULL,
    stopped_at DOUBLE  NOT NULL,
    PRIMARY KEY (run_id, version)
);
