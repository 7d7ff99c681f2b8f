"""The pictures of the concepts page (docs/img/concept-*.png), drawn from the paper's
Figure 3 example (examples/figure3) with the project's own estimator.

Run ``.venv/bin/python docs/figures.py`` after a change to the estimator or the example;
the PNGs are committed with the page.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np

from estimator.loaders import load_arrivals, load_topology
from estimator.pathaware import estimator_by_name

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "img"
EXAMPLE = ROOT / "examples" / "figure3"
SIZE = (5.2, 2.6)


def _axes(title: str) -> tuple[plt.Figure, plt.Axes]:
    fig, ax = plt.subplots(figsize=SIZE, dpi=90)
    ax.set_title(title, fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _save(fig: plt.Figure, name: str) -> None:
    for ax in fig.axes:
        if ax.get_xlabel().startswith("subinterval"):
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(OUT / f"concept-{name}.png")
    plt.close(fig)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    topology = load_topology(EXAMPLE / "topology.yaml")
    arrivals = load_arrivals(EXAMPLE / "arrivals.csv", topology)
    mace = estimator_by_name("mace")(topology, arrivals)
    path = estimator_by_name("path")(topology, arrivals)
    w = mace.subinterval
    p = np.arange(mace.series.size)
    nodes = list(mace.resources)
    width = 0.8 / len(nodes)

    fig, ax = _axes("DLTS: the work each node is given per subinterval")
    for i, node in enumerate(nodes):
        ax.bar(p + (i - 1) * width, mace.dlts[i], width, label=node)
    ax.axhline(mace.capacities[0] * w, color="k", ls="--", lw=1, label="capacity C·w")
    ax.set_xlabel("subinterval p")
    ax.set_ylabel("CPU-seconds")
    ax.legend(fontsize=7, ncol=4)
    _save(fig, "dlts")

    fig, ax = _axes("CE: the backlog carried to the end of each subinterval")
    for i, node in enumerate(nodes):
        ax.plot(p, mace.ce[i], marker="o", label=node)
    ax.set_xlabel("subinterval p")
    ax.set_ylabel("CPU-seconds behind")
    ax.legend(fontsize=7)
    _save(fig, "ce")

    fig, ax = _axes("Mace: the largest CE/C; MaceWC its worst case")
    for i, node in enumerate(nodes):
        ax.plot(p, mace.ce_seconds[i], color="0.7", lw=1)
        ax.annotate(node, (p[-1], mace.ce_seconds[i][-1]), fontsize=7, color="0.4")
    ax.plot(p, mace.series, color="C3", marker="o", lw=2, label="Mace")
    worst = int(mace.series.argmax())
    ax.annotate(
        f"MaceWC = {mace.worst_case:g} s",
        (worst, mace.series[worst]),
        xytext=(worst + 0.4, mace.series[worst] - 0.3),
        fontsize=8,
        arrowprops={"arrowstyle": "->"},
    )
    for x, b in zip(p, mace.bottleneck, strict=True):
        ax.text(float(x), -0.9, b, ha="center", fontsize=7, color="C3")
    ax.set_ylim(-1.3, None)
    ax.set_xlabel("subinterval p (bottleneck under each)")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=7)
    _save(fig, "mace")

    fig, ax = _axes("w: time cut into subintervals of equal width")
    ax.stairs(
        mace.dlts.sum(axis=0), np.arange(p.size + 1) * w, color="C0", label="load of all nodes"
    )
    for edge in range(p.size + 1):
        ax.axvline(edge * w, color="0.8", lw=0.8)
    ax.annotate("", (w, -0.6), (2 * w, -0.6), arrowprops={"arrowstyle": "<->"})
    ax.text(1.5 * w, -1.4, f"w = {w:g} s", ha="center", fontsize=8)
    ax.set_xlim(0, w * p.size)
    ax.set_ylim(-1.8, None)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("CPU-seconds")
    ax.legend(fontsize=7)
    _save(fig, "w")

    fig, ax = _axes("eps and the band: Mace ≤ latency ≤ Mace + w + eps")
    ax.fill_between(p, mace.lower, mace.upper, color="C2", alpha=0.25, label="band")
    ax.plot(p, mace.lower, color="C3", marker="o", label="Mace (lower edge)")
    ax.plot(p, mace.upper, color="C2", ls="--", label=f"Mace + w + eps (eps = {mace.epsilon:g} s)")
    ax.set_xlabel("subinterval p")
    ax.set_ylabel("latency (s)")
    ax.legend(fontsize=7)
    _save(fig, "band")

    fig, ax = _axes("Estimators: Mace (one node) and path-aware (along a path)")
    ax.plot(p, mace.series, color="C3", marker="o", label="mace: max over nodes")
    ax.plot(p, path.series, color="C0", marker="s", label="path: backlogs along a path")
    ax.set_xlabel("subinterval p")
    ax.set_ylabel("latency estimate (s)")
    ax.legend(fontsize=7)
    _save(fig, "estimators")


if __name__ == "__main__":
    main()
