"""The Flink connector on REST answers recorded from a real Flink 2.3 job."""

from __future__ import annotations

import copy
import itertools
import socket
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from connectors.errors import ConnectorError
from connectors.flink.collector import FlinkCollector, sample_rows, source_metric_names
from connectors.flink.graph import (
    BUNDLE_SIZE_KEY,
    BUNDLE_TIME_KEY,
    CHECKPOINT_KEY,
    JobGraph,
    checkpoint_interval,
    job_graph,
    parse_chain,
    python_bundle,
    topology_document,
    vertex_slug,
    with_operator_names,
)
from connectors.flink.rest import FlinkRest, FlinkRestError
from connectors.flink.workers import PythonWorkers
from estimator.loaders import load_topology
from estimator.model import topology_from_dict
from tests.connectors.flink_fixture import FakeFlink, recorded, serve


def _graph() -> JobGraph:
    return job_graph(
        recorded("job"), recorded("plan"), recorded("vertices"), recorded("taskmanagers")
    )


def test_vertex_names_become_topology_ids() -> None:
    assert vertex_slug("Source: clicks") == "clicks"
    assert vertex_slug("sink: Writer") == "sink"
    assert vertex_slug("Map -> Filter") == "Map-Filter"
    assert vertex_slug("count<br/>") == "count"
    # a legacy sink by its name (the word count example's print(), .add_sink(...).name("out"))
    assert vertex_slug("Sink: Print to Std. Out") == "Print-to-Std.-Out"
    assert vertex_slug("Sink: out") == "out"
    assert vertex_slug("Sink: Writer") == "Sink"  # the writer of a sink named "Sink"


def test_the_job_graph_becomes_the_topology() -> None:
    document = topology_document(_graph())
    topology = topology_from_dict(document)
    assert topology.source_ids == ("clicks",)
    # the demo job's chain, in the plan's edge order
    chain = ["parse", "filter", "enrich", "stream_key_by_map_operator", "count", "sink-probe",
             "sink"]  # fmt: skip
    assert list(topology.operator_ids) == chain
    inputs = {o.id: o.inputs for o in topology.operators}
    assert inputs["parse"] == ("clicks",)
    for upstream, operator in itertools.pairwise(chain):
        assert inputs[operator] == (upstream,)
    assert set(topology.queries) == {"sink"}  # one sink: one query, named after it
    # one node per vertex: its subtasks' threads (parallelism 1 -> capacity 1), all in
    # the TaskManager's machine, whose 2 cores they share
    tm = f"tm-{recorded('taskmanagers')['taskmanagers'][0]['id'][:8]}"
    threads = [n for n in topology.nodes if n.host is not None]
    assert {n.capacity for n in threads} == {1.0}
    assert {n.host for n in threads} == {tm}
    assert topology.capacity_by_node[tm] == 2.0
    assert topology.placement["enrich"] == "enrich-threads"
    assert topology.origin == pytest.approx(recorded("job")["start-time"] / 1000)


def _chained() -> JobGraph:
    return job_graph(*(recorded(n, "flink-chained") for n in GRAPH_ANSWERS))


GRAPH_ANSWERS = ("job", "plan", "vertices", "taskmanagers")


def test_the_table_planners_python_operators_are_known_by_their_names() -> None:
    """Flink's table word count: ``Source: source[1] -> PythonCalc[2] -> Calc[3]`` runs
    the Python UDF, ``GroupAggregate[5] -> Sink: sink[6]`` is Java."""
    table = job_graph(*(recorded(n, "flink-table-python") for n in GRAPH_ANSWERS))
    assert table.python_heads() == {"PythonCalc-2"}
    assert _chained().python_heads() == set()  # a DataStream job's names say nothing of it


