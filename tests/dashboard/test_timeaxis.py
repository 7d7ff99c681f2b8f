"""The Overview's time: wall clock (UTC or the browser's zone) or since the start, ranges
from the picker, a drag on the chart and the URL, and the refresh in the URL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.core.errors import ViewError
from dashboard.core.timeaxis import (
    EPOCH_FLOOR,
    OFF,
    Clock,
    Refresh,
    TimeRange,
    clock_from_query,
    clock_query,
    picked_range,
    relayout_range,
    time_zone,
    wall_start,
    window,
)
from dashboard.shell.urlquery import merged

START = 1_795_000_000.0  # 2026-11-18T11:06:40Z
WALL = Clock(start=START, wall=True)
KOLKATA = Clock(start=START, wall=True, zone="Asia/Kolkata")  # UTC+05:30 all year
PARIS_SPRING = 1_774_744_200.0  # 2026-03-29T00:30:00Z: Paris moves to summer time at 01:00Z


def test_only_an_epoch_origin_is_a_wall_clock_start() -> None:
    assert wall_start(0.0) is None and wall_start(3600.0) is None
    assert wall_start(float("nan")) is None and wall_start(None) is None
    assert wall_start(START) == START and wall_start(EPOCH_FLOOR) == EPOCH_FLOOR
    # a simulated batch run offers time since its start only, whatever was chosen
    assert Clock.of(0.0, "wall") == Clock(None, False)
    assert Clock.of(START, "wall") == WALL
    assert Clock.of(START, "since") == Clock(START, False)
    assert Clock.of(START, None) == Clock(START, False)


def test_axis_titles_and_points_name_the_clock() -> None:
    since = Clock()
    assert since.title == "time since run start (s)"
    assert WALL.title == "wall clock (UTC)"
    assert since.point(12.0) == "t = 12 s" and since.span(12.0, 27.5) == "t = 12–27.5 s"
    assert WALL.point(0.0) == "11:06:40 UTC" and WALL.point(1.25) == "11:06:41.250 UTC"
    assert WALL.span(324.0, 339.0) == "11:12:04–11:12:19 UTC"
    assert WALL.text(1.0) == "2026-11-18 11:06:41" and since.text(90.0) == "90"


@given(st.floats(0, 10 * 86_400, allow_nan=False).map(lambda s: round(s, 3)))
def test_wall_axis_values_read_back_to_the_same_seconds(seconds: float) -> None:
    (value,) = WALL.axis([seconds])
    text = datetime.fromtimestamp(START + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    # the UTC date as text, Plotly shows it as it is (seconds and milliseconds only when
    # they are not 0)
    assert text[:-3].startswith(value) and len(value) >= len("2026-11-18T11:07")
    assert WALL.seconds(value) == pytest.approx(seconds, abs=1e-6)
    plotly = text[:-3].replace("T", " ")  # as relayoutData and clickData give it back
    assert WALL.seconds(plotly) == pytest.approx(seconds, abs=1e-6)
    assert WALL.parse(WALL.text(seconds), "start") == pytest.approx(seconds, abs=1e-6)


def test_axis_values_from_other_clocks_or_forged_payloads_are_refused() -> None:
    assert Clock().seconds(3.5) == 3.5
    assert Clock().seconds("2026-11-18 11:06:43") is None  # a date on a seconds axis
    assert WALL.seconds(3.5) is None  # a number on a date axis
    for forged in (True, None, "soon", float("inf"), [1]):
        assert Clock().seconds(forged) is None and WALL.seconds(forged) is None


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("1:30", 90.0), ("1:02:03", 3723.0), (" 2.5 ", 2.5)]
)
def test_since_start_accepts_seconds_or_clock_notation(text: str, seconds: float) -> None:
    assert Clock().parse(text, "start") == seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("11:06:50", 10.0),  # a time of day: on the run's first day
        ("11:07", 20.0),
        ("2026-11-18 11:16:40", 600.0),
        ("2026-11-19T11:06:40", 86_400.0),
    ],
)
def test_wall_clock_accepts_a_time_of_day_or_a_date(text: str, seconds: float) -> None:
    assert WALL.parse(text, "end") == seconds


@pytest.mark.parametrize(
    ("clock", "text", "message"),
    [
        (Clock(), "", "enter the start time"),
        (Clock(), "abc", "'abc' is not a time since the start: enter seconds"),
        (Clock(), "nan", "not a finite number"),
        (WALL, "12:99:00", "is not a UTC time: enter a time of day"),
        (WALL, "tomorrow", "is not a UTC time"),
        (WALL, "90", "is not a UTC time"),
    ],
)
def test_bad_picker_entries_say_what_is_expected(clock: Clock, text: str, message: str) -> None:
    with pytest.raises(ViewError, match=message):
        clock.parse(text, "start")


def test_picked_range_is_checked_against_the_run() -> None:
    assert picked_range(Clock(), "10", "20", 100.0) == TimeRange(None, 10.0, 20.0)
    # the end may lie beyond the newest data: a live run fills it
    assert picked_range(Clock(), "90", "200", 100.0) == TimeRange(None, 90.0, 200.0)
    with pytest.raises(ViewError, match=r"the start \(20\) must be before the end \(10\)"):
        picked_range(Clock(), "20", "10", 100.0)
    with pytest.raises(ViewError, match="after the newest data"):
        picked_range(Clock(), "100", "120", 100.0)
    with pytest.raises(ViewError, match=r"before the run's start \(2026-11-18 11:06:40\)"):
        picked_range(WALL, "11:00:00", "11:07:00", 100.0)


def test_a_drag_sets_a_range_and_a_double_click_shows_all() -> None:
    assert relayout_range({"xaxis.range[0]": 1.5, "xaxis.range[1]": 2.5}, Clock()) == TimeRange(
        None, 1.5, 2.5
    )
    dates = {"xaxis.range": ["2026-11-18 11:06:41.5", "2026-11-18 11:06:43"]}
    assert relayout_range(dates, WALL) == TimeRange(None, 1.5, 3.0)
    assert relayout_range({"xaxis.range": [-3, 2]}, Clock()) == TimeRange(None, 0.0, 2.0)
    assert relayout_range({"xaxis.autorange": True}, Clock()) == TimeRange("all")
    for other in (None, {}, {"autosize": True}, {"xaxis.range": ["a", 2]}):
        assert relayout_range(other, Clock()) is None
    for forged in ({"xaxis.range": [2, 1]}, {"xaxis.range": [True, 2]}, {"xaxis.range": "ab"}):
        assert relayout_range(forged, Clock()) is None


def test_ranges_round_trip_through_the_url_and_the_store() -> None:
    custom = TimeRange(None, 12.5, 60.0)
    assert custom.query() == {"range": None, "from": "12.5", "to": "60"}
    assert TimeRange.from_query({"from": "12.5", "to": "60"}) == custom
    assert TimeRange.from_store(custom.store()) == custom
    assert TimeRange("5m").query() == {"range": "5m", "from": None, "to": None}
    assert TimeRange.from_query({"range": ["1h"]}) == TimeRange("1h")
    assert TimeRange("all").query()["range"] is None  # the default stays out of the URL
    # unknown or invalid values are ignored
    for params in ({"range": "2d"}, {"from": "x", "to": "3"}, {"from": "5", "to": "1"}, {}):
        assert TimeRange.from_query(params) == TimeRange("all")
    assert TimeRange.from_store({"from": -1, "to": 3}) == TimeRange("all")
    assert TimeRange.from_store(None) == TimeRange("all")


def test_window_of_a_preset_and_of_a_custom_range() -> None:
    assert window(TimeRange("all"), 10, 2.0) == (slice(0, 10), (0.0, 20.0))
    assert window(TimeRange("5m"), 400, 1.0) == (slice(100, 400), (100.0, 400.0))
    # a custom range keeps its bounds and draws the subintervals it touches
    assert window(TimeRange(None, 3.0, 7.5), 10, 2.0) == (slice(1, 4), (3.0, 7.5))
    assert window(TimeRange(None, 15.0, 40.0), 10, 2.0) == (slice(7, 10), (15.0, 40.0))


def test_url_parameters_keep_one_order_and_each_others() -> None:
    assert merged("?from=1&to=2&run=r", {"estimator": "mace"}) == (
        "?run=r&estimator=mace&from=1&to=2"
    )
    assert merged("?run=r&range=5m", {"range": None, "from": "1", "to": "2"}) == (
        "?run=r&from=1&to=2"
    )
    assert merged(None, {"run": None}) == ""


def test_tables_name_the_clock_in_their_headings_and_cells() -> None:
    since = Clock()
    assert [since.heading(p) for p in ("", "from", "flagged at")] == [
        "t (s)",
        "from t (s)",
        "flagged at t (s)",
    ]
    assert [WALL.heading(p) for p in ("", "from", "flagged at")] == [
        "time (UTC)",
        "from (UTC)",
        "flagged at (UTC)",
    ]
    assert KOLKATA.heading("to") == "to (Asia/Kolkata)"
    assert since.cell(12.34567) == 12.346 and WALL.cell(1.5) == "11:06:41.500"
    # after the run's first day the date comes first
    assert WALL.cell(13 * 3600.0) == "2026-11-19 00:06:40"
    assert WALL.point(13 * 3600.0) == "2026-11-19 00:06:40 UTC"


def test_the_local_clock_shows_the_browsers_zone() -> None:
    assert Clock.of(START, "local", "Asia/Kolkata") == KOLKATA
    assert Clock.of(0.0, "local", "Asia/Kolkata") == Clock(None, False)  # no wall clock
    assert Clock.of(START, "since", "Asia/Kolkata") == Clock(START, False)
    assert Clock.of(START, "wall", "Asia/Kolkata") == WALL  # the wall clock is UTC
    assert KOLKATA.title == "wall clock (Asia/Kolkata)"
    assert KOLKATA.hoverformat == "%H:%M:%S.%L Asia/Kolkata"
    assert KOLKATA.point(0.0) == "16:36:40 Asia/Kolkata"
    assert KOLKATA.span(1.0, 2.0) == "16:36:41–16:36:42 Asia/Kolkata"
    assert KOLKATA.text(0.0) == "2026-11-18 16:36:40" and KOLKATA.cell(0.0) == "16:36:40"
    # a date axis shows its values as they are: the zone's time of day
    assert KOLKATA.axis([0.0]).tolist() == ["2026-11-18T16:36:40"]
    assert KOLKATA.parse("16:36:50", "start") == 10.0
    assert KOLKATA.parse("2026-11-18 16:46:40", "end") == 600.0
    with pytest.raises(ViewError, match="is not a Asia/Kolkata time"):
        KOLKATA.parse("25:00", "start")
    assert (WALL.key, KOLKATA.key, Clock().key) == ("UTC", "Asia/Kolkata", "since")


@given(st.floats(0, 10 * 86_400, allow_nan=False).map(lambda s: round(s, 3)))
def test_local_axis_values_read_back_to_the_same_seconds(seconds: float) -> None:
    (value,) = KOLKATA.axis([seconds])
    assert KOLKATA.seconds(value.replace("T", " ")) == pytest.approx(seconds, abs=1e-6)
    assert KOLKATA.parse(KOLKATA.text(seconds), "start") == pytest.approx(seconds, abs=1e-6)


def test_the_local_clock_follows_summer_time() -> None:
    paris = Clock.of(PARIS_SPRING, "local", "Europe/Paris")
    assert paris.point(0.0) == "01:30:00 Europe/Paris"  # UTC+1
    assert paris.point(3600.0) == "03:30:00 Europe/Paris"  # an hour later: UTC+2
    assert paris.axis([0.0, 3600.0]).tolist() == [
        "2026-03-29T01:30",  # seconds and milliseconds only when not 0
        "2026-03-29T03:30",
    ]
    assert paris.parse("03:30", "end") == 3600.0
    assert paris.seconds("2026-03-29 03:30:00") == 3600.0


def test_a_zone_the_browser_sent_is_checked() -> None:
    assert time_zone("Europe/Paris") == "Europe/Paris"
    assert time_zone("America/Argentina/Buenos_Aires") == "America/Argentina/Buenos_Aires"
    for bad in (None, "", "Mars/Olympus", "America", "../../etc/passwd", "zone.tab", 5, "a" * 99):
        assert time_zone(bad) == "UTC"
    assert Clock.of(START, "local", "no/such zone") == WALL


def test_the_clock_and_the_refresh_round_trip_through_the_url() -> None:
    assert clock_from_query({}) == "wall" and clock_from_query({"clock": "sundial"}) == "wall"
    for choice in ("wall", "local", "since"):
        assert clock_from_query(clock_query(choice)) == choice
    assert clock_query("wall") == {"clock": None} and clock_query("local") == {"clock": "local"}
    assert clock_from_query({"clock": ["since"]}) == "since"
    default = 5.0
    for refresh in (Refresh(2.0), Refresh(30.0, True), Refresh(OFF), Refresh(default, True)):
        params = {k: v for k, v in refresh.query(default).items() if v is not None}
        assert Refresh.from_query(params, default) == refresh
    assert Refresh(default).query(default) == {"refresh": None, "paused": None}
    assert Refresh(OFF).query(default) == {"refresh": "off", "paused": None}
    assert Refresh(10.0, True).query(default) == {"refresh": "10", "paused": "1"}
    # the server's own default is offered too (here 3 s)
    assert Refresh.from_query({"refresh": "3"}, 3.0) == Refresh(3.0)
    # anything not offered is the default, running
    for bad in ("7", "-2", "nan", "inf", "fast", "", "0"):
        assert Refresh.from_query({"refresh": bad, "paused": "yes"}, default) == Refresh(default)
    assert not Refresh(OFF).running and not Refresh(5.0, True).running
    assert Refresh(5.0).running
