"""Every hostile input of the probes, as tables of cases: the next probe adds rows.

``RUN_CASES``: a run folder written into a landing folder (built from the tiny run of
:mod:`tests.ingest.landing`); ingesting it either quarantines rows with a reason
(``quarantined``) or marks the run as failed with a reason (``failed``), and never stops
the other runs of the pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tests.ingest.landing import EXECUTIONS, OUTPUTS, TOPOLOGY, write_jsonl, write_run

RunWriter = Callable[[Path, str], None]
"""writer(landing, run_id): writes one run folder."""


@dataclass(frozen=True)
class RunCase:
    """A run folder with one defect and what ingestion must say about it."""

    id: str
    write: RunWriter
    outcome: str  # "quarantined" (rows kept out, the run stored), "failed" (run marked)
    # or "stored" (every row kept)
    reason: str  # a part of the quarantine reason, of the run's failure reason or (stored)
    # of what the pass said about the run
    stored: Callable[[dict[str, pd.DataFrame]], bool] | None = None
    """For a stored run: true of its statistics tables (name -> rows)."""


def _extra_executions(lines: list[object]) -> RunWriter:
    def write(landing: Path, run_id: str) -> None:
        run = write_run(landing, run_id)
        write_jsonl(run / "executions" / "part-1.jsonl", lines)

    return write


def _extra_outputs(lines: list[object]) -> RunWriter:
    def write(landing: Path, run_id: str) -> None:
        run = write_run(landing, run_id)
        write_jsonl(run / "outputs" / "part-1.jsonl", lines)

    return write


def _execution(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "node": "n1", "operator": "a", "port": 0, "stimulus_time": 100.2,
        "start_time": 100.3, "cpu_seconds": 0.1, "outputs": 1,
    }  # fmt: skip
    return {**row, **changes}


def _output(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "query": "q", "operator": "b", "stimulus_time": 100.2, "egress_time": 100.6,
    }  # fmt: skip
    return {**row, **changes}


def _parquet_outputs_sum_overflow(landing: Path, run_id: str) -> None:
    """Three executions in one cell whose ``outputs`` each fit a long, their sum not."""
    run = write_run(landing, run_id)
    frame = pd.concat([EXECUTIONS.iloc[:1]] * 3, ignore_index=True)
    frame["outputs"] = 4 * 10**18
    frame.to_parquet(run / "executions" / "part-1.parquet", index=False)


def _parquet_weight_sum_overflow(landing: Path, run_id: str) -> None:
    run = write_run(landing, run_id)
    frame = pd.concat([OUTPUTS.iloc[:1]] * 3, ignore_index=True)
    frame["weight"] = 4 * 10**18
    frame.to_parquet(run / "outputs" / "part-1.parquet", index=False)


def _uint64_port(landing: Path, run_id: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = write_run(landing, run_id)
    table = pa.Table.from_pandas(EXECUTIONS.iloc[:1].drop(columns="port"), preserve_index=False)
    table = table.append_column("port", pa.array([2**64 - 1], pa.uint64()))
    pq.write_table(table, run / "executions" / "part-1.parquet")


def _samples(lines: list[object]) -> RunWriter:
    def write(landing: Path, run_id: str) -> None:
        run = write_run(landing, run_id)
        (run / "samples").mkdir()
        write_jsonl(run / "samples" / "part-0.jsonl", lines)

    return write


def _sample(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "time": 100.0, "node": "n1", "operator": "a", "subtask": 0, "port": -1,
        "records_in": 1.0, "records_out": 1.0, "busy_seconds": 0.1,
    }  # fmt: skip
    return {**row, **changes}


def _topology(text: str | bytes) -> RunWriter:
    def write(landing: Path, run_id: str) -> None:
        run = write_run(landing, run_id)
        path = run / "topology.yaml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)

    return write


def _capacity_with_long_execution(landing: Path, run_id: str) -> None:
    run = write_run(landing, run_id, TOPOLOGY.replace("capacity: 1.0", "capacity: 0.000001"))
    write_jsonl(run / "executions" / "part-1.jsonl", [_execution(cpu_seconds=86_000.0)])


def _arrival_years_later(landing: Path, run_id: str) -> None:
    run = write_run(landing, run_id)
    nine_years = 9 * 365.25 * 86_400.0
    write_jsonl(
        run / "arrivals" / "part-1.jsonl", [{"source": "s", "stimulus_time": 100.5 + nine_years}]
    )


LONG_EXECUTIONS = 200


def _long_executions(landing: Path, run_id: str) -> None:
    """Executions of the largest cost allowed (a day of CPU on a node of capacity 1)."""
    from ingest.transforms import MAX_COST_SECONDS

    lines = [_execution(cpu_seconds=MAX_COST_SECONDS)] * LONG_EXECUTIONS
    _extra_executions(list(lines))(landing, run_id)


def _long_executions_stored(tables: dict[str, pd.DataFrame]) -> bool:
    """Every busy second of the long executions on n1 (besides the tiny run's 0.5 s), up
    to the subinterval their spans end in."""
    from ingest.transforms import MAX_COST_SECONDS

    busy = tables["node_busy"][tables["node_busy"]["node"] == "n1"]
    expected = LONG_EXECUTIONS * MAX_COST_SECONDS + 0.5
    return bool(
        abs(busy["busy_seconds"].sum() - expected) < 1e-6 * expected
        and busy["interval"].max() == int(0.3 + MAX_COST_SECONDS)
        and busy["interval"].nunique() == len(busy)
    )


def _dipping_counter(landing: Path, run_id: str) -> None:
    """Operator a's counter read once from a stale subtask at every tenth sample: 400
    events a second, 60 samples."""
    samples = []
    for k in range(60):
        count = 400.0 * (k if k % 10 != 5 else k - 4)
        samples.append(_sample(time=100.0 + k, records_in=count, records_out=count))
    _samples(samples)(landing, run_id)


def _dipping_counter_stored(tables: dict[str, pd.DataFrame]) -> bool:
    """The tiny run's 3 executions of a and the 59 intervals of 400 samples: no burst."""
    stats = tables["operator_stats"]
    return bool(stats.loc[stats["operator"] == "a", "events_in"].sum() == 3 + 59 * 400)


RUN_CASES: tuple[RunCase, ...] = (
    # H1: integer fields out of range, or integer sums that overflow
    RunCase("H1-port-1e300", _extra_executions([_execution(port=1e300)]), "quarantined", "'port'"),
    RunCase(
        "H1-outputs-2^63",
        _extra_executions(
            [
                '{"node": "n1", "operator": "a", "port": 0, "stimulus_time": 100.2, '
                '"start_time": 100.3, "cpu_seconds": 0.1, "outputs": 9223372036854775808}'
            ]
        ),
        "quarantined",
        "'outputs'",
    ),
    RunCase("H1-weight-1e300", _extra_outputs([_output(weight=1e300)]), "quarantined", "'weight'"),
    RunCase(
        "H1-subtask-1e300",
        _samples([_sample(), _sample(time=101.0, subtask=1e300)]),
        "quarantined",
        "'subtask'",
    ),
    RunCase("H1-uint64-port", _uint64_port, "quarantined", "'port'"),
    RunCase("H1-outputs-sum", _parquet_outputs_sum_overflow, "quarantined", "'outputs'"),
    RunCase("H1-weight-sum", _parquet_weight_sum_overflow, "quarantined", "'weight'"),
    # H2: a byte that is not UTF-8 in topology.yaml
    RunCase(
        "H2-topology-not-utf8", _topology(TOPOLOGY.encode() + b"# \xff\xfe\n"), "failed", "UTF-8"
    ),
    # H3: topologies outside sane ranges
    RunCase(
        "H3-subinterval-1e-300",
        _topology(TOPOLOGY.replace("subinterval: 1.0", "subinterval: 1.0e-300")),
        "failed",
        "subinterval",
    ),
    RunCase(
        "H3-capacity-1e-300",
        _topology(TOPOLOGY.replace("capacity: 1.0", "capacity: 1.0e-300")),
        "failed",
        "capacity",
    ),
    RunCase("H3-capacity-1e-6-long-execution", _capacity_with_long_execution, "failed", "capacity"),
    # H4: one arrival years after the run's start
    RunCase("H4-arrival-nine-years-later", _arrival_years_later, "quarantined", "beyond the run"),
    # M10: executions of the largest cost: their busy spans cover a day of subintervals
    RunCase("M10-day-long-executions", _long_executions, "stored", "", _long_executions_stored),
    # L5: a counter that dips and comes back is no burst
    RunCase(
        "L5-counter-dips-and-comes-back",
        _dipping_counter,
        "stored",
        "6 counter dip(s) that came back, skipped",
        _dipping_counter_stored,
    ),
)


# -- command line: a hostile file given to a command ----------------------------------

FIGURE3 = Path(__file__).resolve().parents[2] / "examples" / "figure3"
QUERY = """\
query: q2
operators:
  - {id: X, inputs: [s2], cost: COST, selectivity: 1.0}
placement: {X: N1}
sources:
  - {id: s2, arrivals: [ARRIVALS, 1, 1, 1, 1]}
"""


@dataclass(frozen=True)
class CommandCase:
    """Arguments built in a temporary folder; the command must exit with ``status`` and
    say ``message`` in one line on stderr, without a traceback."""

    id: str
    arguments: Callable[[Path], list[str]]
    message: str
    status: int = 2


def _not_utf8(path: Path, text: str) -> Path:
    path.write_bytes(text.encode() + b"# \xff\xfe\n")
    return path


def _estimate_topology_not_utf8(tmp: Path) -> list[str]:
    topology = _not_utf8(tmp / "topology.yaml", (FIGURE3 / "topology.yaml").read_text())
    return ["estimate", str(topology), "--arrivals", str(FIGURE3 / "arrivals.csv"), "--json"]


def _estimate_deep_json(tmp: Path) -> list[str]:
    topology = tmp / "topology.json"
    topology.write_text("[" * 100_000 + "]" * 100_000)
    return ["estimate", str(topology), "--arrivals", str(FIGURE3 / "arrivals.csv"), "--json"]


def _admit(query: str, *extra: str) -> Callable[[Path], list[str]]:
    def arguments(tmp: Path) -> list[str]:
        path = tmp / "query.yaml"
        if "NOT-UTF8" in query:
            _not_utf8(path, query.replace("NOT-UTF8", ""))
        else:
            path.write_text(query)
        return [
            "plan", "admit", str(FIGURE3 / "topology.yaml"), "--arrivals",
            str(FIGURE3 / "arrivals.csv"), "--add", str(path), "--algorithm", "none", "--json",
            *extra,
        ]  # fmt: skip

    return arguments


def _plain_query(cost: str = "1.0", arrivals: str = "1") -> str:
    return QUERY.replace("COST", cost).replace("ARRIVALS", arrivals)


def _foreign_duckdb(tmp: Path) -> Path:
    import duckdb

    path = tmp / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (run_id VARCHAR, owner VARCHAR)")
    con.execute("INSERT INTO runs VALUES ('r1', 'someone else')")
    con.close()
    return path


def _sqlite_file(tmp: Path) -> Path:
    import sqlite3

    path = tmp / "store.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a)")
    con.commit()
    con.close()
    return path


