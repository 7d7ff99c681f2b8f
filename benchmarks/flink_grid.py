"""The grid mode of ``benchmarks/flink_study.py``: the test jobs at three loads each.

For each job x load level x seed (:func:`run_grid`):

1. the job (``benchmarks/flink_jobs/<job>.py``) starts on a local MiniCluster in the
   Flink environment, and ``mace collect flink``'s collector follows it from this
   process (``connectors.flink.collector``, as ``mace demo --engine flink`` does);
2. its outside producer(s) (``benchmarks/flink_jobs/producer.py``, one process per
   input folder) write On-Off events for ``--duration`` seconds;
3. the job works off its backlog (at most ``DRAIN`` s), then everything stops;
   a SQL job's committed part files become the run's ``outputs/`` rows
   (:func:`convert_sql_outputs`: the ingestion reads ``.jsonl`` files only).

Then one ``mace ingest`` of the landing folder into ``<workdir>/mace.duckdb`` and one
``mace report --json`` per run: the figures are the product's, so a model change
shows up here as it is. Each run and the ingestion hold ``--lock`` while they run.

Load levels set the producer's rates from the job's calibrated capacity (events/s
one input folder can feed when the job is saturated, ``JobSpec.capacity``):
low periods at ``LOW_SHARE`` of it, high periods at the level's multiple.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DRAIN = 60.0  # seconds the job may take to work off its backlog after the producers end
QUIET = 3  # samples without progress that mean the job has no backlog left
SETTLE = 3.0  # seconds after the drain for the probes' last flush and a last checkpoint
LOW_SHARE = 0.15  # low-period rate / capacity
LEVELS = {"2w": 0.9, "5w": 1.6, "20w": 3.5}
"""High-period rate / capacity per load level (target worst case 2 w, 5 w, >= 20 w)."""
DEFAULT_LOCK = Path("/tmp/heavy.lock")


@dataclass(frozen=True)
class JobSpec:
    """A test job: its module, how many input folders it reads, its calibrated capacity."""

    module: str
    inputs: int
    capacity: float  # events/s per input folder at saturation (docs/flink.md, calibration)
    sql: bool = False


JOBS = {
    "chain": JobSpec("benchmarks.flink_jobs.chain", 1, 250.0),
    "fanout": JobSpec("benchmarks.flink_jobs.fanout", 1, 100.0),
    "window": JobSpec("benchmarks.flink_jobs.window", 1, 250.0),
    "join": JobSpec("benchmarks.flink_jobs.join", 2, 90.0),
    "sql": JobSpec("benchmarks.flink_jobs.sql_job", 1, 2700.0, sql=True),
}


def rates(job: str, level: str) -> tuple[float, float]:
    """The producer's (low, high) rates in events/s for ``job`` at ``level``."""
    capacity = JOBS[job].capacity
    return round(LOW_SHARE * capacity, 3), round(LEVELS[level] * capacity, 3)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    grid = parser.add_argument_group("grid mode")
    grid.add_argument("--grid", action="store_true", help="run the test jobs' grid")
    grid.add_argument("--jobs", nargs="+", choices=sorted(JOBS), default=list(JOBS))
    grid.add_argument("--loads", nargs="+", choices=list(LEVELS), default=list(LEVELS))
    grid.add_argument("--seeds", nargs="+", type=int, default=[1])
    grid.add_argument("--duration", type=float, default=90.0, help="seconds of events per run")
    grid.add_argument("--workdir", type=Path, help="where runs, landing and mace.duckdb go")
    grid.add_argument("--keep", action="store_true", help="keep input folders and job logs")
    grid.add_argument(
        "--capacity",
        nargs="+",
        default=[],
        metavar="JOB=EVENTS_PER_S",
        help="override a job's calibrated capacity",
    )
    grid.add_argument("--lock", type=Path, default=DEFAULT_LOCK, help="lock file held per run")
    grid.add_argument(
        "--lock-per",
        choices=("run", "job"),
        default="run",
        help="hold the lock per run (default) or per job (its loads and seeds in one go)",
    )
    grid.add_argument(
        "--report-only",
        action="store_true",
        help="ingest and report the runs already in --workdir (its runs.json) again",
    )
    grid.add_argument(
        "--bundle-ms",
        type=int,
        help="python.fn-execution.bundle.time of the Python jobs (default: Flink's, 1000)",
    )
    grid.add_argument(
        "--count-files",
        action="store_true",
        help="count the lines of a one-input job's input folder as its source's offered "
        "records (mace collect flink --offered), so files not read yet are a queue",
    )
    grid.add_argument(
        "--no-chaining",
        nargs="*",
        metavar="JOB",
        help="run these jobs (all jobs if none is named) with chaining off",
    )


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold ``flock(path)`` (the same lock ``flock(1)`` takes) for the block."""
    with path.open("a") as handle:
        waited = time.monotonic()
        fcntl.flock(handle, fcntl.LOCK_EX)
        if time.monotonic() - waited > 1:
            progress(f"waited {time.monotonic() - waited:.0f} s for {path}")
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


PORT_ATTEMPTS = 3
"""Ports a job's start tries when the one it was given is taken before Flink binds it."""
PORT_TAKEN = b"Could not start rest endpoint on any port"
"""Flink's words when its REST port is taken."""


