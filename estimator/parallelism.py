"""What-if in the knobs a Flink user turns: parallelism, slots, TaskManagers, cores.

A Flink run's topology (``connectors.flink.graph``) has one *thread node* per vertex,
capacity = its parallelism, hosted by a TaskManager node of capacity = its cores. A
simulated run has machines of any capacity and no hosts. Both are read as **units**:
groups of identical subtasks (:func:`shape_of`):

- a hosted node of capacity ``c`` is ``p = round(c)`` subtasks of capacity ``c / p``
  (a thread each: capacity 1) inside its TaskManager;
- a node without a host that hosts nobody (a simulated machine) is one subtask of its
  capacity; a parallelism edit makes it ``p`` copies of that machine.

:func:`resolve` turns edits (a unit's parallelism, a machine's capacity, the slots per
TaskManager, the number of TaskManagers and their cores) into a :class:`Deployment`,
and :func:`expand` into :class:`Resources`: one node per subtask, the TaskManagers as
their hosts. The rules:

- **Load split evenly.** Each subtask of a unit carries ``1 / p`` of the unit's load
  (a keyed operator's key groups spread evenly; measured key skew is not used).
- **Slot sharing** (Flink's default: every vertex in the ``default`` slot-sharing group).
  A shared slot holds one subtask of each vertex, so the job needs as many slots as its
  largest parallelism, and slot ``k`` holds subtask ``k`` of every vertex with more than
  ``k`` subtasks (the scheduler co-locates subtasks of equal index).
- **Slots fill TaskManagers one after another**: slot ``k`` is on TaskManager
  ``k // slots``. With ``cluster.evenly-spread-out-slots`` false (Flink's default,
  ``ClusterOptions``) the slot manager takes any free slot rather than spreading them,
  and an active resource manager (Kubernetes, YARN) starts TaskManagers as the slots are
  requested, so the first TaskManagers fill before the next ones get work.
- **TaskManagers**: unless set, the recorded ones, and more when the slots need more
  (``ceil(slots needed / slots)``, as an active resource manager starts them); a set
  count that cannot hold the slots is refused, as Flink would fail to schedule the job.
- **Slots per TaskManager**: unless set, the recorded ones (the fewest of the
  TaskManagers' when they differ, as the collector reads them from Flink), else, for a
  run that does not say, the fewest that hold the recorded job on its TaskManagers.
- **Cores**: the subtasks of a TaskManager share its cores (its node hosts theirs).
- **Python workers**: the subtasks of a Python operator (a thread hosted by a Python
  worker node, :mod:`estimator.python_worker`) share their TaskManager's Python worker
  node instead: one core (one interpreter), or on a TaskManager recorded as running a
  worker per slot (PyFlink's process mode) one core per slot holding Python subtasks,
  within the TaskManager's cores. An added TaskManager runs its Python operators as
  the first recorded one does.

With parallelism 1 everywhere on one TaskManager the resources, their loads and the
nodes hosting each query are exactly today's model (``estimator.runs.node_loads``,
``query_hosts``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from estimator.bundles import full_bundle_work
from estimator.errors import ScenarioError
from estimator.mace import Stops, estimate_from_dlts, stop_series
from estimator.model import MAX_SLOTS, Topology
from estimator.python_worker import WORKER_CAPACITY, worker_node_id, worker_taskmanager
from estimator.runs import RunAnalysis, bundle_excess, node_loads

DEFAULT_MAX_PARALLELISM = 128
"""Flink's default max parallelism of an operator with parallelism up to 85 (its rule:
``min(max(roundUpToPowerOfTwo(1.5 p), 128), 32768)``); the bound of a parallelism edit
when the job's own is not known."""
MAX_TASKMANAGERS = 1024
MAX_CORES = 1024.0
MAX_CAPACITY = 1.0e6
TARGET_UTILIZATION = 0.7
"""The Flink Kubernetes Operator autoscaler's default target utilisation per vertex
(``job.autoscaler.target.utilization``, ``AutoScalerOptions.TARGET_UTILIZATION``)."""
SUBTASK_MARK = "#"


def max_parallelism(parallelism: int) -> int:
    """Flink's default max parallelism of an operator running with ``parallelism``."""
    power = 1 << max(0, math.ceil(math.log2(max(1.0, parallelism + parallelism / 2))))
    return min(max(power, DEFAULT_MAX_PARALLELISM), 32768)


