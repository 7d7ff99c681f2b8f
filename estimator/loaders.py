"""Reading topology, placement and arrival files (YAML/JSON, CSV/Parquet).

These are the estimator's only file readers: they turn a path into the
validated model, so the numerical code stays free of I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from estimator.arrivals import MAX_INTERVALS, Arrivals, arrivals_from_frame
from estimator.errors import ModelError
from estimator.model import Topology, topology_from_dict

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Largest topology, placement or version file read (a 100k-operator topology is ~10 MB)."""

_BaseSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _NoAliasLoader(_BaseSafeLoader):  # type: ignore[valid-type,misc]
    """PyYAML's safe loader (the C one, libyaml, when installed) refusing aliases:
    topology files never need them, and nested aliases ("billion laughs") expand a
    small file into unbounded memory once the document is walked. An alias is a node
    met a second time while constructing (the composed graph shares it), which the C
    parser and the Python one both show to the constructor."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if node in self.constructed_objects or node in self.recursive_objects:
            line = node.start_mark.line + 1 if node.start_mark is not None else "?"
            raise yaml.constructor.ConstructorError(
                None, None, f"YAML aliases (*name) are not allowed (anchor on line {line})", None
            )
        return super().construct_object(node, deep)


def parse_document(text: str, *, fmt: str, where: str) -> Any:
    """Parse YAML (safe loader without aliases, C when installed) or JSON text."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise ModelError(f"{where}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    try:
        if fmt == "json":
            return json.loads(text)
        return yaml.load(text, Loader=_NoAliasLoader)  # a safe loader (no arbitrary tags)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"{where}: not valid {fmt.upper()}: {first_line}") from None


def _read_document(path: str | Path) -> Any:
    file = Path(path)
    if not file.is_file():
        raise ModelError(f"{file}: no such file")
    if file.stat().st_size > MAX_DOCUMENT_BYTES:
        raise ModelError(f"{file}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    fmt = "json" if file.suffix.lower() == ".json" else "yaml"
    return parse_document(file.read_text(encoding="utf-8"), fmt=fmt, where=str(file))


def topology_from_text(text: str, *, fmt: str = "yaml", where: str = "topology") -> Topology:
    """Parse and validate a topology document given as text."""
    try:
        return topology_from_dict(parse_document(text, fmt=fmt, where=where))
    except ModelError as exc:
        raise ModelError(f"{where}: {exc}") from None


def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology file; errors name the file and the entry."""
    try:
        return topology_from_dict(_read_document(path))
    except ModelError as exc:
        message = str(exc)
        raise ModelError(
            message if message.startswith(str(path)) else f"{path}: {message}"
        ) from None


def load_placement(path: str | Path) -> dict[str, str]:
    """Read a placement file: a mapping operator -> node, or a document with a 'placement' key."""
    document = _read_document(path)
    if isinstance(document, Mapping) and isinstance(document.get("placement"), Mapping):
        document = document["placement"]
    if not isinstance(document, Mapping):
        raise ModelError(f"{path}: expected a mapping of operator id to node id")
    return {str(k): str(v) for k, v in document.items()}


def load_arrivals(
    path: str | Path, topology: Topology | None = None, *, max_intervals: int = MAX_INTERVALS
) -> Arrivals:
    """Read an arrival series file (columns source, interval, events); a series longer
    than ``max_intervals`` is refused before allocating."""
    file = Path(path)
    if not file.is_file():
        raise ModelError(f"{file}: no such file")
    try:
        if file.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(file)
        else:
            frame = pd.read_csv(file)
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise ModelError(f"{file}: cannot read arrivals: {str(exc).splitlines()[0]}") from None
    try:
        return arrivals_from_frame(frame, topology, max_intervals=max_intervals)
    except ModelError as exc:
        raise ModelError(f"{file}: {exc}") from None


def dump_topology(topology: Topology, *, fmt: str = "yaml") -> str:
    """The topology as YAML or JSON text in the file format."""
    document = topology.to_dict()
    if fmt == "json":
        return json.dumps(document, indent=2)
    return yaml.safe_dump(document, sort_keys=False)
