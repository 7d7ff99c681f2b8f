"""The view's state in the URL's query string (so that a copied link reproduces it).

The shell owns ``run`` and ``estimator``; a page adds its own parameters (the
Overview its time range and clock). Every writer goes through :func:`merged` so that
parameters keep one order and nobody drops another's.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode

FIRST = ("run", "estimator")
"""Parameters that lead the query string, in this order."""


def merged(search: str | None, updates: Mapping[str, str | None]) -> str:
    """``search`` (``"?a=1&b=2"``) with ``updates`` applied (None removes a parameter):
    the shell's parameters first, then the others in the order they came; "" if none."""
    params = dict(parse_qsl((search or "").lstrip("?"), keep_blank_values=False))
    for key, value in updates.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = value
    ordered = [(k, params[k]) for k in FIRST if k in params]
    ordered += [(k, v) for k, v in params.items() if k not in FIRST]
    return f"?{urlencode(ordered)}" if ordered else ""
