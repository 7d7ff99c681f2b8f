"""Read from a running ``mace serve`` (or ``mace demo``) instead of the database file:
DuckDB lets one process open a file that another one writes, so while a server holds
it, ``mace report``, ``mace explain`` and ``mace alerts`` ask the server (``--url``)."""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from mace.errors import UsageError
from mace.options import AUTH_ENV

REQUEST_TIMEOUT = 120.0
EXPLAIN_PATH = "/api/explain"
ALERTS_PATH = "/api/alerts"


def fetch_json(url: str, path: str, query: dict[str, str], what: str) -> Any:
    """``GET url + path ? query`` from a mace server, as JSON; a one-line UsageError for a
    bad URL, missing credentials, a server-side refusal (its ``error``) or no server."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--url must be http(s)://HOST:PORT of a mace serve, got {url!r}")
    request = urllib.request.Request(f"{url.rstrip('/')}{path}?{urllib.parse.urlencode(query)}")
    if credentials := os.environ.get(AUTH_ENV):
        token = base64.b64encode(credentials.strip().encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            raise UsageError(f"{url} asks for credentials: set {AUTH_ENV}=USER:PASSWORD") from exc
        try:
            reason = json.load(exc)["error"]
        except (ValueError, KeyError, TypeError):
            reason = f"HTTP {exc.code} {exc.reason}"
        raise UsageError(f"{url}: {reason}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(
            f"cannot get {what} from {url}: {reason}; is mace serve running there?"
        ) from exc