@dataclass(frozen=True)
class Unit:
    """Identical subtasks: a vertex's threads (``host`` its recorded TaskManager;
    ``python`` when they run their work in its Python worker) or a simulated machine
    (no host)."""

    node: str
    capacity: float  # of one subtask
    parallelism: int
    host: str | None
    python: bool = False


@dataclass(frozen=True)
class Shape:
    """The deployment a run's topology records: its units in node order and its
    TaskManagers (host nodes) with their cores."""

    units: tuple[Unit, ...]
    taskmanagers: tuple[str, ...]
    cores: tuple[float, ...]
    recorded_slots: tuple[int | None, ...] = ()  # per TaskManager, None: not recorded
    python_workers: tuple[str | None, ...] = ()  # per TaskManager (Node.python_workers)

    def per_slot(self, k: int) -> bool:
        """Whether TaskManager ``k`` (an added one: as the first) runs a Python worker
        per slot."""
        modes = self.python_workers
        return bool(modes) and modes[k if k < len(modes) else 0] == "per-slot"

    @property
    def unit_by_node(self) -> dict[str, Unit]:
        return {u.node: u for u in self.units}

    @property
    def slots(self) -> int:
        """The slots per TaskManager: the fewest recorded, where every TaskManager's are;
        else the fewest that hold the recorded job on its TaskManagers."""
        hosted = [u.parallelism for u in self.units if u.host is not None]
        if not hosted or not self.taskmanagers:
            return 1
        holding = max(1, math.ceil(max(hosted) / len(self.taskmanagers)))
        if self.slots_recorded:
            return max(min(s for s in self.recorded_slots if s is not None), holding)
        return holding

    @property
    def slots_recorded(self) -> bool:
        """Whether every TaskManager's slots were recorded (else :attr:`slots` is the
        fewest that hold the job)."""
        recorded = self.recorded_slots
        return len(recorded) == len(self.taskmanagers) > 0 and None not in recorded


@dataclass(frozen=True)
class Edits:
    """What the user changes; ``None`` or empty: as recorded."""

    parallelism: Mapping[str, int] = field(default_factory=dict)  # unit node -> subtasks
    capacity: Mapping[str, float] = field(default_factory=dict)  # machine -> capacity
    slots: int | None = None
    taskmanagers: int | None = None
    cores: float | None = None


@dataclass(frozen=True)
class Deployment:
    """A complete deployment: every unit's subtasks and their capacity, the slots per
    TaskManager, and each TaskManager's cores (none for a simulated run)."""

    parallelism: Mapping[str, int]
    capacity: Mapping[str, float]
    slots: int
    cores: tuple[float, ...]

    @property
    def taskmanagers(self) -> int:
        return len(self.cores)

    @property
    def subtasks(self) -> int:
        return sum(self.parallelism.values())


def shape_of(topology: Topology) -> Shape:
    """The units and TaskManagers of ``topology`` (see the module's rules)."""
    hosts = {n.host for n in topology.nodes if n.host is not None}
    workers = {h for h in hosts if worker_taskmanager(h) is not None}
    taskmanagers = (hosts - workers) | {worker_taskmanager(w) for w in workers}
    units = []
    for node in topology.nodes:
        if node.id in hosts or node.id in taskmanagers:
            continue
        if node.host is None:
            units.append(Unit(node.id, node.capacity, 1, None))
            continue
        p = max(1, round(node.capacity))
        host = worker_taskmanager(node.host) or node.host
        units.append(Unit(node.id, node.capacity / p, p, host, node.host in workers))
    tms = tuple(n.id for n in topology.nodes if n.id in taskmanagers)
    caps = topology.capacity_by_node
    nodes = {n.id: n for n in topology.nodes}
    return Shape(
        tuple(units),
        tms,
        tuple(caps[t] for t in tms),
        tuple(nodes[t].slots for t in tms),
        tuple(nodes[t].python_workers for t in tms),
    )