def start_job(
    spec: JobSpec, inputs: list[Path], landing: Path, run_id: str, run_dir: Path, job: str,
    chaining: bool, extra: tuple[str, ...] = (),
) -> tuple[subprocess.Popen[bytes], str]:  # fmt: skip
    """Start ``spec``'s job (with the job options ``extra``); return its process and REST
    URL once it runs."""
    from connectors.errors import ConnectorError
    from connectors.flink.rest import FlinkRest, FlinkRestError
    from connectors.flink.runtime import START_TIMEOUT, flink_python, free_port, stop_process

    options = []
    for folder in inputs:
        options += ["--input", str(folder)]
    if spec.sql:
        options += ["--output", str(run_dir / "sql-out")]
    else:
        options += ["--landing", str(landing), "--run-id", run_id]
        if not chaining:
            options.append("--no-chaining")
    options += extra
    log = run_dir / "job.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    attempt = 0
    while True:
        attempt += 1
        port = free_port()  # free when asked; another process may take it before Flink does
        command = [str(flink_python(create=False)), "-m", spec.module, "--rest-port",
                   str(port), "--job-name", job, *options]  # fmt: skip
        with log.open("ab") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        url = f"http://127.0.0.1:{port}"
        rest = FlinkRest(url, timeout=2.0)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            with contextlib.suppress(FlinkRestError):
                if any(j.state == "RUNNING" for j in rest.jobs()):
                    return process, url
            time.sleep(1.0)
        else:
            stop_process(process)
            raise ConnectorError(f"{job} did not start within {START_TIMEOUT:g} s; see {log}")
        if attempt == PORT_ATTEMPTS or PORT_TAKEN not in log.read_bytes():
            raise ConnectorError(f"{job} exited with status {process.returncode}; see {log}")
        progress(f"{job}: REST port {port} was taken before Flink bound it; another port")


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU seconds of the live processes of process group ``pgid``
    (the job's JVM and its Python workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state, ppid, pgrp, ...
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def host_busy_seconds() -> float:
    """CPU seconds every core of this machine has spent busy since boot (/proc/stat)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def chained(job: str, unchained: list[str] | None) -> bool:
    """Whether ``job`` runs with chaining on, given ``--no-chaining``'s list."""
    return unchained is None or (bool(unchained) and job not in unchained)


def wait_for_drain(collector: Any, deadline: float) -> bool:
    """Wait until the job has worked off its backlog (or ``deadline``): nothing queued
    between vertices and no vertex's output growing over ``QUIET`` samples (a source
    vertex with work chained into it reads files behind its backlog: its output grows)."""
    quiet, last = 0, None
    while time.time() < deadline:
        time.sleep(collector.every)
        outputs = sum(out for _, out in collector._latest.values())  # the last sample's
        quiet = quiet + 1 if outputs == last else 0
        last = outputs
        if quiet >= QUIET and collector.drained():
            return True
    return False


def run_one(job: str, level: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """One run of ``job`` at ``level``: start, feed, drain, stop; its landing rows written."""
    from connectors.flink.collector import FlinkCollector
    from connectors.flink.rest import FlinkRest
    from connectors.flink.runtime import stop_process

    spec = JOBS[job]
    run_id = f"{job}-{level}-s{seed}"
    run_dir = args.workdir / "runs" / run_id
    landing = args.workdir / "landing"
    inputs = [run_dir / f"input-{i}" for i in range(spec.inputs)]
    for folder in inputs:
        folder.mkdir(parents=True, exist_ok=True)
    low, high = rates(job, level)
    load_before = os.getloadavg()
    started = time.time()
    bundle = ("--bundle-ms", str(args.bundle_ms)) if args.bundle_ms and not spec.sql else ()
    process, url = start_job(
        spec, inputs, landing, run_id, run_dir, job, chaining=chained(job, args.no_chaining),
        extra=bundle,
    )  # fmt: skip
    progress(f"{run_id}: job running at {url} after {time.time() - started:.0f} s")
    offered: dict[str, Path] = {}
    if args.count_files:
        found = FlinkCollector(FlinkRest(url), landing, run_id=run_id)
        sources = [str(s["id"]) for s in found.topology_document()["sources"]]
        if len(sources) == len(inputs) == 1:
            offered = {sources[0]: inputs[0]}
        else:
            progress(f"{run_id}: {len(sources)} sources, {len(inputs)} inputs: files not counted")
    collector = FlinkCollector(
        FlinkRest(url), landing, run_id=run_id, flush_every=2.0, offered=offered
    )
    stop_collecting = threading.Event()
    failures: list[str] = []

    def collect() -> None:
        try:
            collector.run(stop_collecting)
        except Exception as exc:  # the product refused the job: recorded with the run
            failures.append(f"{type(exc).__name__}: {exc}")
            progress(f"{run_id}: the collector stopped: {failures[-1]}")

    collecting = threading.Thread(target=collect, daemon=True)
    collecting.start()
    cpu_start = group_cpu_seconds(process.pid)
    host_start = host_busy_seconds()
    start = time.time() + 1.0
    producers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.flink_jobs.producer",
                "--out",
                str(folder),
                "--seed",
                str(seed + 1000 * i),
                "--low-rate",
                str(low),
                "--high-rate",
                str(high),
                "--duration",
                str(args.duration),
                "--start",
                str(start),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i, folder in enumerate(inputs)
    ]
    while any(p.poll() is None for p in producers):
        if failures:  # nothing is measured: stop at once
            for p in producers:
                p.terminate()
        time.sleep(0.5)
    produced = [p.communicate()[0].strip() for p in producers]
    fed = time.time()
    drained = False if failures else wait_for_drain(collector, fed + DRAIN)
    time.sleep(SETTLE)
    job_cpu = group_cpu_seconds(process.pid) - cpu_start
    host_cpu = host_busy_seconds() - host_start
    elapsed = time.time() - start
    stop_collecting.set()
    collecting.join(timeout=30)
    stop_process(process)
    sinks = 0
    if spec.sql:
        sinks = convert_sql_outputs(run_dir / "sql-out", landing / run_id / "outputs")
    progress(
        f"{run_id}: stopped ({collector.stats.polls} samples, drained={drained}, "
        f"{time.time() - fed:.0f} s after the producers)"
    )
    return {
        "run": run_id,
        "job": job,
        "load": level,
        "seed": seed,
        "rates": {"low": low, "high": high},
        "chaining": chained(job, args.no_chaining),
        "bundle_ms": args.bundle_ms,
        "offered_counted": sorted(offered),
        "producers": produced,
        "drained": drained,
        "collector_error": failures[0] if failures else None,
        "job_cpu_cores": job_cpu / elapsed,
        "other_cpu_cores": max(0.0, host_cpu - job_cpu) / elapsed,
        "loadavg_before": load_before[0],
        "loadavg_after": os.getloadavg()[0],
        **({"sql_rows": sinks} if spec.sql else {}),
    }


def convert_sql_outputs(parts: Path, outputs: Path) -> int:
    """Turn the SQL job's committed part files (JSON rows with ``query``, ``sink``,
    ``stimulus_time``, ``egress_time`` as ISO-8601 UTC) into ``outputs/`` JSON Lines;
    in-progress files (hidden names) are left out. Returns the number of rows."""
    outputs.mkdir(parents=True, exist_ok=True)
    rows = []
    for part in sorted(parts.rglob("part-*")) if parts.is_dir() else []:
        if part.name.startswith("."):
            continue
        for line in part.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            egress = datetime.fromisoformat(row["egress_time"].replace("Z", "+00:00"))
            rows.append(
                json.dumps(
                    {
                        "query": row["query"],
                        "operator": row["sink"],
                        "stimulus_time": float(row["stimulus_time"]),
                        "egress_time": egress.timestamp(),
                        "weight": 1,
                    }
                )
            )
    if rows:
        hidden = outputs / ".sql-parts.jsonl.inprogress"
        hidden.write_text("\n".join(rows) + "\n")
        os.replace(hidden, outputs / "sql-parts.jsonl")
    return len(rows)


def sink_vertex(sink: str, terminals: list[str]) -> str | None:
    """The topology's vertex that a probe's ``sink`` stands for: the terminal vertex
    of that id, else the one whose chain ends with it (``window-sink-probe-sink``),
    else the only terminal vertex; None when none or several fit."""
    if sink in terminals:
        return sink
    ending = [t for t in terminals if t.endswith(f"-{sink}")]
    if len(ending) == 1:
        return ending[0]
    return terminals[0] if len(terminals) == 1 else None


def name_sinks(run_dir: Path) -> dict[str, str]:
    """Rename the ``operator`` (and the ``query``, named after its sink) of the run's
    ``outputs/`` rows to the topology's sink (:func:`sink_vertex`) where the probe's name
    is not one of the topology's operators (the SQL job's sink, a chain's name), since
    the ingestion refuses rows naming an unknown operator. Returns the renaming."""
    import yaml

    topology = run_dir / "topology.yaml"
    if not topology.is_file():
        return {}
    operators = yaml.safe_load(topology.read_text())["operators"]
    consumed = {i for op in operators for i in op["inputs"]}
    terminals = [op["id"] for op in operators if op["id"] not in consumed]
    renamed: dict[str, str] = {}
    for file in sorted((run_dir / "outputs").glob("*.jsonl")):
        rows = [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
        changed = False
        for row in rows:
            vertex = sink_vertex(row["operator"], terminals)
            if vertex is not None and vertex != row["operator"]:
                renamed[row["operator"]] = vertex
                row["operator"] = row["query"] = vertex
                changed = True
        if changed:
            hidden = file.with_name(f".{file.name}.inprogress")
            hidden.write_text("".join(json.dumps(r) + "\n" for r in rows))
            os.replace(hidden, file)
    return renamed


def probe_truth(outputs: Path) -> dict[str, dict[str, float]]:
    """Per sink, straight from the probe rows (no bucketing): worst and mean latency."""
    worst: dict[str, float] = {}
    total: dict[str, float] = {}
    count: dict[str, float] = {}
    for file in sorted(outputs.glob("*.jsonl")):
        for line in file.read_text().splitlines():
            row = json.loads(line)
            sink, latency, weight = row["operator"], row["egress_time"] - row["stimulus_time"], 1
            weight = row.get("weight", 1)
            worst[sink] = max(worst.get(sink, 0.0), latency)
            total[sink] = total.get(sink, 0.0) + latency * weight
            count[sink] = count.get(sink, 0.0) + weight
    return {s: {"wc": worst[s], "mean": total[s] / count[s], "events": count[s]} for s in worst}


def busy_figures(samples: Path) -> dict[str, Any]:
    """Per operator, busy ms per record in (over the run) and the busy time of all
    operators in cores' worth (busy seconds / run length)."""
    import pyarrow.parquet as pq

    files = sorted(samples.glob("*.parquet"))
    if not files:
        return {}
    table = pq.read_table(files).to_pandas()
    last = table.sort_values("time").groupby(["operator", "subtask"]).last()
    first = table.sort_values("time").groupby(["operator", "subtask"]).first()
    span = float(table["time"].max() - table["time"].min()) or 1.0
    busy = (last["busy_seconds"] - first["busy_seconds"]).groupby("operator").sum()
    records = (last["records_in"] - first["records_in"]).groupby("operator").sum()
    per_record = {
        str(op): round(1000 * float(busy[op]) / float(records[op]), 3)
        for op in busy.index
        if records[op] > 0 and busy[op] == busy[op]
    }
    return {"busy_ms_per_record": per_record, "busy_cores": float(busy.fillna(0).sum()) / span}


def relative(value: float | None, truth: float | None) -> float | None:
    if value is None or truth is None or truth <= 0:
        return None
    return (value - truth) / truth


def mace(*command: str) -> str:
    """Run ``python -m mace ...`` (the product's CLI) and return its stdout."""
    result = subprocess.run(
        [sys.executable, "-m", "mace", *command], cwd=REPO, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"mace {command[0]} failed: {result.stderr.strip()[-2000:]}")
    return result.stdout


def figures(entry: dict[str, Any]) -> dict[str, Any]:
    """A report entry's worst cases and means, with the relative errors."""
    measured = entry.get("measured_wc")
    out = {
        "measured_wc": measured,
        "estimated_wc": entry.get("estimated_wc"),
        "predicted_wc": entry.get("predicted_wc"),
        "estimated_error": relative(entry.get("estimated_wc"), measured),
        "predicted_error": relative(entry.get("predicted_wc"), measured),
        "measured_mean": entry.get("measured_mean"),
        "estimated_mean": entry.get("estimated_mean"),
    }
    if "bound_coverage" in entry:
        out["band_coverage"] = entry["bound_coverage"]
    return out


def evaluate(run: dict[str, Any], db: Path, landing: Path) -> dict[str, Any]:
    """The run's figures from ``mace report --json`` and the raw probe and sample rows."""
    report = json.loads(mace("report", "--json", "--db", str(db), "--run", run["run"]))
    run_dir = landing / run["run"]
    return {
        **run,
        "system": figures(report["system"]),
        "queries": {q: figures(e) for q, e in report["queries"].items()},
        "probe": probe_truth(run_dir / "outputs"),
        "threads": report.get("threads", {}),
        **busy_figures(run_dir / "samples"),
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Max absolute errors and min band coverage over the runs that have figures."""

    failed = [r["run"] for r in runs if "system" not in r]
    runs = [r for r in runs if "system" in r]

    def worst(key: str) -> float | None:
        values = [abs(r["system"][key]) for r in runs if r["system"].get(key) is not None]
        return max(values) if values else None

    coverage = [r["system"]["band_coverage"] for r in runs if r["system"].get("band_coverage")]
    table = [
        {
            "run": r["run"],
            "measured_wc": r["system"]["measured_wc"],
            "estimated_error": r["system"]["estimated_error"],
            "predicted_error": r["system"]["predicted_error"],
            "band_coverage": r["system"].get("band_coverage"),
        }
        for r in runs
    ]
    return {
        "runs": len(runs),
        "failed": failed,
        "within_targets": within_targets(runs),
        "max_abs_estimated_error": worst("estimated_error"),
        "max_abs_predicted_error": worst("predicted_error"),
        "min_band_coverage": min(coverage) if coverage else None,
        "table": table,
    }


ESTIMATED_TARGET = 0.10
PREDICTED_TARGET = 0.15
BAND_TARGET = 0.95
"""The targets of docs/flink.md: estimated worst case within 10%, predicted within 15%,
measured latency inside the band in 95% of its subintervals."""


def within_targets(runs: list[dict[str, Any]]) -> dict[str, int]:
    """How many runs meet each target, for the system and for every query of every run
    (a run's queries count one each)."""

    def meets(entry: dict[str, Any], key: str, target: float) -> bool:
        value = entry.get(key)
        return value is not None and abs(value) <= target

    queries = [q for r in runs for q in r["queries"].values()]
    return {
        "runs": len(runs),
        "estimated": sum(meets(r["system"], "estimated_error", ESTIMATED_TARGET) for r in runs),
        "predicted": sum(meets(r["system"], "predicted_error", PREDICTED_TARGET) for r in runs),
        "band": sum((r["system"].get("band_coverage") or 0.0) >= BAND_TARGET for r in runs),
        "queries": len(queries),
        "queries_estimated": sum(meets(q, "estimated_error", ESTIMATED_TARGET) for q in queries),
        "queries_predicted": sum(meets(q, "predicted_error", PREDICTED_TARGET) for q in queries),
    }


def ingest_and_report(
    runs: list[dict[str, Any]], landing: Path, db: Path, lock: Path | None
) -> list[dict[str, Any]]:
    """Name the runs' probe sinks after their vertices, ingest what is new (holding
    ``lock`` unless None: the caller holds it) and report each run."""
    for run in runs:
        run["sinks_renamed"] = {**run.get("sinks_renamed", {}), **name_sinks(landing / run["run"])}
    progress(f"ingesting {len(runs)} runs into {db}")
    with locked(lock) if lock is not None else contextlib.nullcontext():
        mace("ingest", str(landing), "--db", str(db))
    results = []
    for run in runs:
        try:
            results.append(evaluate(run, db, landing))
        except (RuntimeError, KeyError, ValueError) as exc:
            progress(f"{run['run']}: no report: {exc}")
            results.append({**run, "report_error": str(exc)[-500:]})
    return results


def run_grid(args: argparse.Namespace) -> dict[str, Any]:
    """Every job x load x seed, ingested and reported job by job (each job's results are
    in ``<workdir>/results.json`` as soon as they exist): the study's JSON."""
    for item in args.capacity:
        name, _, value = item.partition("=")
        if name not in JOBS:
            raise SystemExit(f"--capacity {item}: unknown job {name!r}")
        JOBS[name] = JobSpec(JOBS[name].module, JOBS[name].inputs, float(value), JOBS[name].sql)
    if args.workdir is None:
        args.workdir = Path(f"/tmp/mace-flink-grid-{time.strftime('%Y%m%d-%H%M%S')}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    landing, db = args.workdir / "landing", args.workdir / "mace.duckdb"
    began = time.time()
    ledger, partial = args.workdir / "runs.json", args.workdir / "results.json"
    runs: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    if args.report_only:
        runs = json.loads(ledger.read_text())
        db.unlink(missing_ok=True)  # ingest every file again, as it is now
        results = ingest_and_report(runs, landing, db, args.lock)
    for job in [] if args.report_only else args.jobs:
        per_job = args.lock_per == "job"
        with locked(args.lock) if per_job else contextlib.nullcontext():
            done = []
            for level, seed in itertools.product(args.loads, args.seeds):
                progress(f"{job} {level} seed {seed}: rates {rates(job, level)}")
                with contextlib.nullcontext() if per_job else locked(args.lock):
                    try:
                        done.append(run_one(job, level, seed, args))
                    except Exception as exc:  # one failed run must not lose the others
                        progress(f"{job} {level} seed {seed} failed: {exc}")
            runs += done
            ledger.write_text(json.dumps(runs, indent=1))
            results += ingest_and_report(done, landing, db, None if per_job else args.lock)
            partial.write_text(json.dumps(results, indent=1))
    if not args.keep:
        for run in runs:
            for path in sorted((args.workdir / "runs" / run["run"]).rglob("*"), reverse=True):
                if path.is_file() and path.name != "job.log":
                    path.unlink()
    return {
        "workdir": str(args.workdir),
        "duration": args.duration,
        "minutes": round((time.time() - began) / 60, 1),
        "levels": LEVELS,
        "low_share": LOW_SHARE,
        "capacity": {job: JOBS[job].capacity for job in args.jobs},
        "runs": results,
        "summary": summary(results),
    }
