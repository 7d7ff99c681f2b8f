-- Node capacities per placement version: a version may change capacities as well as the
-- placement (a Flink vertex rescaled to another parallelism: its threads node's capacity
-- is the parallelism). One row per node of every version from 1 on, from
-- topology-<epoch>.yaml; version 0's are nodes.capacity. A version without rows (stored
-- before this migration) has version 0's capacities.
CREATE TABLE node_capacities (
    run_id   VARCHAR NOT NULL,
    version  INTEGER NOT NULL,
    node     VARCHAR NOT NULL,
    capacity DOUBLE  NOT NULL,
    PRIMARY KEY (run_id, version, node)
);
