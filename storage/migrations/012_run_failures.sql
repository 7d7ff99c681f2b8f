-- Runs whose files could not be ingested (a topology that does not load, a file Spark
-- cannot aggregate): one row per failing run with the reason, for `mace ingest`'s output
-- and the Data health page. The pass goes on with the other runs. `fingerprint` names the
-- run's topology files and new data files (names, sizes, modification times) when it
-- failed: an unchanged run is not retried; a changed one is, and its row is deleted once it
-- is ingested.
CREATE TABLE run_failures (
    run_id      VARCHAR   PRIMARY KEY,
    reason      VARCHAR   NOT NULL,
    fingerprint VARCHAR   NOT NULL,
    failed_at   TIMESTAMP NOT NULL
);