def test_a_chained_job_yields_every_chained_operator_and_a_query_per_sink() -> None:
    """The demo job with chaining on: two vertices, ``Source: clicks -> parse -> (filter,
    enrich, key_by; views-filter, views-probe -> views: Writer)`` and ``count,
    click-counts-probe -> click-counts: Writer``."""
    topology = topology_from_dict(topology_document(_chained()))
    assert topology.source_ids == ("clicks",)
    enrich = "filter-enrich-_stream_key_by_map_operator"
    views = "views-filter-views-probe"
    count = "count-click-counts-probe"
    inputs = {o.id: o.inputs for o in topology.operators}
    assert inputs == {
        "parse": ("clicks",),
        enrich: ("parse",),
        views: ("parse",),
        "views": (views,),
        count: (enrich,),  # the network edge leaves the chain from its non-sink leaf
        "click-counts": (count,),
    }
    assert topology.sinks == ("views", "click-counts")
    assert set(topology.queries) == {"views", "click-counts"}
    assert set(topology.operators_of_query("views")) == {"parse", views, "views"}
    assert set(topology.operators_of_query("click-counts")) == {
        "parse", enrich, count, "click-counts"
    }  # fmt: skip
    # one thread node per vertex, both in the TaskManager (2 cores)
    assert topology.placement["parse"] == topology.placement["views"] == "parse-threads"
    assert topology.placement["click-counts"] == f"{count}-threads"
    hosts = {n.id: n.host for n in topology.nodes}
    assert hosts["parse-threads"] == hosts[f"{count}-threads"] is not None
    # the head of each chain carries a prior cost, the operators behind it almost none
    cost = {o.id: o.cost[0] for o in topology.operators}
    assert cost["parse"] == cost[count] > 100 * cost[enrich]


def test_chained_operators_get_their_own_counts_and_the_head_the_busy_time() -> None:
    graph = _chained()
    counters = recorded("counters", "flink-chained")
    rows = {r["operator"]: r for r in sample_rows(graph, counters, 5.0, "subtask")}
    source_vertex, count_vertex = (v.vertex_id for v in graph.vertices)
    value = {
        vid: {m["id"]: float(m["value"]) for m in counters[vid]}
        for vid in (source_vertex, count_vertex)
    }
    assert rows["clicks"]["records_out"] == value[source_vertex]["0.Source__clicks.numRecordsOut"]
    assert rows["parse"]["records_in"] == value[source_vertex]["0.parse.numRecordsIn"]
    assert rows["views"]["records_in"] == value[source_vertex]["0.views__Writer.numRecordsIn"]
    assert rows["views"]["records_out"] == 0.0  # a writer reports none
    busy = value[source_vertex]["0.accumulateBusyTimeMs"] / 1000
    assert rows["parse"]["busy_seconds"] == busy
    assert rows["views"]["busy_seconds"] == rows["views-filter-views-probe"]["busy_seconds"] == 0
    assert rows["count-click-counts-probe"]["busy_seconds"] == (
        value[count_vertex]["0.accumulateBusyTimeMs"] / 1000
    )
    assert len(rows) == 7


def test_chained_sql_operators_are_asked_by_the_names_flink_gives_their_metrics() -> None:
    """As a real Flink 2.3 SQL job lists them at ``/jobs/<id>/vertices/<vid>/metrics``:
    ``0.Source__clicks[1].numRecordsIn``, ``0.Calc[2].numRecordsIn``, ``0.end__Writer...``."""
    chain = parse_chain(
        "[1]:TableSourceScan(table=[[default_catalog, default_database, clicks]], "
        "fields=[a])<br/>+- [2]:Calc(select=[a])<br/>   +- end: Writer<br/>"
    )
    assert [c.metric_name for c in chain] == ["Source__clicks[1]", "Calc[2]", "end__Writer"]


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("parse<br/>", [("parse", None)]),
        (
            "Source: a<br/>+- b<br/>   :- c<br/>   :  +- d: Writer<br/>   +- e<br/>",
            [("Source: a", None), ("b", 0), ("c", 1), ("d: Writer", 2), ("e", 1)],
        ),
        (  # a committer carries commits, not records
            "s: Writer<br/>+- s: Committer<br/>",
            [("s: Writer", None)],
        ),
        (  # Flink SQL names operators [id]:Kind(details)
            "[1]:TableSourceScan(table=[[t]])<br/>+- [2]:Calc(select=[a], where=[(a > 1)])<br/>",
            [("Source: t[1]", None), ("Calc[2]", 0)],
        ),
        (  # a scan is named after its table, as its metrics are (Source: clicks[1])
            "[1]:TableSourceScan(table=[[default_catalog, default_database, clicks, "
            "filter=[=(kind, 'click')]]], fields=[a])<br/>+- [2]:Calc(select=[a])<br/>",
            [("Source: clicks[1]", None), ("Calc[2]", 0)],
        ),
    ],
)
def test_a_plan_description_is_read_as_a_chain_tree(
    description: str, expected: list[tuple[str, int | None]]
) -> None:
    assert [(c.name, c.parent) for c in parse_chain(description)] == expected


