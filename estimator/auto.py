"""``auto``: the most accurate registered estimator whose cost fits the interaction budget.

Why. Per-origin is the most accurate estimate on held-out simulated runs (docs/accuracy.md)
but it replays every operator port at w / k, so its cost grows with the run's size;
burst-aware costs about two Mace evaluations and needs a node profile; Mace needs only
the node loads. The default estimate is the best one the user can wait for, so the
choice is made before running, from the run's size:

- per-origin when the work of every operator port is known and its predicted cost fits
  the budget: time ``SECONDS_PER_CELL x (ports + nodes) x D x k x versions`` (the replay
  visits every port and node once per step of w / k, once per placement version; the
  constant is the slowest per-cell cost measured by ``benchmarks/bench_burst.py``,
  docs/speed.md) and replay state: ``(8 x operators + 12 x nodes + 8) x window`` bytes
  for the ring over the backlog, the window being the backlog Mace already sees (Mace is a
  lower bound of the latency, so the replay's pending window is at least Mace's worst
  case plus one subinterval, in steps of w / k), plus ``8 x (operators + ports + nodes)
  x D`` for the work of each operator, port share and node per subinterval;
- otherwise burst-aware when the run has a node profile;
- otherwise Mace.

A choice is a name of :data:`estimator.pathaware.ESTIMATORS` and a sentence saying why, so
that every place that shows an estimate can say which one it is and why. Mace stays the
lower bound of every band whatever the choice.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from estimator.errors import ModelError
from estimator.model import Topology

Result = TypeVar("Result")

AUTO = "auto"
"""The name that asks for the picker instead of a registered estimator."""

DEFAULT = AUTO
"""The estimator used where nobody chose one: ``mace estimate``, ``mace report``,
``/api/report``, ``mace serve``, ``mace demo`` and the dashboard's top bar."""

SECONDS_PER_CELL = 5e-8
"""Predicted replay seconds per (port or node) x step: the slowest per-cell cost
``benchmarks/bench_burst.py`` measured on a run the state budget admits (4000 operators
on 400 nodes, the replay on one core: 4.6e-8), rounded up (docs/speed.md)."""

TIME_BUDGET_S = 0.5
"""The predicted time of one replay that fits the interaction budget: ``mace report``'s
500 ms (its figures are computed once per loaded run and cached)."""

STATE_BUDGET_BYTES = 1 << 30
"""Replay state that fits beside the dashboard's other data on a small machine."""


@dataclass(frozen=True)
class RunSize:
    """What the picker knows of a run before running anything.

    ``sub_buckets`` is k of the run's stored node profile (0 without one: per-origin then
    spreads each subinterval evenly over :data:`estimator.burst.SUB_BUCKETS`);
    ``source_profile`` says whether its sources' events per sub-bucket are stored too
    (per-origin then spreads each port's work like its sources');
    ``port_work`` says whether the work of every operator port is known (measured per
    port, or a model's load); ``mace_worst_s`` is Mace's worst case (the replay's backlog
    window is at least that long); ``versions`` the placement versions (one replay each)."""

    operators: int
    ports: int
    nodes: int
    intervals: int
    subinterval: float
    sub_buckets: int
    port_work: bool
    mace_worst_s: float = 0.0
    versions: int = 1
    source_profile: bool = False


@dataclass(frozen=True)
class Choice:
    """The estimator picked (a registry name) and why, in one sentence."""

    name: str
    reason: str


def predicted_seconds(size: RunSize, default_k: int) -> float:
    """Predicted time of one per-origin replay of the run (see the module docstring)."""
    steps = size.intervals * (size.sub_buckets or default_k)
    return SECONDS_PER_CELL * (size.ports + size.nodes) * steps * max(1, size.versions)