def unit_of(topology: Topology, shape: Shape, name: str) -> str:
    """The unit an operator or node name stands for (an operator: the node it is on)."""
    units = shape.unit_by_node
    if name in units:
        return name
    node = topology.placement.get(name)
    if node in units:
        return node
    known = sorted(topology.operator_ids)
    listed = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
    raise ScenarioError(f"unknown operator '{name}' (operators: {listed})")


def resolve(shape: Shape, edits: Edits) -> Deployment:
    """The deployment after ``edits`` (every value checked; one line per mistake)."""
    units = shape.unit_by_node
    hosted = bool(shape.taskmanagers)
    for what, value in (("slots", edits.slots), ("taskmanagers", edits.taskmanagers)):
        if value is None:
            continue
        if not hosted:
            raise ScenarioError(
                f"{what}: the run has no TaskManagers (no node hosts others, as in a "
                "simulated run); change NODE.parallelism or NODE.capacity"
            )
        upper = MAX_SLOTS if what == "slots" else MAX_TASKMANAGERS
        if not 1 <= value <= upper:
            raise ScenarioError(f"{what}: must be from 1 to {upper}, got {value}")
    if edits.cores is not None:
        if not hosted:
            raise ScenarioError("cores: the run has no TaskManagers (no node hosts others)")
        if not (math.isfinite(edits.cores) and 0 < edits.cores <= MAX_CORES):
            raise ScenarioError(f"cores: must be a number in (0, {MAX_CORES:g}], got {edits.cores}")
    if edits.slots is not None and edits.cores is not None and edits.slots > edits.cores:
        raise ScenarioError(
            f"slots: {edits.slots} slots per TaskManager is more than its {edits.cores:g} cores"
        )
    parallelism = {u.node: u.parallelism for u in shape.units}
    for node, p in edits.parallelism.items():
        unit = units.get(node)
        if unit is None:
            raise ScenarioError(f"unknown operator '{node}'")
        bound = max_parallelism(unit.parallelism)
        if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= bound:
            raise ScenarioError(
                f"{node}.parallelism: must be a whole number from 1 to {bound} "
                f"(the max parallelism), got {p}"
            )
        parallelism[node] = p
    capacity = {u.node: u.capacity for u in shape.units}
    for node, amount in edits.capacity.items():
        unit = units.get(node)
        if unit is None:
            raise ScenarioError(f"unknown node '{node}'")
        if unit.host is not None:
            raise ScenarioError(
                f"{node}.capacity: its subtasks are threads of one core each; set cores instead"
            )
        if not (math.isfinite(amount) and 0 < amount <= MAX_CAPACITY):
            raise ScenarioError(f"{node}.capacity: must be in (0, {MAX_CAPACITY:g}], got {amount}")
        capacity[node] = amount
    if not hosted:
        return Deployment(parallelism, capacity, 1, ())
    slots = edits.slots if edits.slots is not None else shape.slots
    needed = max(parallelism[u.node] for u in shape.units if u.host is not None)
    count = edits.taskmanagers
    if count is None:
        count = max(len(shape.taskmanagers), math.ceil(needed / slots))
    elif needed > count * slots:
        raise ScenarioError(
            f"taskmanagers: {count} TaskManagers x {slots} slots hold {count * slots} "
            f"subtasks of a vertex, the job needs {needed} slots"
        )
    if edits.cores is not None:
        cores = (edits.cores,) * count
    else:
        largest = max(shape.cores)
        cores = tuple(shape.cores[k] if k < len(shape.cores) else largest for k in range(count))
    return Deployment(parallelism, capacity, slots, cores)