def _truncated_store(tmp: Path) -> Path:
    from tests.dashboard.builders import write_small_run

    path = tmp / "store.duckdb"
    write_small_run(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


COMMAND_CASES: tuple[CommandCase, ...] = (
    # L3: invalid UTF-8 in a topology or query file
    CommandCase("L3-estimate-topology-not-utf8", _estimate_topology_not_utf8, "not UTF-8"),
    CommandCase(
        "L3-admit-query-not-utf8",
        _admit(_plain_query() + "NOT-UTF8", "--objective", "10"),
        "not UTF-8",
    ),
    # L2: deeply nested JSON
    CommandCase("L2-estimate-deep-json", _estimate_deep_json, "nested too deeply"),
    # L8: values of 1e300
    CommandCase(
        "L8-admit-cost-1e300",
        _admit(_plain_query(cost="1.0e+300"), "--objective", "10"),
        "at most 1e+15",
    ),
    CommandCase(
        "L8-admit-arrivals-1e300",
        _admit(_plain_query(arrivals="1.0e+300"), "--objective", "10"),
        "bad count",
    ),
    CommandCase(
        "L8-admit-objective-1e300", _admit(_plain_query(), "--objective", "1e300"), "at most 1e+15"
    ),
    # M8: a read-only command given a DuckDB file that is not a product store
    CommandCase(
        "M8-report-foreign-duckdb",
        lambda t: ["report", "--db", str(_foreign_duckdb(t))],
        "not a mace store",
    ),
    CommandCase(
        "M8-alerts-foreign-duckdb",
        lambda t: ["alerts", "--db", str(_foreign_duckdb(t))],
        "not a mace store",
    ),
    # M9: a SQLite file: no extension download, one line
    CommandCase(
        "M9-report-sqlite",
        lambda t: ["report", "--db", str(_sqlite_file(t))],
        "not a DuckDB database file",
    ),
    # L10: a truncated store
    CommandCase(
        "L10-alerts-truncated",
        lambda t: ["alerts", "--db", str(_truncated_store(t))],
        "truncated database file",
    ),
    CommandCase(
        "L10-report-truncated",
        lambda t: ["report", "--db", str(_truncated_store(t))],
        "truncated database file",
    ),
)


# -- commands on a full disk -------------------------------------------------------------


@dataclass(frozen=True)
class DiskCase:
    """A command run in a process whose files cannot grow past ``limit`` bytes
    (RLIMIT_FSIZE: a write beyond it fails with EFBIG, the path a full disk's ENOSPC
    takes): one line on stderr saying ``message``, exit ``status``, and no hidden
    temporary file left in the folder it wrote to."""

    id: str
    arguments: Callable[[Path, str], list[str]]  # (folder, URL of a fake Flink REST API)
    limit: int
    message: str
    status: int = 1


DISK_CASES: tuple[DiskCase, ...] = (
    # L4: simulate and collect on a full disk
    DiskCase(
        "L4-simulate-parquet",
        lambda t, _: ["simulate", "clickstream-5q", "--out", str(t), "--duration", "20"],
        64 * 1024,
        "File too large",
    ),
    DiskCase(
        "L4-simulate-topology",
        lambda t, _: ["simulate", "clickstream-5q", "--out", str(t), "--duration", "1"],
        0,
        "topology.yaml",
    ),
    DiskCase(
        "L4-collect-topology",
        lambda t, url: ["collect", "flink", "--rest", url, "--out", str(t), "--duration", "1"],
        0,
        "File too large",
        status=2,
    ),
)


# -- servers that answer slowly or strangely -------------------------------------------


class TrickleServer:
    """An HTTP server on 127.0.0.1 that answers every request with ``answer``, one byte
    every ``pace`` seconds (a webhook or a REST API that wedges its client)."""

    def __init__(self, answer: bytes, pace: float) -> None:
        import socket
        import threading

        self.answer, self.pace = answer, pace
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        import threading

        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(client,), daemon=True).start()

    def _answer(self, client: object) -> None:
        import socket
        import time

        assert isinstance(client, socket.socket)
        with client:
            try:
                client.recv(65536)
                for byte in self.answer:
                    if self.stopped.is_set():
                        return
                    client.sendall(bytes([byte]))
                    time.sleep(self.pace)
            except OSError:
                return

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


