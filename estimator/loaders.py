"""Reading topology, placement and arrival files (YAML/JSON, CSV/Parquet).

These are the estimator's only file readers: they turn a path into the
validated model, so the numerical code stays free of I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from estimator.arrivals import MAX_INTERVALS, Arrivals, arrivals_from_frame
from estimator.errors import ModelError, ScenarioError
from estimator.model import Topology, topology_from_dict
from estimator.whatif import AddedQuery, added_query_from_json

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Largest topology, placement or version file read (a 100k-operator topology is ~10 MB)."""

_BaseSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_RESOLVER = yaml.resolver.Resolver()
_SAFE = yaml.constructor.SafeConstructor()
_SCALARS: dict[str, Any] = {
    "tag:yaml.org,2002:str": None,  # the text itself
    "tag:yaml.org,2002:int": _SAFE.construct_yaml_int,
    "tag:yaml.org,2002:float": _SAFE.construct_yaml_float,
    "tag:yaml.org,2002:bool": _SAFE.construct_yaml_bool,
    "tag:yaml.org,2002:null": _SAFE.construct_yaml_null,
    "tag:yaml.org,2002:timestamp": _SAFE.construct_yaml_timestamp,
}


class _Open:
    """A mapping or sequence being filled while its events stream by."""

    __slots__ = ("has_key", "items", "key")

    def __init__(self, items: dict[Any, Any] | list[Any]):
        self.items = items
        self.key: Any = None
        self.has_key = False

    def add(self, value: Any) -> None:
        if isinstance(self.items, list):
            self.items.append(value)
        elif not self.has_key:
            self.key, self.has_key = value, True
        else:
            self.items[self.key] = value
            self.has_key = False


def _load_yaml(text: str) -> Any:
    """The plain data of a YAML document, as PyYAML's safe loader builds it, from
    libyaml's event stream (when installed).

    PyYAML's composer builds a node object for every scalar before constructing: 14 s of
    the 16 s a 100k-operator topology (9 MB) took. Built from the events it takes about
    2 s. Aliases are refused (nested aliases, "billion laughs", expand a small file into
    unbounded memory), and so are tags beyond plain data (no arbitrary objects)."""
    stack: list[_Open] = []
    document: Any = None
    for event in yaml.parse(text, Loader=_BaseSafeLoader):
        kind = type(event)
        if isinstance(event, yaml.CollectionStartEvent):
            _check_collection_tag(event)
            stack.append(_Open({} if kind is yaml.MappingStartEvent else []))
            continue
        if isinstance(event, yaml.ScalarEvent):
            value = _scalar(event)
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            value = stack.pop().items
        elif kind is yaml.AliasEvent:
            raise yaml.constructor.ConstructorError(
                None, None, f"YAML aliases (*name) are not allowed (alias {_line(event)})", None
            )
        else:
            continue  # stream and document boundaries
        if stack:
            try:
                stack[-1].add(value)
            except TypeError:  # a mapping or a sequence as a key
                raise yaml.constructor.ConstructorError(
                    None, None, f"a mapping key must be a plain value ({_line(event)})", None
                ) from None
        else:
            document = value
    return document


