"""The raw result of a simulation run, as integer-coded arrays, and the shared randomness.

Randomness is counter based: execution ``k`` of a run draws its cost from
uniform number ``2k`` and its output count from number ``2k+1`` of a
SplitMix64 stream keyed by one integer taken from the caller's numpy
Generator. Both engines therefore draw identical numbers without sharing
generator state, and a seed fixes every file of a run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulator.plan import CONSTANT, UNIFORM

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0


def uniform(key: int, index: int) -> float:
    """Number ``index`` of the stream ``key``, uniform in [0, 1)."""
    z = (key + (index + 1) * GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    z ^= z >> 31
    return (z >> 11) * TWO_TO_MINUS_53


def draw_cost(mean: float, distribution: int, u: float) -> float:
    """A per-event cost around ``mean``: constant, uniform +-50% or exponential."""
    if distribution == CONSTANT:
        return mean
    if distribution == UNIFORM:
        return mean * (0.5 + u)
    return -mean * math.log(1.0 - u)


def draw_count(expected: float, u: float) -> int:
    """The integer part of ``expected`` plus one with probability its fractional part."""
    whole = math.floor(expected)
    return int(whole) + (1 if u < expected - whole else 0)


def stream_key(rng: np.random.Generator) -> int:
    """The run's stream key, drawn from the caller's Generator."""
    return int(rng.integers(0, 2**63, dtype=np.int64))


@dataclass(frozen=True)
class Trace:
    """Executions in start order and output events in egress order (integer codes)."""

    exec_node: np.ndarray
    exec_op: np.ndarray
    exec_port: np.ndarray
    exec_stimulus: np.ndarray
    exec_start: np.ndarray
    exec_cpu: np.ndarray
    exec_outputs: np.ndarray
    out_op: np.ndarray
    out_stimulus: np.ndarray
    out_egress: np.ndarray

    @property
    def executions(self) -> int:
        return int(self.exec_node.size)

    def equals(self, other: Trace) -> bool:
        return all(
            np.array_equal(getattr(self, name), getattr(other, name))
            for name in self.__dataclass_fields__
        )
