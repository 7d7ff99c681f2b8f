"""The PromQL-answer -> ``samples/`` transform on answers recorded from a real Prometheus
server (tests/connectors/prometheus_fixture.py made them from backfilled history)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from connectors.errors import ConnectorError
from connectors.flink.collector import sample_rows
from connectors.flink.graph import Member, job_graph, topology_document
from connectors.prometheus.collector import (
    graph_targets,
    job_selector,
    parse_duration,
    parse_time,
    topology_targets,
)
from connectors.prometheus.transform import Target, answer_series, samples_from_answers
from tests.connectors.flink_fixture import recorded
from tests.connectors.prometheus_fixture import (
    CHAINED_SECONDS,
    CHAINED_START,
    FIXTURE_SCENARIOS,
    chained_counters,
    cumulative,
    vertices,
)

FIXTURES = Path(__file__).parent / "fixtures" / "prometheus"


def _answer(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / f"{name}.json").read_text()))


def _rest_targets() -> list[Target]:
    graph = job_graph(
        recorded("job"), recorded("plan"), recorded("vertices"), recorded("taskmanagers")
    )
    return graph_targets(graph, "subtask")


def _by_cell(rows: list[dict[str, Any]]) -> dict[tuple[str, float], dict[str, Any]]:
    return {(r["operator"], r["time"]): r for r in rows}


def _ids() -> dict[str, str]:
    graph = job_graph(
        recorded("job"), recorded("plan"), recorded("vertices"), recorded("taskmanagers")
    )
    return graph.ids


def test_task_scope_answer_with_a_restart_and_a_gap_becomes_the_counters() -> None:
    scenario = FIXTURE_SCENARIOS["v2_restart_gap"]
    rows, report = samples_from_answers(
        answer_series(_answer("v2_restart_gap")), _rest_targets(), 1.0
    )
    cells = _by_cell(rows)
    model = cumulative(scenario)
    ids = _ids()
    restart = scenario.restart_at
    assert restart is not None
    for vid, name, _ in vertices():
        operator = ids[vid]
        for offset in range(scenario.seconds):
            time = scenario.start + offset
            if name == "enrich" and offset in (6, 7):  # not scraped; lookback is 1 s
                assert (operator, time) not in cells
                continue
            # Prometheus repeats the last value within its lookback (1 s here)
            held = offset - 1 if name == "enrich" and offset == 5 else offset
            records_in, records_out, busy = model[vid][held]
            if offset >= restart:  # the new series (started last) wins over the old one
                base = model[vid][restart]
                records_in, records_out, busy = (
                    records_in - base[0], records_out - base[1], busy - base[2]
                )  # fmt: skip
            row = cells[(operator, time)]
            assert (row["records_in"], row["records_out"]) == (records_in, records_out)
            if math.isnan(busy):
                assert math.isnan(row["busy_seconds"])
            else:
                assert row["busy_seconds"] == pytest.approx(busy / 1000)
    assert {r["node"] for r in rows if r["operator"] == "enrich"} == {"enrich-threads"}
    assert report.gaps == 2
    # seven operators restart both counts; the source only its records out (in stays 0)
    assert report.resets == 7 * 2 + 1
    assert report.merged > 0 and report.missing == set() and report.unmatched_series == 0
    assert any("counter resets" in line for line in report.warnings())
    assert len(rows) == 8 * scenario.seconds - 2


def test_operator_scope_names_filtered_labels_and_busy_rates() -> None:
    """The older generation, matched by name through a topology file (no REST ids)."""
    scenario = FIXTURE_SCENARIOS["v1_operator_scope"]
    graph = job_graph(
        recorded("job"), recorded("plan"), recorded("vertices"), recorded("taskmanagers")
    )
    document = topology_document(graph)
    rows, report = samples_from_answers(
        answer_series(_answer("v1_operator_scope")), topology_targets(document), 1.0
    )
    cells = _by_cell(rows)
    model = cumulative(scenario)
    ids = graph.ids
    for vid, _, _ in vertices():
        for offset in range(scenario.seconds):
            records_in, records_out, busy = model[vid][offset]
            row = cells[(ids[vid], scenario.start + offset)]
            assert (row["records_in"], row["records_out"]) == (records_in, records_out)
            if not math.isnan(busy):  # summed busyTimeMsPerSecond = the accumulated busy time
                assert row["busy_seconds"] == pytest.approx(busy / 1000)
    assert cells[("enrich", scenario.start)]["node"] == document["placement"]["enrich"]
    assert report.integrated_busy == 8
    assert report.resets == report.gaps == report.unmatched_series == 0


def test_missing_unmatched_and_malformed_series_are_counted_not_raised() -> None:
    targets = [
        Target("id-a", ("Source: a",), ("Source: a",), (Member("a", None, (), True, False),),
               lambda m, s, tm: "tm"),
        Target("id-b", ("b",), ("b",), (Member("b", None, ("a",), False, True),),
               lambda m, s, tm: "b-threads"),
    ]  # fmt: skip
    series = [
        {"metric": {"__name__": "flink_taskmanager_job_task_numRecordsIn", "task_id": "id-a",
                    "subtask_index": "0"}, "values": [[10, "0"], [11, "oops"]]},
        {"metric": {"__name__": "flink_taskmanager_job_task_numRecordsOut", "task_id": "id-a",
                    "subtask_index": "0"}, "values": [[10, "5"], [11, "9"]]},
        {"metric": {"__name__": "flink_taskmanager_job_task_numRecordsIn", "task_id": "zzz",
                    "subtask_index": "0"}, "values": [[10, "1"]]},
        {"metric": {"__name__": "flink_taskmanager_job_task_numRecordsIn", "task_id": "id-a"},
         "values": [[10, "1"]]},
    ]  # fmt: skip
    rows, report = samples_from_answers(series, targets, 1.0)
    assert [(r["time"], r["records_out"]) for r in rows] == [(10.0, 5.0)]
    assert math.isnan(rows[0]["busy_seconds"])
    assert report.missing == {"b"} and report.unmatched_series == 2 and report.bad_values == 1
    assert len(report.warnings()) == 3


def test_answers_of_another_shape_are_refused() -> None:
    with pytest.raises(ValueError, match="vector"):
        answer_series({"status": "success", "data": {"resultType": "vector", "result": []}})
    with pytest.raises(ValueError, match="bad_data"):
        answer_series({"status": "error", "error": "bad_data"})


def test_job_selector_durations_and_times() -> None:
    assert 'job_name="my-job"' in job_selector("my-job")
    # the reporter's filtered forms (Flink 2.3 replaces, older releases drop)
    assert 'job_name="my_job"' in job_selector("my-job")
    assert 'job_name="myjob"' in job_selector("my-job")
    assert job_selector("clickstream").count(" or ") == 0
    assert 'job_id="' in job_selector(recorded("job")["jid"])
    assert parse_duration("500ms") == 0.5 and parse_duration("2m") == 120.0
    assert parse_duration("15") == 15.0
    assert parse_time("2026-11-19T10:00:00Z", 0.0) == parse_time("1795082400", 0.0)
    assert parse_time("now-1h", 7200.0) == 3600.0
    for bad in ("0s", "soon", "-1s"):
        with pytest.raises(ConnectorError, match="not a duration"):
            parse_duration(bad)
    with pytest.raises(ConnectorError, match="not a time"):
        parse_time("yesterday", 0.0)


def test_series_a_real_flink_23_sql_job_exported_are_matched_by_name() -> None:
    """The reporter's scrape of a real Flink 2.3.0 SQL job (datagen -> Calc -> Calc ->
    StreamingFileWriter -> end, chaining off, parallelism 2 and 1), matched to the
    topology the REST collector wrote for it, through the filtered ``task_name`` labels
    (``Source: clicks[1]`` is ``Source:_clicks_1_``)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = (FIXTURES / "flink23_sql_job.prom").read_text()
    series: list[dict[str, object]] = [
        {"metric": {**s.labels, "__name__": s.name}, "values": [[100.0, str(s.value)]]}
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]
    document = yaml.safe_load((FIXTURES / "flink23_sql_job.topology.yaml").read_text())
    rows, report = samples_from_answers(series, topology_targets(document), 1.0)
    assert report.missing == set() and report.unmatched_series == 0
    by_key = {(r["operator"], r["subtask"]): r for r in rows}
    assert set(by_key) == {
        ("clicks-1", 0), ("clicks-1", 1), ("Calc-2", 0), ("Calc-2", 1), ("Calc-3", 0),
        ("Calc-3", 1), ("StreamingFileWriter", 0), ("StreamingFileWriter", 1), ("end", 0),
    }  # fmt: skip
    # task scope wins over operator scope; what a filter passes on is what its sink reads
    assert by_key[("Calc-3", 0)]["records_out"] <= by_key[("Calc-3", 0)]["records_in"]
    assert math.isnan(by_key[("clicks-1", 0)]["busy_seconds"])
    assert by_key[("Calc-2", 0)]["busy_seconds"] >= 0


