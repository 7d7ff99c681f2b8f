"""An outside bursty producer: On-Off events as CSV files in a folder a job monitors.

A process of its own (standard library only), standing in for the message queue a
production job reads from. Periods alternate, low first: low periods last
``--mean-low`` seconds and high ones ``--mean-high`` on average (each drawn uniformly
in [0.75, 1.25] x its mean), and within a period events form a Poisson process at
``--low-rate`` or ``--high-rate`` events/s. Every ``--slot`` seconds the events due
are written as one file ``stimulus_time,key,value`` under a hidden name, then
renamed (Flink's file source ignores names starting with a dot). The same
``--seed`` gives the same events at the same offsets from the start.

    python -m benchmarks.flink_jobs.producer --out DIR --seed 1 --low-rate 20 \
        --high-rate 200 --duration 90
"""

from __future__ import annotations

import argparse
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SLOT = 0.1
DEFAULT_KEYS = 50
SPREAD = 0.25  # period lengths are uniform in [1 - SPREAD, 1 + SPREAD] x their mean


@dataclass(frozen=True)
class OnOffRates:
    """The producer's load: rates in events/s and mean period lengths in seconds."""

    low_rate: float
    high_rate: float
    mean_low: float = 20.0
    mean_high: float = 8.0

    def mean_rate(self) -> float:
        return (self.low_rate * self.mean_low + self.high_rate * self.mean_high) / (
            self.mean_low + self.mean_high
        )


def periods(
    rates: OnOffRates, duration: float, rng: random.Random
) -> list[tuple[float, float, float]]:
    """``(start, end, rate)`` of the periods covering ``[0, duration)``, low first."""
    out: list[tuple[float, float, float]] = []
    start, high = 0.0, False
    while start < duration:
        mean, rate = (
            (rates.mean_high, rates.high_rate) if high else (rates.mean_low, rates.low_rate)
        )
        end = min(duration, start + mean * rng.uniform(1 - SPREAD, 1 + SPREAD))
        out.append((start, end, rate))
        start, high = end, not high
    return out


def event_offsets(rates: OnOffRates, duration: float, seed: int) -> list[float]:
    """The events' offsets from the start in seconds (sorted; the same for the same seed)."""
    rng = random.Random(seed)
    offsets: list[float] = []
    for start, end, rate in periods(rates, duration, rng):
        t = start
        while rate > 0:
            t += rng.expovariate(rate)
            if t >= end:
                break
            offsets.append(t)
    return offsets


def lines(times: list[float], rng: random.Random, keys: int) -> str:
    """CSV lines ``stimulus_time,key,value`` for events at wall-clock ``times``."""
    return "".join(f"{t:.6f},k{rng.randrange(keys)},{rng.random():.4f}\n" for t in times)


def produce(
    folder: Path, offsets: list[float], start: float, seed: int, *, keys: int, slot: float
) -> int:
    """Write the events as they fall due (event i at ``start + offsets[i]``); return the count."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed + 1)
    written = files = 0
    while written < len(offsets):
        now = time.time() - start
        due = written
        while due < len(offsets) and offsets[due] <= now:
            due += 1
        if due > written:
            files += 1
            name = f"events-{seed}-{files:07d}.csv"
            hidden = folder / f".{name}.inprogress"
            hidden.write_text(lines([start + o for o in offsets[written:due]], rng, keys))
            os.replace(hidden, folder / name)
            written = due
        time.sleep(slot)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="the folder the job monitors")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--low-rate", type=float, required=True, help="events/s in low periods")
    parser.add_argument("--high-rate", type=float, required=True, help="events/s in high periods")
    parser.add_argument("--mean-low", type=float, default=OnOffRates.mean_low)
    parser.add_argument("--mean-high", type=float, default=OnOffRates.mean_high)
    parser.add_argument("--duration", type=float, required=True, help="seconds of events")
    parser.add_argument("--start", type=float, help="epoch second of offset 0 (default: now)")
    parser.add_argument("--keys", type=int, default=DEFAULT_KEYS)
    parser.add_argument("--slot", type=float, default=DEFAULT_SLOT)
    args = parser.parse_args()
    rates = OnOffRates(args.low_rate, args.high_rate, args.mean_low, args.mean_high)
    offsets = event_offsets(rates, args.duration, args.seed)
    start = args.start if args.start is not None else time.time()
    count = produce(args.out, offsets, start, args.seed, keys=args.keys, slot=args.slot)
    print(f"producer: {count} events into {args.out}", flush=True)


if __name__ == "__main__":
    main()