TRICKLED_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Padding: " + b"x" * 200 + b"\r\n\r\n"
"""A valid 2xx answer, long enough that trickling it takes minutes."""


@dataclass(frozen=True)
class WebhookCase:
    """A ``--webhook`` URL that must be refused with ``message`` (and never echo
    ``secret``)."""

    id: str
    url: str
    message: str
    secret: str = "hunter2"


WEBHOOK_CASES: tuple[WebhookCase, ...] = (
    # L6: link-local addresses, a port beyond 65535, a password in the URL
    WebhookCase("L6-link-local-v4", "http://169.254.169.254/latest/meta-data", "link-local"),
    WebhookCase("L6-link-local-v6", "http://[fe80::1]/hook", "link-local"),
    WebhookCase("L6-port-99999", "http://127.0.0.1:99999/hook", "port"),
    WebhookCase("L6-password-not-shown", "ftp://user:hunter2@127.0.0.1/hook", "http://"),
)


# -- Flink REST answers of the wrong shape or size ---------------------------------------


@dataclass(frozen=True)
class RestCase:
    """One REST answer replaced: ``endpoint`` is ``overview``, ``job``, ``plan``,
    ``vertex``, ``taskmanagers`` or ``metrics``; ``body`` is sent as JSON (``raw``: as
    bytes). ``at_start``: the collector must refuse in one line; otherwise the answer
    turns bad in the middle of a collection, which must go on (a failed poll)."""

    id: str
    endpoint: str
    body: object
    at_start: bool = True


