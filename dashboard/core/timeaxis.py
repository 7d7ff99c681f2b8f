"""Time on every page: seconds since the run's start, or the wall clock in UTC or in
the viewer's local time zone; and the Overview's automatic refresh.

A run's ``origin`` is the time at which its subinterval 0 starts. Live runs (``mace
demo``, ``simulate --live``) and engine runs (Flink) take it from the wall clock, as
seconds since the Unix epoch; a simulated batch run starts at 0. An origin at or after
:data:`EPOCH_FLOOR` is a wall-clock start: only then is the wall clock offered.

Wall-clock time is UTC by default, always labelled with its zone: one zone for everyone
who shares a link (and for the server's logs and the alerts' webhooks). The "local"
clock shows the zone the browser reports (an IANA name such as ``Europe/Paris``, named
in every title and column). Internally every time is seconds since the run's start;
this module converts to and from what the axes, the range picker, the tables and the
texts show. Pure functions: no Dash, no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from dashboard.core.errors import ViewError

EPOCH_FLOOR = 946_684_800.0
"""2000-01-01T00:00:00Z: an origin at or after it is a wall-clock start."""
SINCE = "since"
WALL = "wall"
LOCAL = "local"
CLOCKS = (WALL, LOCAL, SINCE)
"""The clock choices; the wall clock in UTC is the default."""
ZONE = "UTC"
_ZONE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+){0,2}$")  # Area/City
PRESETS: dict[str, float | None] = {"5m": 300.0, "15m": 900.0, "1h": 3600.0, "all": None}
PRESET_LABELS = {
    "5m": "last 5 minutes",
    "15m": "last 15 minutes",
    "1h": "last hour",
    "all": "whole run",
}
DEFAULT_PRESET = "all"
_CLOCK_TEXT = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:\.\d*)?)$")  # [h:]mm:ss
_TIME_OF_DAY = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d*)?))?$")  # hh:mm[:ss]


def wall_start(origin: float | None) -> float | None:
    """The run's start as seconds since the epoch, or None when it has no wall clock."""
    if origin is None or not math.isfinite(origin) or origin < EPOCH_FLOOR:
        return None
    return float(origin)


def time_zone(name: Any) -> str:
    """The IANA time zone ``name`` the browser reported, or UTC if it is not one (the
    name comes from the browser: anything else is refused, not trusted)."""
    if not isinstance(name, str) or _ZONE_NAME.match(name) is None:
        return ZONE
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # unknown, a folder, not a zone
        return ZONE
    return name


def _offset(zone: ZoneInfo, epoch_seconds: float) -> float:
    """Seconds ``zone`` is ahead of UTC at ``epoch_seconds``."""
    moment = datetime.fromtimestamp(float(epoch_seconds), UTC).astimezone(zone)
    shift = moment.utcoffset()
    return 0.0 if shift is None else shift.total_seconds()


def _datetime64(epoch_seconds: Any) -> np.ndarray:
    millis = np.round(np.asarray(epoch_seconds, dtype=float) * 1000.0)
    return millis.astype("int64").astype("datetime64[ms]")