@pytest.mark.parametrize(
    ("description", "vertex_name", "metric_names"),
    [
        (  # a SQL source: described as its scan, named (and measured) as its source
            "[1]:TableSourceScan(table=[[c, d, events]], fields=[k])<br/>"
            "+- [2]:Calc(select=[k])<br/>",
            "Source: events[1] -> Calc[2]",
            ["Source__events[1]", "Calc[2]"],
        ),
        (  # a PyFlink window: described by its assigner, named after its functions
            "Window(TumblingProcessingTimeWindows(1000, 0), ProcessingTimeTrigger, function)"
            "<br/>+- sink: Writer<br/>",
            "window, sink-probe -> sink: Writer",
            ["window__sink-probe", "sink__Writer"],
        ),
        (  # a branching chain: the vertex's name cannot be split, the plan's names stay
            "parse<br/>:- light, probe<br/>:  +- a: Writer<br/>+- heavy<br/>",
            "parse -> (light, probe -> a: Writer, heavy)",
            ["parse", "light__probe", "a__Writer", "heavy"],
        ),
    ],
)
def test_chained_operators_are_measured_by_their_names_in_the_vertex_name(
    description: str, vertex_name: str, metric_names: list[str]
) -> None:
    # names and descriptions as a Flink 2.3 MiniCluster reported them for these jobs
    chain = with_operator_names(parse_chain(description), vertex_name)
    assert [c.metric_name for c in chain] == metric_names


def test_taskmanager_mode_uses_the_cores_the_machine_has_and_its_slots() -> None:
    document = topology_document(_graph(), mode="taskmanager")
    tm = recorded("taskmanagers")["taskmanagers"][0]
    # the MiniCluster advertises 1e6 configured cores; the hardware has 2; it was
    # started with 8 task slots, and runs Python operators in its program's process
    assert tm["slotsNumber"] == 8
    # with no configuration read, its Python operators run Flink's default bundles
    assert document["nodes"] == [
        {
            "id": f"tm-{tm['id'][:8]}",
            "capacity": 2.0,
            "slots": 8,
            "python_workers": "shared",
            "bundle_time": 1.0,
            "bundle_size": 1000,
        }
    ]
    assert set(document["placement"].values()) == {f"tm-{tm['id'][:8]}"}


@pytest.mark.parametrize(
    ("configuration", "expected"),
    [
        ({}, (1.0, 1000)),
        ({BUNDLE_TIME_KEY: "250", BUNDLE_SIZE_KEY: "64"}, (0.25, 64)),
        ({BUNDLE_TIME_KEY: "50ms"}, (0.05, 1000)),
        ({BUNDLE_TIME_KEY: "0", BUNDLE_SIZE_KEY: "-3"}, (1.0, 1000)),
        ({BUNDLE_TIME_KEY: "soon", BUNDLE_SIZE_KEY: "1e3"}, (1.0, 1000)),
        ({BUNDLE_TIME_KEY: "nan", BUNDLE_SIZE_KEY: "1000000000000"}, (1.0, 1000)),
    ],
)
def test_python_bundles_are_the_jobs_settings_or_flinks_defaults(
    configuration: dict[str, str], expected: tuple[float, int]
) -> None:
    """``python.fn-execution.bundle.time`` (ms) and ``.size`` as the job's configuration
    sets them; what it does not set, or sets to no usable positive number, is Flink's
    default (1000 ms, 1000 records), as Flink falls back itself."""
    assert python_bundle(configuration) == expected
    graph = job_graph(*(recorded(n) for n in GRAPH_ANSWERS), configuration)
    (node,) = topology_document(graph, mode="taskmanager")["nodes"]
    assert (node["bundle_time"], node["bundle_size"]) == expected


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("1s", 1.0),
        ("500 ms", 0.5),
        ("2 min", 120.0),
        ("10000", 10.0),
        ("0", None),
        ("soon", None),
        ("-1 s", None),
    ],
)
def test_the_jobs_checkpoint_interval_goes_on_its_taskmanager(
    value: str | None, seconds: float | None
) -> None:
    """``execution.checkpointing.interval`` as Flink writes a duration (a number with a
    unit, or plain milliseconds): a barrier finishes every Python bundle, so the model
    needs it; a job without checkpoints, or with a value that is no positive time, has
    none."""
    configuration = {} if value is None else {CHECKPOINT_KEY: value}
    assert checkpoint_interval(configuration) == seconds
    graph = job_graph(*(recorded(n) for n in GRAPH_ANSWERS), configuration)
    (node,) = topology_document(graph, mode="taskmanager")["nodes"]
    assert node.get("checkpoint_interval") == seconds


