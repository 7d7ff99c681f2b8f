"""DuckDB store of per-subinterval statistics, deployments and scenarios (docs/design.md,
"DuckDB store").

Every SQL statement of the project lives in this package. Open a database with
:func:`storage.db.connect`; it applies the versioned migrations of
:mod:`storage.schema` on a writable connection. Work that only reads (``mace
report``) opens it with :func:`storage.db.connect_to_read`, read-only when the
schema is current. The queries live in
:mod:`storage.reads`, :mod:`storage.writes`, :mod:`storage.scenarios`,
:mod:`storage.placement_requests`, :mod:`storage.alerts` and :mod:`storage.health`;
retention in :mod:`storage.retention`, the landing files' fate in
:mod:`storage.landing`.

Layout for a store holding history (a hundred runs; measured with
``benchmarks/fill_store.py`` and ``benchmarks/bench_store.py``, 100 runs of 3600
subintervals, 70 operators, 13 nodes):

* **One integer key per run on every statistics row.** ``run_keys`` gives each run
  a ``run_key`` (1, 2, ... in order of first write) and ``source_arrivals``,
  ``operator_stats``, ``node_busy``, ``node_profile`` (migration 8),
  ``source_profile`` (migration 10) and ``latency_stats`` carry it; per-run reads
  filter ``WHERE run_key = ?`` (:func:`storage.reads.run_key` looks it up first).
  DuckDB skips a row group (122 880 rows) when its zonemap (min/max per column)
  excludes the value, but a VARCHAR zonemap keeps only the first 8 bytes, and run
  ids share prefixes ("clickstream-2026-..."): filtered by ``run_id``, every
  per-run read scanned every run's rows (29 million operator rows at 100 runs).
  Integer zonemaps are exact, so a read touches its run's row groups only.
* **Rows grouped by run on insert.** The merges insert ``ORDER BY run_key, <key>``
  and ingestion writes a run's rows together, so a run occupies a few contiguous
  row groups and no other run's zonemap range covers its key (keys are
  consecutive); migration 7 rewrote existing tables in key order. Within a run
  the order is not kept: DuckDB's upsert (``ON CONFLICT``) writes a batch as a few
  sorted stretches (about 50 for a run's 290 k operator rows), and a run ingested
  in several batches is stored batch after batch.
* **Reads sort in Python, not in DuckDB.** A run's statistics come back without
  ``ORDER BY`` (a scan returns rows in storage order) as an Arrow table;
  :func:`storage.reads._statistics` checks the key order with one integer per row
  and, if the rows are out of order, merges the stretches with a stable sort,
  then converts to pandas (the frame ``.df()`` gives, in a fraction of the time:
  ``.df()`` turns the strings into Python objects one by one). On the 100-run
  store's last run ``operator_stats_frame`` went from 42 ms CPU (``ORDER BY``,
  ``.df()``) to 24 ms when the rows are stored in key order and 40 ms when they
  are not (``ORDER BY`` there: 71 ms).
* **No statistics scanned to list runs.** ``run_keys`` also keeps each run's
  first and last interval with statistics, widened by every merge, so
  :func:`storage.reads.list_runs` and :func:`storage.reads.get_run` (called on
  every page refresh) read two small tables instead of grouping all statistics.
* **Indexes.** The primary keys' ART indexes serve the merges' ``ON CONFLICT``
  point lookups; DuckDB uses an ART index for a filter only when few rows match,
  never for a run's hundreds of thousands, so no index is added for reads.
* **Bulk writes.** Latency rows (with 202-bucket histograms) are merged as
  arrays and inserted as one Arrow table: parameters row by row cost about 15 ms
  a row (an hour of five queries took minutes).
* **Retention.** :mod:`storage.retention` deletes whole runs; DuckDB marks the
  rows deleted and, after ``CHECKPOINT``, reuses the freed blocks for later
  writes, but the file shrinks only when the free blocks are at its end.

Measured (2 shared cores, load average 22-27; wall clock, with this process's CPU
time in brackets): the 100-run store is 1101 MB as filled (29.0 M operator rows);
migration 7 took 725 s (55 s CPU) and left a 2040 MB file (the old tables' blocks
free inside it; a ``COPY FROM DATABASE`` copy is 971 MB). Before -> after on the
last run: ``list_runs`` 7351 (729) -> 12 (3) ms, ``get_run`` 7900 (699) -> 20 (4),
``run_topology`` 7625 (719) -> 75 (15), ``operator_stats_frame`` 2099 (165) -> 439
(77), a run's first load (``dashboard.core.data.load_run``) 18.2 s (1.86 s) -> 0.90 s
(0.16 s), ``mace report`` 30.2 s (2.87 s) -> 1.38 s (0.28 s). Re-timed at load
average 4: every read at most 77 ms (``operator_stats_frame``, 250 k rows to
pandas), ``load_run`` 148 ms, ``mace report`` 323 ms, over its 200 ms target
(opening the file, the one-run load, then 44 ms of report). Pruning 51 of the
100 runs (18.9 M rows) took 242 s (30 s CPU) and shrank the file by 8 MB; five
runs written afterwards did not grow it (the freed blocks were reused).

Then the reads through Arrow sorted in Python, ``mace report`` on a read-only
connection and without numba (``bench_store.py --reference-tree`` with the tree
before, same run, load average 32-39, so wall clocks 4-8 times the CPU times;
CPU time here): every dashboard read of the last run at most 24 ms
(``operator_stats_frame``; before 72 ms), ``load_run`` 82 ms, ``mace report``'s
work 171 ms (131 ms opening the file and loading the run, 38 ms of report; before
276 ms), ``import mace.cli`` 723 ms (945), the whole command 1.10 s (1.41 s), the
printed JSON identical. A store written by the merges' upserts (a fresh
10-run fill, rows in stretches within a run) is slower per run, whatever its
number of runs: ``operator_stats_frame`` 54 ms (the old ``ORDER BY`` read 123),
``load_run`` 152 ms, ``mace report`` 254 ms; writing each run's rows in key
order (as migration 7 did) is what brings it to the figures above.
"""

from __future__ import annotations

from storage.db import connect, transaction
from storage.errors import DatabaseLockedError, StorageError

__all__ = ["DatabaseLockedError", "StorageError", "connect", "transaction"]