def test_a_chained_vertex_gives_its_source_arrivals_and_its_operators_their_counts() -> None:
    """Recorded from a real Prometheus holding the chained job's history (``Source: clicks
    -> parse -> ...``, task and operator scope): the rows are the REST collector's rows
    for the same counters, so the chained source has its records out as arrivals and each
    chained operator its own counts."""
    graph = job_graph(*(recorded(n, "flink-chained") for n in ("job", "plan", "vertices",
                                                              "taskmanagers")))  # fmt: skip
    rows, report = samples_from_answers(
        answer_series(_answer("v2_chained")), graph_targets(graph, "subtask"), 1.0
    )
    expected = [
        row
        for offset in range(CHAINED_SECONDS)
        for row in sample_rows(graph, chained_counters(offset), CHAINED_START + offset, "subtask")
    ]
    expected.sort(key=lambda r: (r["time"], r["operator"], r["subtask"]))
    assert len(rows) == len(expected) == 7 * CHAINED_SECONDS
    for got, want in zip(rows, expected, strict=True):
        assert got.keys() == want.keys()
        for key, value in want.items():
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(got[key]), (got, want)
            else:
                assert got[key] == pytest.approx(value), (key, got, want)
    last = CHAINED_START + CHAINED_SECONDS - 1
    clicks = next(r for r in rows if r["operator"] == "clicks" and r["time"] == last)
    source_vertex = graph.vertices[0].vertex_id
    recorded_out = next(
        float(m["value"])
        for m in recorded("counters", "flink-chained")[source_vertex]
        if m["id"] == "0.Source__clicks.numRecordsOut"
    )
    assert clicks["records_out"] == recorded_out and math.isnan(clicks["busy_seconds"])
    assert report.missing == set() and report.unmatched_series == 0