@pytest.mark.parametrize("slots", [0, -1, True, 2.5, "8", None, 5000])
def test_a_taskmanager_without_a_usable_slot_count_records_none(slots: object) -> None:
    answer = copy.deepcopy(recorded("taskmanagers"))
    answer["taskmanagers"][0]["slotsNumber"] = slots
    graph = job_graph(recorded("job"), recorded("plan"), recorded("vertices"), answer)
    (tm_entry,) = [n for n in topology_document(graph)["nodes"] if "host" not in n]
    assert "slots" not in tm_entry


def _on_a_standalone_cluster(ids: list[str]) -> JobGraph:
    """The recorded job as a standalone session cluster started by ``start-cluster.sh``
    runs it: TaskManagers named ``<host>:<port>-<suffix>``, each configured with as
    many cores as slots (1), on a 2-core machine; the vertices spread over ``ids``."""
    recorded_tm = recorded("taskmanagers")["taskmanagers"][0]
    taskmanagers = {
        "taskmanagers": [
            {**recorded_tm, "id": tm, "slotsNumber": 1, "totalResource": {"cpuCores": 1.0},
             "hardware": {**recorded_tm["hardware"], "cpuCores": 2}}
            for tm in ids
        ]
    }  # fmt: skip
    vertices = {
        vid: {**detail, "subtasks": [{**s, "taskmanager-id": ids[k % len(ids)]}
                                     for s in detail.get("subtasks", [])]}
        for k, (vid, detail) in enumerate(recorded("vertices").items())
    }  # fmt: skip
    return job_graph(recorded("job"), recorded("plan"), vertices, taskmanagers)


def test_a_standalone_taskmanager_has_the_cores_of_its_machine_not_its_slots() -> None:
    # measured on start-cluster.sh's TaskManager: hardware 2 cores, configured 1.0
    graph = _on_a_standalone_cluster(["127.0.0.1:42069-3f70fd"])
    topology = topology_from_dict(topology_document(graph))
    hosts = {n.host for n in topology.nodes if n.host is not None}
    assert [topology.capacity_by_node[host] for host in hosts] == [2.0]
    document = topology_document(graph, mode="taskmanager")
    assert {n["capacity"] for n in document["nodes"]} == {2.0}


def test_taskmanagers_of_one_host_are_nodes_of_their_own() -> None:
    ids = ["127.0.0.1:42069-3f70fd", "127.0.0.1:40117-9c2e01"]
    topology = topology_from_dict(topology_document(_on_a_standalone_cluster(ids)))
    hosts = {n.host for n in topology.nodes if n.host is not None}
    assert hosts == {"tm-127.0.0.1-42069-3f70fd", "tm-127.0.0.1-40117-9c2e01"}


def test_a_standalone_taskmanager_runs_a_python_worker_per_slot() -> None:
    graph = _on_a_standalone_cluster(["127.0.0.1:42069-3f70fd"])
    (tm,) = [n for n in topology_from_dict(topology_document(graph)).nodes if n.host is None]
    assert (tm.python_workers, tm.slots) == ("per-slot", 1)