def _plan_with_missing_vertex() -> object:
    from tests.connectors.flink_fixture import recorded

    plan = recorded("plan")
    nodes = plan.get("plan", plan)["nodes"]
    nodes[-1]["inputs"] = [{"num": 0, "id": "ffffffffffffffffffffffffffffffff"}]
    return plan


def _job_with_parallelism(parallelism: float) -> object:
    from tests.connectors.flink_fixture import recorded

    job = recorded("job")
    job["vertices"][0]["parallelism"] = parallelism
    return job


REST_CASES: tuple[RestCase, ...] = (
    # M3: wrong-shaped JSON at the start
    RestCase("M3-overview-list", "overview", []),
    RestCase("M3-overview-null", "overview", None),
    RestCase("M3-overview-int", "overview", 7),
    RestCase("M3-overview-wrong-types", "overview", {"jobs": [{"jid": 1, "state": []}]}),
    RestCase("M3-job-list", "job", [1, 2]),
    RestCase("M3-taskmanagers-null", "taskmanagers", None),
    RestCase("M3-plan-edge-to-missing-vertex", "plan", _plan_with_missing_vertex()),
    # M4: absurd parallelism
    RestCase("M4-parallelism-1e8", "job", _job_with_parallelism(10**8)),
    # M3: ... and in the middle of a collection
    RestCase("M3-metrics-null-mid", "metrics", None, at_start=False),
    RestCase("M3-metrics-object-mid", "metrics", {"id": 1}, at_start=False),
    RestCase("M3-vertex-int-mid", "vertex", 3, at_start=False),
    RestCase("M3-plan-missing-vertex-mid", "plan", _plan_with_missing_vertex(), at_start=False),
)