def slot_sharing(parallelism: Sequence[int], slots: int) -> list[list[int]]:
    """Per vertex, the TaskManager of each subtask: subtask ``k`` in shared slot ``k``,
    slots filling TaskManagers one after another."""
    return [[k // slots for k in range(p)] for p in parallelism]


@dataclass(frozen=True)
class Resources:
    """The deployment's nodes: subtasks (unit by unit, in the topology's node order),
    then TaskManagers, then the Python workers of those running Python subtasks; per
    subtask row its unit and its host row (a TaskManager's, or a Python worker's)."""

    ids: tuple[str, ...]
    capacities: np.ndarray
    unit_rows: Mapping[str, tuple[int, ...]]
    host_row: Mapping[int, int]  # subtask row -> TaskManager or Python worker row
    tm_rows: tuple[int, ...]


def _tm_id(shape: Shape, k: int) -> str:
    if k < len(shape.taskmanagers):
        return shape.taskmanagers[k]
    return f"tm-added-{k + 1 - len(shape.taskmanagers)}"


def expand(shape: Shape, deployment: Deployment) -> Resources:
    """The resources of ``deployment`` (module rules)."""
    ids: list[str] = []
    caps: list[float] = []
    unit_rows: dict[str, tuple[int, ...]] = {}
    hosted_units = [u for u in shape.units if u.host is not None]
    placed = slot_sharing([deployment.parallelism[u.node] for u in hosted_units], deployment.slots)
    where = {u.node: tms for u, tms in zip(hosted_units, placed, strict=True)}
    first_tm = sum(deployment.parallelism[u.node] for u in shape.units)
    host_row: dict[int, int] = {}
    python_tm: dict[int, int] = {}  # subtask row -> its TaskManager, for Python subtasks
    python_slots: dict[int, set[int]] = {}  # TaskManager -> its slots holding them
    for unit in shape.units:
        p = deployment.parallelism[unit.node]
        rows = []
        for k in range(p):
            rows.append(len(ids))
            ids.append(unit.node if p == 1 else f"{unit.node}{SUBTASK_MARK}{k}")
            caps.append(deployment.capacity[unit.node])
            if unit.python:
                python_tm[rows[-1]] = where[unit.node][k]
                python_slots.setdefault(where[unit.node][k], set()).add(k)
            elif unit.host is not None:
                host_row[rows[-1]] = first_tm + where[unit.node][k]
        unit_rows[unit.node] = tuple(rows)
    tm_rows = tuple(range(first_tm, first_tm + deployment.taskmanagers))
    ids.extend(_tm_id(shape, k) for k in range(deployment.taskmanagers))
    caps.extend(deployment.cores)
    worker_rows = {}
    for tm in sorted(set(python_tm.values())):
        worker_rows[tm] = len(ids)
        ids.append(worker_node_id(_tm_id(shape, tm)))
        per_slot = len(python_slots[tm]) * WORKER_CAPACITY if shape.per_slot(tm) else 0.0
        caps.append(max(WORKER_CAPACITY, min(per_slot, deployment.cores[tm])))
    host_row.update({row: worker_rows[tm] for row, tm in python_tm.items()})
    return Resources(tuple(ids), np.array(caps, dtype=float), unit_rows, host_row, tm_rows)


def resource_loads(
    topology: Topology, shape: Shape, resources: Resources, operator_dlts: np.ndarray
) -> np.ndarray:
    """Resources x intervals: each subtask ``1 / p`` of its unit's load (the unit's
    operators summed row after row, in operator order, as ``node_loads`` does), each
    TaskManager the work placed on it directly plus its subtasks' rows."""
    intervals = operator_dlts.shape[1]
    out = np.zeros((len(resources.ids), intervals))
    unit_load: dict[str, np.ndarray] = {u.node: np.zeros(intervals) for u in shape.units}
    tm_index = {t: k for k, t in enumerate(shape.taskmanagers)}
    for k, op in enumerate(topology.operator_ids):
        node = topology.placement[op]
        if node in unit_load:
            unit_load[node] += operator_dlts[k]
        elif tm_index.get(node, len(resources.tm_rows)) < len(resources.tm_rows):
            out[resources.tm_rows[tm_index[node]]] += operator_dlts[k]
    for node, rows in resources.unit_rows.items():
        share = unit_load[node] / len(rows)
        for row in rows:
            out[row] = share
    for row in sorted(resources.host_row):
        out[resources.host_row[row]] += out[row]
    return out


def query_masks(topology: Topology, shape: Shape, resources: Resources) -> dict[str, np.ndarray]:
    """Per query, the resources hosting it: the subtasks of the units its operators are
    on and their TaskManagers (and TaskManagers holding its operators directly)."""
    tm_index = {t: k for k, t in enumerate(shape.taskmanagers)}
    masks = {}
    for query in topology.queries:
        mask = np.zeros(len(resources.ids), dtype=bool)
        for op in topology.operators_of_query(query):
            node = topology.placement[op]
            for row in resources.unit_rows.get(node, ()):
                mask[row] = True
                if row in resources.host_row:
                    mask[resources.host_row[row]] = True
            if tm_index.get(node, len(resources.tm_rows)) < len(resources.tm_rows):
                mask[resources.tm_rows[tm_index[node]]] = True
        masks[query] = mask
    return masks


def predict(
    topology: Topology,
    shape: Shape,
    deployment: Deployment,
    operator_dlts: np.ndarray,
    stops: Stops | None = None,
) -> RunAnalysis:
    """Mace of ``deployment`` for the operator DLTS ``operator_dlts`` (operators x
    intervals, e.g. a fitted model's): per subtask and TaskManager, per query, the
    system, and the bottleneck; with ``stops``, the job serves nothing while stopped
    (:func:`estimator.mace.estimate_from_dlts`)."""
    resources = expand(shape, deployment)
    loads = resource_loads(topology, shape, resources, operator_dlts)
    eps = 0.0
    for unit in shape.units:
        costs = [topology.operator_cost[k] for k in _ops_on(topology, unit.node)]
        if costs:
            eps += max(costs) / deployment.capacity[unit.node]
    base = estimate_from_dlts(
        loads,
        resources.capacities,
        resources.ids,
        topology.subinterval,
        eps,
        query_masks(topology, shape, resources),
        stops=stops,
    )
    per_query = dict(base.per_query)
    series, upper = base.series, base.upper
    rises = bundle_rises(topology, deployment, operator_dlts)
    if rises:  # as :func:`estimator.runs.analyse`: the larger of rise and backlog
        for query, rise in rises.items():
            per_query[query] = np.maximum(per_query[query], rise)
        series = np.maximum(series, np.max(list(per_query.values()), axis=0))
        upper = np.maximum(upper, series + (base.upper - base.series))
    return RunAnalysis(
        node_ids=resources.ids,
        ce_seconds=base.ce_seconds,
        estimate=series,
        bottleneck=base.bottleneck_index,
        lower=base.lower,
        upper=upper,
        epsilon=eps,
        per_query=per_query,
        per_query_lower=dict(base.per_query),
        bundle_rise=rises,
    )


def bundle_rises(
    topology: Topology, deployment: Deployment, operator_dlts: np.ndarray
) -> dict[str, np.ndarray]:
    """Per query crossing threads of Python operators, what their bundles add under
    ``deployment`` (:func:`estimator.runs.bundle_excess`): each of a vertex's subtasks
    runs its own bundles with ``1 / p`` of the vertex's work."""
    placement = [dict(topology.placement)]
    node_dlts = node_loads(topology, operator_dlts, placement, [0])
    capacities = np.array(
        [float(deployment.parallelism.get(n.id, n.capacity)) for n in topology.nodes]
    )
    return bundle_excess(
        topology, node_dlts, placement, [0], full_bundle_work(topology), capacities
    )


def _ops_on(topology: Topology, node: str) -> list[int]:
    return [k for k, op in enumerate(topology.operator_ids) if topology.placement[op] == node]


@dataclass(frozen=True)
class RestartCost:
    """A restart of ``downtime`` seconds (a rescale: the job stops, then runs at the
    new deployment) at the moment of the run where it hurts most among those tried: the
    predicted analysis with it, and the subinterval it began in."""

    downtime: float
    interval: int
    analysis: RunAnalysis


RESTART_CANDIDATES = 5
"""The busiest subintervals a restart is tried before and at (:func:`restart_cost`)."""


def restart_cost(
    topology: Topology,
    shape: Shape,
    deployment: Deployment,
    operator_dlts: np.ndarray,
    downtime: float,
    finish: Callable[[RunAnalysis], RunAnalysis] = lambda analysis: analysis,
) -> RestartCost:
    """What a restart of ``downtime`` seconds into ``deployment`` costs over the run's
    arrivals: a restart is tried at each of the :data:`RESTART_CANDIDATES` subintervals
    with the most work and ending just before each (a backlog its burst meets), and
    the one with the largest predicted system worst case (after ``finish``) is kept."""
    intervals = operator_dlts.shape[1]
    w = topology.subinterval
    busiest = np.argsort(-operator_dlts.sum(axis=0), kind="stable")[:RESTART_CANDIDATES]
    before = math.ceil(downtime / w)
    starts = sorted({int(p) for q in busiest for p in (q, max(0, q - before))})
    worst: RestartCost | None = None
    for start in starts:
        begin = topology.origin + start * w
        stops = stop_series([(begin, begin + downtime)], topology.origin, w, intervals)
        analysis = finish(predict(topology, shape, deployment, operator_dlts, stops))
        if worst is None or analysis.estimate.max() > worst.analysis.estimate.max():
            worst = RestartCost(downtime, start, analysis)
    if worst is None:
        raise ScenarioError("a restart needs a run with at least one subinterval")
    return worst


# -- recommendation ------------------------------------------------------------------


def unit_loads(topology: Topology, shape: Shape, operator_dlts: np.ndarray) -> dict[str, float]:
    """Per unit, its mean load over the run in CPU-seconds per second."""
    seconds = max(operator_dlts.shape[1], 1) * topology.subinterval
    out = {u.node: 0.0 for u in shape.units}
    for k, op in enumerate(topology.operator_ids):
        node = topology.placement[op]
        if node in out:
            out[node] += float(operator_dlts[k].sum()) / seconds
    return out


def utilisation_rule(
    topology: Topology,
    shape: Shape,
    operator_dlts: np.ndarray,
    target: float = TARGET_UTILIZATION,
) -> dict[str, int]:
    """The autoscaler's rule per unit: the fewest subtasks that keep each one busy at
    most ``target`` of the time on the run's mean load (its metric window the whole
    run; no backlog catch-up term), within 1 .. the max parallelism."""
    loads = unit_loads(topology, shape, operator_dlts)
    out = {}
    for unit in shape.units:
        needed = math.ceil(loads[unit.node] / (unit.capacity * target) - 1e-9)
        out[unit.node] = min(max(1, needed), max_parallelism(unit.parallelism))
    return out


@dataclass(frozen=True)
class Plan:
    """A recommended parallelism per unit, its predicted worst case, and whether it
    meets the objective."""

    parallelism: dict[str, int]
    worst_case: float
    feasible: bool
    evaluations: int


def worst_case(analysis: RunAnalysis) -> float:
    return float(analysis.estimate.max()) if analysis.estimate.size else 0.0


def fewest_subtasks(
    topology: Topology,
    shape: Shape,
    operator_dlts: np.ndarray,
    objective: float,
    max_total: int,
    base: Edits = Edits(),
    finish: Callable[[RunAnalysis], RunAnalysis] = lambda a: a,
) -> Plan:
    """Greedy: from one subtask per unit that carries work, add one subtask at a time
    to the unit whose extra subtask lowers the predicted worst case most (ties: the
    mean), until the worst case meets ``objective`` or the total reaches ``max_total``.
    ``finish`` turns a prediction into the figure judged (e.g. adds pipeline delays);
    deployments that cannot be scheduled under ``base`` (too few TaskManagers) are
    skipped."""
    loads = unit_loads(topology, shape, operator_dlts)
    working = [u for u in shape.units if loads[u.node] > 0]
    current = {u.node: 1 for u in shape.units}
    evaluations = 0

    def score(parallelism: dict[str, int]) -> tuple[float, float] | None:
        nonlocal evaluations
        edits = Edits(parallelism, base.capacity, base.slots, base.taskmanagers, base.cores)
        try:
            deployment = resolve(shape, edits)
        except ScenarioError:
            return None
        evaluations += 1
        analysis = finish(predict(topology, shape, deployment, operator_dlts))
        mean = float(analysis.estimate.mean()) if analysis.estimate.size else 0.0
        return worst_case(analysis), mean

    best = score(current)
    if best is None:
        raise ScenarioError("the job does not fit on the TaskManagers even at parallelism 1")
    while best[0] > objective and sum(current.values()) < max_total:
        step: tuple[tuple[float, float], str] | None = None
        for unit in working:
            if current[unit.node] >= max_parallelism(unit.parallelism):
                continue
            tried = score({**current, unit.node: current[unit.node] + 1})
            if tried is not None and (step is None or tried < step[0]):
                step = (tried, unit.node)
        if step is None:
            break
        best, chosen = step
        current[chosen] += 1
    return Plan(current, best[0], best[0] <= objective, evaluations)