def test_counter_answers_become_sample_rows() -> None:
    graph = _graph()
    counters = recorded("counters")
    rows = sample_rows(graph, counters, 123.0, "subtask")
    by_operator = {r["operator"]: r for r in rows}
    enrich_vertex = next(v for v, name in graph.ids.items() if name == "enrich")
    values = {m["id"]: float(m["value"]) for m in counters[enrich_vertex]}
    assert by_operator["enrich"]["records_in"] == values["0.numRecordsIn"]
    assert by_operator["enrich"]["busy_seconds"] == values["0.accumulateBusyTimeMs"] / 1000
    assert by_operator["enrich"]["node"] == "enrich-threads"
    assert str(by_operator["clicks"]["node"]).startswith("tm-")
    assert {r["time"] for r in rows} == {123.0}
    assert len(rows) == len(graph.vertices)


def test_a_sample_holds_the_counts_of_the_moment_it_is_stamped_with(tmp_path: Path) -> None:
    """Flink answers metrics from a cache that a request refreshes only after answering:
    read at once, each sample would hold the counts of the poll before (0.3 s, 300
    records, behind its time stamp)."""
    fake = FakeFlink(fetcher=0.2, fetch_delay=0.05, rate=1000.0)
    with serve(fake) as url:
        collector = FlinkCollector(FlinkRest(url), tmp_path, run_id="r", every=0.3)
        assert collector.fetcher_interval == pytest.approx(0.2)
        rows = []
        for _ in range(4):
            rows += collector.sample()
            time.sleep(0.3)
    enrich = next(v for v, name in collector.graph.ids.items() if name == "enrich")
    for row in (r for r in rows if r["operator"] == "enrich"):
        expected = fake.live(enrich, row["time"])["0.numRecordsIn"]
        assert abs(row["records_in"] - expected) <= 30  # the fetch starts within 30 ms


def test_a_fetch_landing_while_the_vertices_are_read_is_read_again(tmp_path: Path) -> None:
    """A fetch that lands after the wait gave up, in the middle of reading the vertices,
    would give a sample whose vertices come from two fetches (an operator that read more
    than its input had sent): every vertex of a sample comes from one fetch."""
    # the wait gives up after 0.2 s, the fetch lands at 0.25 s, a read takes 8 x 0.02 s
    fake = FakeFlink(fetcher=0.4, fetch_delay=0.25, rate=1000.0, request_delay=0.02)
    with serve(fake) as url:
        collector = FlinkCollector(FlinkRest(url), tmp_path, run_id="r", every=0.4)
        samples = []
        for _ in range(3):
            samples.append(collector.sample())
            time.sleep(0.5)
    base = {
        collector.graph.ids[vertex]: float(m["value"])
        for vertex, metrics in fake.counters.items()
        for m in metrics
        if m["id"] == "0.numRecordsIn"
    }
    for rows in samples:
        ages = {
            round((row["records_in"] - base[row["operator"]]) / fake.rate, 6)
            for row in rows
            if row["operator"] in base and row["records_in"] > 0
        }
        assert len(ages) == 1, ages


def test_a_slow_metric_fetcher_sets_the_polling_interval(tmp_path: Path) -> None:
    """Polling faster than Flink refreshes its metric cache would read one fetch twice."""
    with serve(FakeFlink(fetcher=2.0)) as url:
        assert FlinkCollector(FlinkRest(url), tmp_path, every=1.0).every == 2.0
        assert FlinkCollector(FlinkRest(url), tmp_path, every=5.0).every == 5.0
    with serve(FakeFlink()) as url:  # no configuration answer: the interval is not known
        collector = FlinkCollector(FlinkRest(url), tmp_path, every=1.0)
        assert collector.fetcher_interval is None and collector.every == 1.0