def _store_with_a_stray_row(tmp: Path) -> Path:
    """The small run of the dashboard tests plus one arrival 283 million subintervals
    after its start, as ingestion stored it before it bounded run lengths."""
    import pandas as pd

    from storage.db import connect
    from storage.writes import merge_source_arrivals
    from tests.dashboard.builders import write_small_run

    path = tmp / "store.duckdb"
    write_small_run(path)
    con = connect(path)
    try:
        source = con.execute("SELECT source FROM source_arrivals LIMIT 1").fetchall()[0][0]
        stray = {"run_id": ["small"], "source": [source], "interval": [283_000_000], "events": [1]}
        merge_source_arrivals(con, pd.DataFrame(stray))
    finally:
        con.close()
    return path


COMMAND_CASES += (
    # H4: a run stored before run lengths were bounded
    CommandCase(
        "H4-report-stray-row",
        lambda t: ["report", "--db", str(_store_with_a_stray_row(t))],
        "more than the limit",
    ),
)


# -- requests to the dashboard's server ------------------------------------------------

SERVED_AT = ("127.0.0.1", 8050)
"""Where the app of :data:`HTTP_CASES` is told it listens."""
PROXY_HOST = "mace.example.org"
"""The name given to the app as ``mace serve --allowed-host``."""


@dataclass(frozen=True)
class HttpCase:
    """A GET of ``/`` with ``headers`` to the app served at :data:`SERVED_AT` (with basic
    authentication when ``authenticated``): the answer's status, and nothing logged at
    warning level or above."""

    id: str
    headers: dict[str, str]
    status: int
    authenticated: bool = False