def _seconds_text(value: float) -> str:
    """Seconds without trailing zeros: 12, 12.5, 0.25."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Clock:
    """How times are shown: since the run's start, or on the wall clock in ``zone``
    (UTC, or the browser's zone) when the run has a wall-clock ``start`` (epoch
    seconds) and ``wall`` is chosen."""

    start: float | None = None
    wall: bool = False
    zone: str = ZONE

    @classmethod
    def of(cls, origin: float | None, choice: str | None, zone: str | None = None) -> Clock:
        """The clock for a run with ``origin`` when the user chose ``choice`` (the local
        clock in the browser's ``zone``); a run without a wall-clock start always shows
        time since its start."""
        start = wall_start(origin)
        wall = start is not None and choice in (WALL, LOCAL)
        return cls(start, wall, time_zone(zone) if wall and choice == LOCAL else ZONE)

    @property
    def _zone(self) -> ZoneInfo | None:
        return None if self.zone == ZONE else ZoneInfo(self.zone)

    @property
    def title(self) -> str:
        return f"wall clock ({self.zone})" if self.wall else "time since run start (s)"

    @property
    def hoverformat(self) -> str:
        return f"%H:%M:%S.%L {self.zone}" if self.wall else ".1f"

    @property
    def key(self) -> str:
        """What the axis values depend on (a new key: the chart's zoom starts afresh)."""
        return self.zone if self.wall else SINCE

    def heading(self, prefix: str = "") -> str:
        """A table column of times: "from t (s)" or "from (UTC)"; "t (s)" or "time (UTC)"."""
        if not self.wall:
            return f"{prefix} t (s)".strip()
        return f"{prefix or 'time'} ({self.zone})"

    def cell(self, seconds: float) -> float | str:
        """A time in a table column of :meth:`heading`: seconds since the start, or the
        time of day on the wall clock (with the date after the run's first day)."""
        return round(float(seconds), 3) if not self.wall else self._time_of_day(seconds)

    def _local(self, epoch: Any) -> Any:
        """Epoch seconds shifted to the zone's time of day (UTC: unchanged)."""
        zone = self._zone
        values = np.asarray(epoch, dtype=float)
        if zone is None or values.size == 0:
            return values
        first, last = _offset(zone, values.min()), _offset(zone, values.max())
        if first == last:  # no change of summer time inside: one shift for all
            return values + first
        shifts = [_offset(zone, t) for t in values.ravel()]
        return values + np.reshape(shifts, values.shape)

    def _epoch(self, local: float) -> float:
        """The epoch seconds whose time in the zone is ``local`` (inverse of _local)."""
        zone = self._zone
        if zone is None:
            return local
        return local - _offset(zone, local - _offset(zone, local))

    def axis(self, seconds: Any) -> np.ndarray:
        """Axis values of ``seconds`` since the start: the seconds themselves, or on the
        wall clock the date and time of day in the clock's zone as text, which a Plotly
        date axis shows as it is (it would read a number of milliseconds in the
        browser's own zone, whatever the clock says); seconds and milliseconds only
        where they are not 0, to keep the figures small."""
        values = np.asarray(seconds, dtype=float)
        if not self.wall:
            return values
        assert self.start is not None
        return np.datetime_as_string(_datetime64(self._local(self.start + values)), unit="auto")

    def seconds(self, value: Any) -> float | None:
        """Seconds since the start of an axis value: a number, or on a wall-clock axis a
        date string (``relayoutData``, ``clickData``); None if it is neither."""
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            return float(value) if math.isfinite(value) and not self.wall else None
        if not isinstance(value, str) or not self.wall or self.start is None:
            return None
        try:
            stamp = np.datetime64(value.strip().replace(" ", "T"), "ms")
        except ValueError:
            return None
        if np.isnat(stamp):
            return None
        return self._epoch(float(stamp.astype("int64")) / 1000.0) - self.start

    def _time_of_day(self, seconds: float) -> str:
        assert self.start is not None
        local = float(self._local(self.start + seconds))
        date, text = str(_datetime64(local)).split("T", 1)
        first = str(_datetime64(float(self._local(self.start)))).split("T", 1)[0]
        text = text.removesuffix(".000")
        return text if date == first else f"{date} {text}"

    def point(self, seconds: float) -> str:
        """One time as a person reads it: "12:03:04 UTC" or "t = 12 s"."""
        if not self.wall:
            return f"t = {_seconds_text(seconds)} s"
        return f"{self._time_of_day(seconds)} {self.zone}"

    def span(self, start: float, end: float) -> str:
        """A time range: "12:03:04–12:03:19 UTC" or "t = 12–27 s"."""
        if not self.wall:
            return f"t = {_seconds_text(start)}\u2013{_seconds_text(end)} s"
        return f"{self._time_of_day(start)}\u2013{self._time_of_day(end)} {self.zone}"

    def text(self, seconds: float) -> str:
        """A time as the range picker shows (and reads) it: seconds, or the date and
        time of day in the clock's zone."""
        if not self.wall:
            return _seconds_text(seconds)
        assert self.start is not None
        local = float(self._local(self.start + seconds))
        return str(_datetime64(local)).replace("T", " ").removesuffix(".000")

    def parse(self, text: Any, field: str) -> float:
        """Seconds since the start typed into the range picker's ``field``: a number of
        seconds or [h:]mm:ss since the start, or on the wall clock a time of day in its
        zone (on the run's first day) or a date and time; ViewError with the expected
        form."""
        raw = "" if text is None else str(text).strip()
        if not raw:
            raise ViewError(f"time range: enter the {field} time")
        if self.wall:
            return self._parse_wall(raw, field)
        try:
            value = float(raw)
        except ValueError:
            match = _CLOCK_TEXT.match(raw)
            if match is None:
                raise ViewError(
                    f"time range: {field} {raw!r} is not a time since the start: enter "
                    "seconds (e.g. 90) or minutes:seconds (e.g. 1:30)"
                ) from None
            hours, minutes, secs = match.groups()
            value = int(hours or 0) * 3600 + int(minutes) * 60 + float(secs)
        if not math.isfinite(value):
            raise ViewError(f"time range: {field} {raw!r} is not a finite number of seconds")
        return value

    def _parse_wall(self, raw: str, field: str) -> float:
        assert self.start is not None
        expected = (
            f"time range: {field} {raw!r} is not a {self.zone} time: enter a time of day "
            "(e.g. 12:03:04) or a date and time (e.g. 2026-11-22 12:03:04)"
        )
        match = _TIME_OF_DAY.match(raw)
        if match is not None:
            hours, minutes, secs = match.groups()
            clock = int(hours) * 3600 + int(minutes) * 60 + float(secs or 0)
            if int(hours) > 23 or int(minutes) > 59 or float(secs or 0) >= 60:
                raise ViewError(expected)
            midnight = math.floor(float(self._local(self.start)) / 86_400) * 86_400
            return self._epoch(midnight + clock) - self.start
        value = self.seconds(raw)
        if value is None or not re.match(r"^\d{4}-\d{2}-\d{2}", raw):
            raise ViewError(expected)
        return value


@dataclass(frozen=True)
class TimeRange:
    """The time range every page shows: a preset (the latest ``preset`` seconds, or all) or a
    fixed ``[start, end]`` in seconds since the run's start."""

    preset: str | None = DEFAULT_PRESET
    start: float | None = None
    end: float | None = None

    @property
    def custom(self) -> bool:
        return self.preset is None

    def store(self) -> dict[str, Any]:
        """The shared store's form of the range."""
        if self.custom:
            return {"from": self.start, "to": self.end}
        return {"preset": self.preset}

    @classmethod
    def from_store(cls, data: Mapping[str, Any] | None) -> TimeRange:
        """The range in the shared store (anything malformed: the default)."""
        if not isinstance(data, Mapping):
            return cls()
        start, end = _finite(data.get("from")), _finite(data.get("to"))
        if start is not None and end is not None and 0 <= start < end:
            return cls(None, start, end)
        preset = data.get("preset")
        return cls(preset if preset in PRESETS else DEFAULT_PRESET)

    def query(self) -> dict[str, str | None]:
        """URL parameters of the range (None: the parameter is removed)."""
        if self.custom:
            assert self.start is not None and self.end is not None
            return {"range": None, "from": _seconds_text(self.start), "to": _seconds_text(self.end)}
        preset = None if self.preset == DEFAULT_PRESET else self.preset
        return {"range": preset, "from": None, "to": None}

    @classmethod
    def from_query(cls, params: Mapping[str, Any]) -> TimeRange:
        """The range a URL names (``?range=5m`` or ``?from=120&to=300``, seconds since the
        run's start); unknown or invalid values are ignored (the default range)."""
        start, end = _finite(_text(params.get("from"))), _finite(_text(params.get("to")))
        if start is not None and end is not None and 0 <= start < end:
            return cls(None, start, end)
        preset = _text(params.get("range"))
        return cls(preset if preset in PRESETS else DEFAULT_PRESET)


def _text(value: Any) -> Any:
    """A query parameter's value (Dash passes one string; parse_qs gives a list)."""
    if isinstance(value, list | tuple):
        return value[0] if value else None
    return value


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def relayout_range(relayout: Mapping[str, Any] | None, clock: Clock) -> TimeRange | None:
    """The range a zoom or pan on the Overview's panels chose (they share one x axis):
    a fixed range, the whole run after a double-click (autorange), or None for events
    about something else (``{"autosize": true}`` when the page resized)."""
    if not relayout:
        return None
    if relayout.get("xaxis.autorange"):
        return TimeRange("all")
    bounds: Sequence[Any] = relayout.get("xaxis.range") or [
        relayout.get("xaxis.range[0]"),
        relayout.get("xaxis.range[1]"),
    ]
    if not isinstance(bounds, Sequence) or isinstance(bounds, str) or len(bounds) != 2:
        return None
    start, end = (clock.seconds(b) for b in bounds)
    if start is None or end is None or not start < end:
        return None
    return TimeRange(None, max(0.0, start), end) if end > 0 else None


def picked_range(clock: Clock, start_text: Any, end_text: Any, length: float) -> TimeRange:
    """The range typed into the picker, checked against a run of ``length`` seconds so
    far (the end may lie ahead: a live run fills it); ViewError says what is wrong."""
    start = clock.parse(start_text, "start")
    end = clock.parse(end_text, "end")
    if start < 0:
        raise ViewError(
            f"time range: the start ({clock.text(start)}) is before the run's start "
            f"({clock.text(0.0)})"
        )
    if not start < end:
        raise ViewError(
            f"time range: the start ({clock.text(start)}) must be before the end "
            f"({clock.text(end)})"
        )
    if start >= length:
        raise ViewError(
            f"time range: the start ({clock.text(start)}) is after the newest data "
            f"({clock.text(length)})"
        )
    return TimeRange(None, start, end)


def window(
    time_range: TimeRange, intervals: int, subinterval: float
) -> tuple[slice, tuple[float, float]]:
    """The subintervals a range shows and the axis range in seconds since the start (a
    fixed range keeps its bounds, also beyond the newest data; a preset spans the
    subintervals it shows, up to the end of the newest)."""
    length = intervals * subinterval
    if time_range.custom:
        assert time_range.start is not None and time_range.end is not None
        first = min(max(0, math.floor(time_range.start / subinterval)), max(intervals - 1, 0))
        stop = min(intervals, max(first + 1, math.ceil(time_range.end / subinterval)))
        return slice(first, stop), (time_range.start, time_range.end)
    seconds = PRESETS[time_range.preset or DEFAULT_PRESET]
    count = intervals if seconds is None else max(1, round(seconds / subinterval))
    first = max(0, intervals - count)
    return slice(first, intervals), (first * subinterval, length)


def clock_from_query(params: Mapping[str, Any]) -> str:
    """The clock a URL names (``?clock=since`` or ``?clock=local``; anything else: the
    wall clock in UTC, the default)."""
    choice = _text(params.get("clock"))
    return choice if choice in CLOCKS else WALL


def clock_query(choice: str | None) -> dict[str, str | None]:
    """The URL parameter of a clock choice (the default is left out)."""
    return {"clock": choice if choice in (SINCE, LOCAL) else None}


REFRESH_RATES = (2.0, 5.0, 10.0, 30.0)
"""Seconds between automatic refreshes the user can choose (or off)."""
OFF = 0.0


def refresh_rates(default: float) -> list[float]:
    """The refresh rates offered: the usual ones and the server's ``default``."""
    return sorted({*REFRESH_RATES, float(default)})


@dataclass(frozen=True)
class Refresh:
    """The Overview's automatic refresh: every ``seconds`` (:data:`OFF`: never), and
    whether the user paused it (a paused refresh resumes at its rate)."""

    seconds: float
    paused: bool = False

    @property
    def running(self) -> bool:
        return not self.paused and self.seconds > 0

    @classmethod
    def from_query(cls, params: Mapping[str, Any], default: float) -> Refresh:
        """The refresh a URL names (``?refresh=10``, ``?refresh=off``, ``&paused=1``);
        a rate that is not offered, or anything else, is the ``default``."""
        raw = _text(params.get("refresh"))
        rate = _finite(raw)
        if raw == "off":
            seconds = OFF
        elif rate is not None and rate in refresh_rates(default):
            seconds = rate
        else:
            seconds = float(default)
        return cls(seconds, _text(params.get("paused")) == "1")

    def query(self, default: float) -> dict[str, str | None]:
        """URL parameters of the refresh (the default rate, and running, left out)."""
        rate = None
        if self.seconds != default:
            rate = "off" if self.seconds == OFF else f"{self.seconds:g}"
        return {"refresh": rate, "paused": "1" if self.paused else None}


def time_range(value: TimeRange | str | None) -> TimeRange:
    """A range from a preset's key (ViewError if unknown) or a range itself."""
    if isinstance(value, TimeRange):
        return value
    if value not in PRESETS:
        raise ViewError(f"time range: unknown choice {value!r}")
    return TimeRange(value)