def test_a_wrong_url_and_a_missing_job_give_one_line_errors(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(FlinkRestError, match="cannot reach Flink"):
        FlinkCollector(FlinkRest(f"http://127.0.0.1:{port}", timeout=2), tmp_path)
    with pytest.raises(FlinkRestError, match="expected a URL"):
        FlinkRest("ftp://x")
    with serve(FakeFlink()) as url, pytest.raises(ConnectorError, match="no such job"):
        FlinkCollector(FlinkRest(url), tmp_path, job_id="0" * 32)


def test_collector_writes_topology_and_samples_until_the_job_ends(tmp_path: Path) -> None:
    fake = FakeFlink(polls_until_finished=8 * 5)  # 8 vertices: FINISHED after 5 polls
    with serve(fake) as url:
        collector = FlinkCollector(FlinkRest(url), tmp_path, run_id="r", every=0.05,
                                   flush_every=0.1)  # fmt: skip
        fake.fail_next = 2  # a REST hiccup at the start of polling is survived
        stats = collector.run(threading.Event())
    assert "FINISHED" in stats.ended_because
    run = tmp_path / "r"
    topology = load_topology(run / "topology.yaml")
    assert "enrich" in topology.operator_ids
    files = sorted((run / "samples").glob("*.parquet"))
    assert files and not list((run / "samples").glob(".*"))  # no hidden leftovers
    table = pq.read_table(files).to_pandas()
    assert len(table) == stats.rows == stats.polls * 8
    enrich = table[table["operator"] == "enrich"].sort_values("time")
    assert enrich["records_in"].is_monotonic_increasing
    assert enrich["records_in"].iloc[-1] > enrich["records_in"].iloc[0]


def test_a_rescaled_vertex_becomes_a_topology_version(tmp_path: Path) -> None:
    """The job's answer shows enrich at parallelism 2 (as after the adaptive scheduler's
    rescale): the collector re-reads the job at once and writes a version whose enrich
    threads have capacity 2, valid from the time the job runs again."""
    fake = FakeFlink()
    vertex = next(v for v in fake.job["vertices"] if v["name"] == "enrich")
    running_again: list[float] = []

    def rescale() -> None:
        detail = fake.vertices[vertex["id"]]
        detail["subtasks"] = [detail["subtasks"][0], {**detail["subtasks"][0], "subtask": 1}]
        running_again.append(round(time.time() - 0.2, 3))
        fake.job["timestamps"] = {**fake.job["timestamps"], "RUNNING": running_again[0] * 1000}
        vertex["parallelism"] = 2

    stop = threading.Event()
    with serve(fake) as url:
        collector = FlinkCollector(FlinkRest(url), tmp_path, run_id="r", every=0.05)
        timers = [threading.Timer(0.3, rescale), threading.Timer(1.0, stop.set)]
        for timer in timers:
            timer.start()
        stats = collector.run(stop)
    run = tmp_path / "r"
    (version,) = run.glob("topology-*.yaml")
    assert version.name == f"topology-{running_again[0]:.3f}.yaml"
    assert stats.versions == 1
    first, later = load_topology(run / "topology.yaml"), load_topology(version)
    assert first.capacity_by_node["enrich-threads"] == 1.0
    assert later.capacity_by_node["enrich-threads"] == 2.0
    assert later.placement == first.placement


def test_a_rescale_version_waits_for_every_subtask_to_run(tmp_path: Path) -> None:
    """The job is RUNNING again while its new subtask still initializes (a Python worker
    starts): the version is written once that subtask runs, valid from when it did."""
    fake = FakeFlink()
    vertex = next(v for v in fake.job["vertices"] if v["name"] == "enrich")
    detail = fake.vertices[vertex["id"]]
    first = detail["subtasks"][0]
    started: list[float] = []

    def rescale() -> None:
        started.append(round(time.time() - 0.01, 3))
        fake.job["timestamps"] = {**fake.job["timestamps"], "RUNNING": started[0] * 1000}
        detail["subtasks"] = [first, {**first, "subtask": 1, "status": "INITIALIZING"}]
        vertex["parallelism"] = 2

    def run_subtask() -> None:
        now = time.time() * 1000
        started.append(round(now / 1000 - 0.2, 3))
        second = {
            **first,
            "subtask": 1,
            "status": "RUNNING",
            "start-time": now - 500,
            "duration": 500,
            "status-duration": {"INITIALIZING": 300, "RUNNING": 200},
        }
        detail["subtasks"] = [first, second]  # fmt: skip

    stop = threading.Event()
    with serve(fake) as url:
        collector = FlinkCollector(FlinkRest(url), tmp_path, run_id="r", every=0.05)
        timers = [
            threading.Timer(0.3, rescale),
            threading.Timer(0.7, run_subtask),
            threading.Timer(1.3, stop.set),
        ]
        for timer in timers:
            timer.start()
        collector.run(stop)
    (version,) = (tmp_path / "r").glob("topology-*.yaml")
    assert version.name == f"topology-{started[1]:.3f}.yaml"


@pytest.mark.parametrize(
    "seen_by", ["checkpoint", "restarting", "vertex", "vertex-after-a-restart", "job"]
)
def test_a_rescale_version_says_when_the_job_stopped(tmp_path: Path, seen_by: str) -> None:
    """The job stops for a restart and runs again at another parallelism: the version
    says when it stopped: when the checkpoint it restored from completed, else Flink's
    RESTARTING timestamp, else the first poll that saw a vertex (the adaptive scheduler
    keeps the job RUNNING, and its RESTARTING time may be an earlier restart's) or the
    job stop."""
    fake = FakeFlink()
    vertex = next(v for v in fake.job["vertices"] if v["name"] == "enrich")
    stopped: list[float] = []
    running_again: list[float] = []

    def restart_before() -> None:
        fake.job["timestamps"] = {**fake.job["timestamps"], "RESTARTING": time.time() * 1000}

    def stop_job() -> None:
        stopped.append(round(time.time() - 0.02, 3))
        if seen_by == "restarting":
            fake.job["timestamps"] = {**fake.job["timestamps"], "RESTARTING": stopped[0] * 1000}
        if seen_by.startswith("vertex"):
            vertex["status"] = "CANCELING"
        else:
            fake.state = "RESTARTING"

    def run_again() -> None:
        detail = fake.vertices[vertex["id"]]
        detail["subtasks"] = [detail["subtasks"][0], {**detail["subtasks"][0], "subtask": 1}]
        running_again.append(round(time.time() - 0.01, 3))
        fake.job["timestamps"] = {**fake.job["timestamps"], "RUNNING": running_again[0] * 1000}
        vertex["parallelism"], vertex["status"] = 2, "RUNNING"
        fake.state = None
        if seen_by == "checkpoint":
            completed = {"id": 7, "trigger_timestamp": stopped[0] * 1000 - 300,
                         "latest_ack_timestamp": stopped[0] * 1000 - 100}  # fmt: skip
            fake.checkpoints = {
                "latest": {"completed": None, "restored": {"id": 7, "is_savepoint": False}},
                "history": [{"id": 8}, completed],
            }

    stop = threading.Event()
    with serve(fake) as url:
        collector = FlinkCollector(FlinkRest(url), tmp_path, run_id="r", every=0.05)
        timers = [
            threading.Timer(0.3, stop_job),
            threading.Timer(0.6, run_again),
            threading.Timer(1.2, stop.set),
        ]
        if seen_by == "vertex-after-a-restart":
            timers.append(threading.Timer(0.1, restart_before))
        for timer in timers:
            timer.start()
        collector.run(stop)
    (version,) = (tmp_path / "r").glob("topology-*.yaml")
    document = yaml.safe_load(version.read_text(encoding="utf-8"))
    if seen_by == "checkpoint":
        assert document["stopped"] == pytest.approx(stopped[0] - 0.1, abs=1e-3)
    elif seen_by == "restarting":
        assert document["stopped"] == pytest.approx(stopped[0], abs=1e-3)
    else:  # seen at a poll (every 0.05 s) after the stop, before the job ran again
        assert stopped[0] <= document["stopped"] <= running_again[0]
    assert version.name == f"topology-{running_again[0]:.3f}.yaml"
    assert "stopped" not in yaml.safe_load((tmp_path / "r" / "topology.yaml").read_text())


def test_collector_survives_hiccups_and_stops_on_request(tmp_path: Path) -> None:
    fake = FakeFlink()
    stop = threading.Event()
    with serve(fake) as url:
        collector = FlinkCollector(FlinkRest(url), tmp_path, run_id="r", every=0.05)
        fake.fail_next = 3
        timer = threading.Timer(0.6, stop.set)
        timer.start()
        stats = collector.run(stop)
    assert stats.ended_because == "stopped"
    assert stats.failed_polls >= 1 and stats.polls >= 2
    assert len(pq.read_table(sorted((tmp_path / "r" / "samples").glob("*.parquet")))) == stats.rows


def test_drained_when_every_operator_read_what_its_inputs_sent(tmp_path: Path) -> None:
    fake = FakeFlink()
    with serve(fake) as url:
        collector = FlinkCollector(FlinkRest(url), tmp_path, run_id="r")
        assert not collector.drained()  # nothing sampled yet
        collector.poll()
        # recorded answers: filter read 3000 and sent 2095, each later operator read 2095
        assert collector.drained()
        enrich = next(v for v, name in collector.graph.ids.items() if name == "enrich")
        for metric in fake.counters[enrich]:
            if metric["id"] == "0.numRecordsIn":
                metric["value"] = "2000"  # 95 records still queued in front of enrich
        collector.poll()
        assert not collector.drained()


def test_records_a_source_has_not_read_yet_count_as_offered() -> None:
    """A Kafka source reports its consumer lag as pendingRecords (FLIP-33): the queue in
    front of the source is work offered to the job, so it counts in the arrivals."""
    graph = _chained()
    counters = recorded("counters", "flink-chained")
    source_vertex = graph.vertices[0].vertex_id
    assert source_metric_names(graph, source_vertex) == ("Source__clicks",)
    read = next(float(m["value"]) for m in counters[source_vertex] if m["id"].endswith(
        "Source__clicks.numRecordsOut"))  # fmt: skip
    lagging = {
        **counters,
        source_vertex: [*counters[source_vertex], {"id": "0.Source__clicks.pendingRecords",
                                                   "value": "250"}],
    }  # fmt: skip
    rows = {r["operator"]: r for r in sample_rows(graph, lagging, 5.0, "subtask")}
    assert rows["clicks"]["records_out"] == read + 250
    plain = {r["operator"]: r for r in sample_rows(graph, counters, 5.0, "subtask")}
    assert plain["clicks"]["records_out"] == read


def test_the_python_workers_cpu_becomes_work_of_the_busy_threads(tmp_path: Path) -> None:
    fake = FakeFlink(polls_until_finished=8 * 5)
    readings = itertools.count()
    with serve(fake) as url:
        collector = FlinkCollector(
            FlinkRest(url), tmp_path, run_id="r", every=0.05, flush_every=0.1,
            workers=lambda: {"1-1@7": (0.5 * next(readings), 0.0)},
        )  # fmt: skip
        assert isinstance(FlinkCollector(FlinkRest(url), tmp_path / "local").workers, PythonWorkers)
        stats = collector.run(threading.Event())
    assert stats.python_workers == 1
    table = pq.read_table(sorted((tmp_path / "r" / "samples").glob("*.parquet"))).to_pandas()
    per_operator = table.sort_values("time").groupby("operator")["work_seconds"]
    assert all(series.is_monotonic_increasing for _, series in per_operator)
    charged = per_operator.last()
    # each reading after the first (the baseline) added 0.5 s, charged to threads whose
    # busy time grew; sources (busy time NaN) get none
    assert 0 < charged.sum() <= 0.5 * (stats.polls - 1) + 1e-9
    sources = table[table["busy_seconds"].isna()]["operator"].unique()
    assert len(sources) and (charged[sources] == 0).all()


def test_subtasks_not_deployed_yet_run_on_the_only_taskmanager() -> None:
    """Discovered while the job deploys, subtasks have no TaskManager yet: with one
    TaskManager their threads are inside it (its cores), not in a 1-core unknown host."""
    vertices = recorded("vertices")
    deploying = {
        vid: {**detail, "subtasks": [{**s, "taskmanager-id": "(unassigned)"}
                                     for s in detail.get("subtasks", [])]}
        for vid, detail in vertices.items()
    }  # fmt: skip
    graph = job_graph(recorded("job"), recorded("plan"), deploying, recorded("taskmanagers"))
    topology = topology_from_dict(topology_document(graph))
    tm = f"tm-{recorded('taskmanagers')['taskmanagers'][0]['id'][:8]}"
    assert {n.host for n in topology.nodes if n.host is not None} == {tm}
    assert topology.capacity_by_node[tm] == 2.0