_COLLECTION_TAGS = (None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


def _check_collection_tag(event: yaml.CollectionStartEvent) -> None:
    if event.tag not in _COLLECTION_TAGS:
        raise yaml.constructor.ConstructorError(
            None, None, f"the YAML tag {event.tag} is not allowed ({_line(event)})", None
        )


def _line(event: yaml.Event) -> str:
    mark = event.start_mark
    return "on line ?" if mark is None else f"on line {mark.line + 1}"


def _scalar(event: yaml.ScalarEvent) -> Any:
    tag = event.tag
    if tag is None or tag == "!":
        tag = _RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag not in _SCALARS:
        raise yaml.constructor.ConstructorError(
            None, None, f"the YAML tag {tag} is not allowed ({_line(event)})", None
        )
    build = _SCALARS[tag]
    return event.value if build is None else build(yaml.ScalarNode(tag, event.value))


def parse_document(text: str, *, fmt: str, where: str) -> Any:
    """Parse YAML (plain data, no aliases; libyaml's parser when installed) or JSON text."""
    if len(text) > MAX_DOCUMENT_BYTES:
        raise ModelError(f"{where}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    try:
        if fmt == "json":
            return json.loads(text)
        return _load_yaml(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"{where}: not valid {fmt.upper()}: {first_line}") from None
    except RecursionError:
        raise ModelError(f"{where}: nested too deeply") from None


def _read_document(path: str | Path) -> Any:
    file = Path(path)
    if not file.is_file():
        raise ModelError(f"{file}: no such file")
    if file.stat().st_size > MAX_DOCUMENT_BYTES:
        raise ModelError(f"{file}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    fmt = "json" if file.suffix.lower() == ".json" else "yaml"
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError(f"{file}: not UTF-8 text (byte {exc.start} is not)") from None
    except OSError as exc:
        raise ModelError(f"{file}: cannot read: {exc.strerror or exc}") from None
    return parse_document(text, fmt=fmt, where=str(file))


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


def load_version(path: str | Path, valid_from: float) -> tuple[Topology, float | None]:
    """Read a placement version file (``topology-<epoch>.yaml``, valid from
    ``valid_from``): its topology and ``stopped``, when the job stopped processing
    before it (a restart's start; None when the file has none). A stop must be a finite
    time no later than ``valid_from``."""
    document = _read_document(path)
    try:
        topology = topology_from_dict(document)
    except ModelError as exc:
        raise ModelError(f"{path}: {exc}") from None
    stopped = document.get("stopped")
    if stopped is None:
        return topology, None
    if isinstance(stopped, bool) or not isinstance(stopped, int | float):
        raise ModelError(f"{path}: stopped: expected a time in seconds, got {stopped!r}")
    if not math.isfinite(stopped) or stopped > valid_from:
        raise ModelError(
            f"{path}: stopped: must be a finite time before {valid_from}, got {stopped!r}"
        )
    return topology, float(stopped)


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


def added_query_from_document(document: Any, where: str = "query file") -> tuple[str, AddedQuery]:
    """The query id and the :class:`AddedQuery` of a query file's document.

    A query file holds one new query: ``query`` (its id; operators without a
    ``query`` field get it, one naming another query is an error), ``operators``
    in the topology file format, an optional ``placement`` (operator -> node)
    and ``sources``, the new sources it reads with their arrival series
    (``{id, arrivals: [events per subinterval ...]}``); sources of the running
    system are read by id without being listed.
    """
    if not isinstance(document, Mapping):
        raise ModelError(f"{where}: expected a mapping with query, operators and sources")
    query = document.get("query")
    if not isinstance(query, str) or not query:
        raise ModelError(f"{where}: 'query' must name the query (a non-empty string)")
    operators = document.get("operators")
    if not isinstance(operators, list) or not all(isinstance(o, Mapping) for o in operators):
        raise ModelError(f"{where}: 'operators' must be a list of operator entries")
    entries = []
    for op in operators:
        entry = {**op, "query": op.get("query", query)}
        if entry["query"] != query:
            raise ModelError(
                f"{where}: operator '{op.get('id')}' belongs to query '{entry['query']}', "
                f"not to '{query}'"
            )
        entries.append(entry)
    sources = document.get("sources") or []
    if not isinstance(sources, list):
        raise ModelError(f"{where}: 'sources' must be a list of {{id, arrivals}} entries")
    series: dict[str, Any] = {}
    for source in sources:
        if not isinstance(source, Mapping) or not isinstance(source.get("id"), str):
            raise ModelError(f"{where}: every source needs an 'id'")
        if source["id"] in series:
            raise ModelError(f"{where}: source '{source['id']}' is listed twice")
        series[source["id"]] = source.get("arrivals")
        if series[source["id"]] is None:
            raise ModelError(f"{where}: source '{source['id']}' has no 'arrivals' list")
    data = {"operators": entries, "placement": document.get("placement") or {}, "sources": series}
    try:
        return query, added_query_from_json(data)
    except ScenarioError as exc:
        raise ModelError(f"{where}: {exc}") from None


def load_added_query(path: str | Path) -> tuple[str, AddedQuery]:
    """Read a query file (YAML or JSON, see :func:`added_query_from_document`)."""
    return added_query_from_document(_read_document(path), str(path))


def dump_topology(topology: Topology, *, fmt: str = "yaml") -> str:
    """The topology as YAML or JSON text in the file format."""
    document = topology.to_dict()
    if fmt == "json":
        return json.dumps(document, indent=2)
    return yaml.safe_dump(document, sort_keys=False)
