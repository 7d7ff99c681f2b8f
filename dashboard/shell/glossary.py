"""One definition per term of the dashboard's jargon, in plain words.

The Help page lists them all; pages show the same sentence as a hover title where a term
first appears (:func:`term`), so the two never disagree. Definitions follow DESIGN
section 7 and the Mace paper (ICDE 2011).
"""

from __future__ import annotations

from dash import html

from estimator.placement.fugu import DEFAULT_THRESHOLD

GLOSSARY: dict[str, str] = {
    "estimated": (
        "The estimator (Mace by default) applied to the measured load, the DLTS, of a run: "
        "what the latency should have been given the work the nodes actually received."
    ),
    "predicted": (
        "The same estimator applied to a model (per-operator costs and selectivities) "
        "fitted on a training window of the run, fed with the arrivals at the sources; "
        "the What-if page's curves are predictions."
    ),
    "measured": (
        "The latency the sinks observed: per subinterval, the largest time from an "
        "event's arrival at a source to the output it caused."
    ),
    "DLTS": (
        "Deterministic load time series: per subinterval, the CPU work (reference "
        "CPU-seconds) of all events whose arrival time lies in it, charged to that "
        "subinterval as if every upstream node kept up."
    ),
    "CE": (
        "Cumulative excess: work a node is behind at the end of a subinterval. It grows "
        "by the DLTS minus the node's capacity times w and never drops below 0: "
        "CE_p = max(0, CE_{p-1} + DLTS_p - C*w)."
    ),
    "CE/C": (
        "Cumulative excess divided by the node's capacity C: the seconds the node needs "
        "to clear its backlog, that is the wait of an event arriving then at that node."
    ),
    "Mace": (
        "Maximum cumulative excess: per subinterval, the largest CE/C over all nodes "
        "(the node reaching it is the bottleneck). It is a proven lower bound of the "
        "latency in that subinterval."
    ),
    "MaceWC": (
        "Worst-case Mace: the largest Mace over all subintervals of the range, the "
        "estimate of the worst latency."
    ),
    "w": (
        "The subinterval width in seconds (1 s by default): time is cut into "
        "subintervals of width w and every series has one value per subinterval."
    ),
    "eps": (
        "Epsilon, in seconds: the sum over nodes of the longest time one event takes "
        "to process on that node (its largest per-event cost over the capacity). By the "
        "paper's Theorem 3, Mace <= measured latency <= Mace + w + eps in every "
        "subinterval."
    ),
    "bottleneck": (
        "The node with the largest CE/C in a subinterval: the one whose backlog makes "
        "events wait longest there, so the one that sets Mace."
    ),
    "busy period": (
        "The subintervals in which a node's backlog (CE) never emptied, up to the one "
        "explained: the backlog built up over all of them, so each operator's share of "
        "it is counted over the whole period."
    ),
    "predicted band": (
        "From the model fitted on a training window: Mace of the predicted load to the "
        "path-aware predicted estimate + w + eps, widened by one w on each side. While "
        "the model holds, the measured latency stays inside it."
    ),
    "drift event": (
        "At least k consecutive subintervals with the measured latency on the same side "
        "outside the predicted band (the system's, or one query's latency outside its own "
        "band): the costs or the system changed since the model was fitted, so "
        "predictions from it can no longer be trusted."
    ),
    "subinterval factor": (
        "What-if only: the scenario's subintervals are this many of the run's "
        "subintervals merged (w times the factor, arrivals added up), which smooths "
        "short bursts and widens the w in the bounds."
    ),
    "latency objective": (
        "The worst latency, in seconds, a query may have: met when the query's MaceWC "
        "(the largest Mace over the nodes hosting its operators) stays at or below it. "
        "Set per query on the Reports page."
    ),
    "admission": (
        "Admission control: a new query is admitted when, with its operators placed, "
        "every query still meets its latency objective; the running operators stay put."
    ),
    "FUGU threshold": (
        "FUGU's elastic allocation packs operators first-fit onto nodes, opening a node "
        f"when the others would exceed this share of their capacity ({DEFAULT_THRESHOLD:.0%}) "
        "on average load; "
        "it sizes hosts by utilisation, not latency."
    ),
    "machine-hours": (
        "Hosts times hours: the sum over time windows of the hosts needed in the window "
        "times the window's length, what the cluster would cost at that size."
    ),
}
"""Term -> one or two sentences, in the order the Help page lists them."""
TERM_CLASS = "glossary-term"


def term(name: str, text: str | None = None) -> html.Abbr:
    """``text`` (default ``name``) with the definition of ``name`` as its hover title."""
    return html.Abbr(text or name, title=GLOSSARY[name], className=TERM_CLASS)


def term_id(name: str) -> str:
    """The element id of a term on the Help page (``CE/C`` -> ``help-term-ce-c``)."""
    slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    return f"help-term-{slug}"