HTTP_CASES: tuple[HttpCase, ...] = (
    # L1: an Authorization header that is not ASCII
    HttpCase("L1-auth-not-ascii", {"Authorization": "Basic ÿé£"}, 401, authenticated=True),
    HttpCase("L1-auth-scheme-not-ascii", {"Authorization": "Bäsic x"}, 401, authenticated=True),
    # L7: the Host header (DNS rebinding): other names are refused, loopback and the proxy
    # name answered
    HttpCase("L7-host-rebound", {"Host": "attacker.example:8050"}, 400),
    HttpCase("L7-host-rebound-no-port", {"Host": "attacker.example"}, 400),
    HttpCase("L7-host-other-port", {"Host": "localhost:9999"}, 400),
    HttpCase("L7-host-rebound-authenticated", {"Host": "attacker.example"}, 400, True),
    HttpCase("L7-host-localhost", {"Host": "localhost:8050"}, 200),
    HttpCase("L7-host-ipv4", {"Host": "127.0.0.1:8050"}, 200),
    HttpCase("L7-host-ipv6", {"Host": "[::1]:8050"}, 200),
    HttpCase("L7-host-proxy", {"Host": PROXY_HOST}, 200),
    HttpCase("L7-host-proxy-port", {"Host": f"{PROXY_HOST.upper()}:443"}, 200),
)


# -- what the browser sends to a page's server code --------------------------------------


def _deep_link() -> str:
    """A ``scenario=`` value whose JSON nests 30,000 lists deep (about 120 characters)."""
    import base64
    import zlib

    raw = b"[" * 30_000 + b"]" * 30_000
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def _edit_log(length: int) -> dict[str, object]:
    """The What-if page's session store with a log of ``length`` edits for run ``small``."""
    edit = {"action": "move", "values": {"operator": "b", "node": "n1"}, "label": "moved b"}
    return {"small": [edit] * length}


@dataclass(frozen=True)
class PageCase:
    """A call of a page's server code with what a hostile browser sent (``call(inputs)``,
    ``inputs``: the What-if baseline of the small run): it raises a ``MaceError`` (the
    page's one-line answer) saying ``message``, never another exception (HTTP 500)."""

    id: str
    call: Callable[[object], object]
    message: str


def _edits_for(store: object) -> Callable[[object], object]:
    def call(inputs: object) -> object:
        from dashboard.whatif.scenario import edits_for

        return edits_for(store, "small")

    return call


def _decode(text: str) -> Callable[[object], object]:
    def call(inputs: object) -> object:
        from dashboard.whatif.link import decode_link

        return decode_link(text)

    return call


def _admit_text(text: str, name: str) -> Callable[[object], object]:
    def call(inputs: object) -> object:
        from dashboard.whatif.planning import added_query_from_text

        return added_query_from_text(text, name)

    return call


def _plans(text: str, name: str) -> Callable[[object], object]:
    def call(inputs: object) -> object:
        from dashboard.whatif.planning import plan_ranking

        return plan_ranking(inputs, "q1", [(name, text)])  # type: ignore[arg-type]

    return call


DEEP_JSON = "[" * 30_000 + "]" * 30_000
DEEP_YAML = "[" * 30_000 + "]" * 30_000

PAGE_CASES: tuple[PageCase, ...] = (
    # M5: an edit log longer than the page lets one grow is refused before any fold
    PageCase("M5-edit-log-201", _edits_for(_edit_log(201)), "more than the limit of 200"),
    PageCase("M5-edit-log-4000", _edits_for(_edit_log(4000)), "4000 edits"),
    # L2: deeply nested JSON from a link, the Admit box and Compare plans
    PageCase("L2-link-nested", _decode(_deep_link()), "cannot be read"),
    PageCase("L2-admit-deep-json", _admit_text(DEEP_JSON, "query.json"), "nested too deeply"),
    PageCase("L2-admit-deep-yaml", _admit_text(DEEP_YAML, "query.yaml"), "not valid YAML"),
    PageCase("L2-plans-deep-json", _plans(DEEP_JSON, "plan.json"), "nested too deeply"),
    PageCase("L2-plans-deep-yaml", _plans(DEEP_YAML, "plan.yaml"), "not valid YAML"),
)