def run_size(
    topology: Topology,
    intervals: int,
    sub_buckets: int | None,
    port_work: bool,
    mace_worst_s: float = 0.0,
    versions: int = 1,
    source_profile: bool = False,
) -> RunSize:
    """The :class:`RunSize` of ``intervals`` subintervals of ``topology`` (``sub_buckets``:
    k of its node profile, None or 0 without one; ``source_profile``: its sources' events
    per sub-bucket are stored)."""
    return RunSize(
        operators=len(topology.operator_ids),
        ports=topology.input_offsets[-1],
        nodes=len(topology.node_ids),
        intervals=intervals,
        subinterval=topology.subinterval,
        sub_buckets=sub_buckets or 0,
        port_work=port_work,
        mace_worst_s=mace_worst_s if math.isfinite(mace_worst_s) else 0.0,
        versions=versions,
        source_profile=source_profile,
    )


def predicted_bytes(size: RunSize, default_k: int) -> int:
    """Predicted replay state: the ring over the backlog window (a power of two, at least
    64 steps, as :mod:`estimator.origins` grows it; per step the work of every operator
    and, per node, its share of the step, busy count and bitmap bit) and the work of every
    operator, port share and node per subinterval."""
    k = size.sub_buckets or default_k
    window = (size.mace_worst_s + size.subinterval) / (size.subinterval / k)
    slots = max(64, 1 << max(0, math.ceil(math.log2(max(window, 1.0)))))
    ring = (8 * size.operators + 12 * size.nodes + 8) * slots
    return ring + 8 * (size.operators + size.ports + size.nodes) * size.intervals


def pick(
    size: RunSize,
    default_k: int,
    time_budget_s: float = TIME_BUDGET_S,
    state_budget_bytes: int = STATE_BUDGET_BYTES,
) -> Choice:
    """The estimator for a run of ``size`` (``default_k``: the replay's sub-buckets
    without a profile) and the reason, per the rules of the module docstring."""
    fallback = _fallback(size)
    if not size.port_work:
        return Choice(
            fallback.name, f"the work of each operator port is not measured; {fallback.reason}"
        )
    seconds = predicted_seconds(size, default_k)
    state = predicted_bytes(size, default_k)
    if seconds > time_budget_s:
        return Choice(
            fallback.name,
            f"per-origin would take about {seconds:.2g} s for {size.ports} ports x "
            f"{size.intervals} subintervals (budget {time_budget_s:g} s); {fallback.reason}",
        )
    if state > state_budget_bytes:
        return Choice(
            fallback.name,
            f"per-origin would need about {state / 2**20:.0f} MiB of replay state for a "
            f"backlog of {size.mace_worst_s:.3g} s (budget {state_budget_bytes / 2**20:.0f} "
            f"MiB); {fallback.reason}",
        )
    if size.sub_buckets and size.source_profile:
        profile = f"the sources' arrival profile at w/{size.sub_buckets}"
    elif size.sub_buckets:
        profile = f"the node profile at w/{size.sub_buckets}"
    else:
        profile = f"an even spread at w/{default_k} (no node profile)"
    return Choice(
        "origin",
        f"the most accurate estimate: per-origin from the work of each operator port and "
        f"{profile}, predicted {seconds:.2g} s within the {time_budget_s:g} s budget",
    )


def run_picked(
    size: RunSize,
    default_k: int,
    compute: Callable[[str], Result],
    time_budget_s: float = TIME_BUDGET_S,
) -> tuple[Choice, Result]:
    """``compute(name)`` for the estimator :func:`pick` chooses, and the choice; when the
    per-origin replay refuses the run (its state limit, a :class:`ModelError`), the
    fallback's, with the refusal in the reason."""
    choice = pick(size, default_k, time_budget_s=time_budget_s)
    try:
        return choice, compute(choice.name)
    except ModelError as error:
        if choice.name != "origin":
            raise
        choice = refused(str(error), size)
        return choice, compute(choice.name)


def refused(reason: str, size: RunSize) -> Choice:
    """The choice after the per-origin replay refused the run (``reason``: its error)."""
    fallback = _fallback(size)
    return Choice(fallback.name, f"per-origin refused the run ({reason}); {fallback.reason}")


def _fallback(size: RunSize) -> Choice:
    if size.sub_buckets:
        return Choice("burst", "burst-aware from the node profile instead")
    return Choice("mace", "Mace instead (no node profile for burst-aware)")
