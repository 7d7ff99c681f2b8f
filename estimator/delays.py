"""The fixed delays of a real engine's pipeline, calibrated on calm subintervals.

A real engine adds latency that no backlog explains: a file source looks for new
files every few hundred ms, a network edge ships a buffer when it is full or when
its timeout (Flink's ``execution.buffer-timeout``, 100 ms by default) expires, a
Python operator processes records in bundles closed after a size or a time
(``python.fn-execution.bundle.time``, 1000 ms by default). Such a delay is paid by
every event, loaded or not; a backlog comes on top of it.

So the delay of a query is read off the run where the model says nothing waits: a
**calm** subinterval of a query is one whose estimated backlog (the query's estimate
before delays) is at most ``CALM_BACKLOG`` of a subinterval there and in the
subinterval before, with measured outputs. Over the calm subintervals of a window,
the measured max latency gives three figures per query:

- ``high``, the ``n / (n + 1)`` quantile, where ``n`` is the number of subintervals in
  which the query measured outputs over the run: added to the query's estimate and to
  the upper edge of its band. The max latency of a subinterval is its backlog plus the
  delay its slowest event met, and that delay depends on where the event fell in the
  engine's cycles (a bundle, a buffer timeout, a discovery interval): the worst case is
  the largest of ``n`` subintervals, and the largest of ``n`` draws of a delay sits on
  average at its distribution's ``n / (n + 1)`` quantile (:func:`worst_level`), near
  the top of the calm spread, not at its median;
- ``low``, the least: added to the lower edge of the band, which is a lower bound (Mace
  is one, Theorem 3) and so takes the least delay a calm subinterval met, not a quantile
  that leaves some calm subintervals below it by construction;
- ``typical``, the median: the delay a calm subinterval's slowest event usually meets,
  shown to the user beside the others.

A query with fewer than ``MIN_CALM`` calm subintervals in the window keeps no delay
(the estimate is then the backlog alone, as for the simulator) and says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

CALM_BACKLOG = 0.05
"""A calm subinterval's estimated backlog, at most, as a share of the subinterval."""
MIN_CALM = 3
"""Calm subintervals a query needs for its delay to be calibrated."""


@dataclass(frozen=True)
class QueryDelay:
    """A query's fixed delay in seconds: the least, the median and the high quantile over
    its calm subintervals (``calm`` of them; 0 and no delay when too few)."""

    low: float
    typical: float
    high: float
    calm: int

    @property
    def calibrated(self) -> bool:
        return self.calm >= MIN_CALM


NO_DELAY = QueryDelay(0.0, 0.0, 0.0, 0)


def worst_level(subintervals: int) -> float:
    """The quantile at which the largest of ``subintervals`` independent draws of a
    delay sits on average: ``F(max)`` of ``n`` draws follows Beta(n, 1), whose mean is
    ``n / (n + 1)``."""
    return subintervals / (subintervals + 1)


def calm_mask(backlog: np.ndarray, subinterval: float) -> np.ndarray:
    """Subintervals whose estimated backlog, and the previous one's, is at most
    ``CALM_BACKLOG`` of a subinterval (the first has no previous: its own counts)."""
    quiet = backlog <= CALM_BACKLOG * subinterval
    before = np.concatenate([quiet[:1], quiet[:-1]])
    return quiet & before


def calibrate(
    backlog: Mapping[str, np.ndarray],
    measured: Mapping[str, np.ndarray],
    subinterval: float,
    window: tuple[int, int] | None = None,
) -> dict[str, QueryDelay]:
    """Per query, its fixed delay from the calm subintervals of ``window`` ([start,
    stop), the whole run when None): ``backlog`` is the query's estimate before delays,
    ``measured`` its measured max latency per subinterval (NaN without outputs); a calm
    subinterval's delay is its measured max latency less its small backlog. The high
    delay is for the worst case over all the subintervals with outputs, inside the
    window or not: a prediction calibrated on a run's first part is for the whole run."""
    out: dict[str, QueryDelay] = {}
    for query, series in backlog.items():
        latency = np.asarray(measured.get(query, np.full(series.shape, np.nan)), dtype=float)
        n = min(series.size, latency.size)
        calm = calm_mask(series[:n], subinterval) & np.isfinite(latency[:n])
        if window is not None:
            inside = np.zeros(n, dtype=bool)
            inside[max(0, window[0]) : max(0, min(n, window[1]))] = True
            calm &= inside
        values = (latency[:n] - series[:n])[calm]
        measured_subintervals = int(np.isfinite(latency[:n]).sum())
        if values.size < MIN_CALM:
            out[query] = QueryDelay(0.0, 0.0, 0.0, int(values.size))
            continue
        levels = (0.0, 0.5, worst_level(measured_subintervals))
        low, typical, high = np.quantile(values, levels)
        out[query] = QueryDelay(float(low), float(typical), float(high), int(values.size))
    return out


def delay_floor(delays: Mapping[str, QueryDelay]) -> tuple[str, float] | None:
    """The query with the largest calibrated high delay, and that delay: a floor under
    the system's estimated worst case whatever the deployment, since the high delay is
    in every subinterval of its query's estimate (None: no delay calibrated)."""
    calibrated = [(delay.high, query) for query, delay in delays.items() if delay.calibrated]
    if not calibrated:
        return None
    high, query = max(calibrated)
    return query, high
