"""The app's hardening: security headers, callback-request shape checks, basic authentication."""

from __future__ import annotations

import base64
import functools
import hmac
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import dash

MAX_REQUEST_BYTES = 2 * 1024 * 1024

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
"""Sent on every response: no MIME sniffing, no framing (clickjacking), no referrer."""

CSP_TEMPLATE = (
    "default-src 'self'; script-src 'self' 'unsafe-eval' {script_hashes}; "
    "style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
    "worker-src 'self' blob:; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)
"""Scripts only from this server plus Dash's own inline scripts (by hash). Plotly.js
needs 'unsafe-eval' (without it a drag-zoom silently does nothing) and sets inline styles
at run time, so both stay allowed; everything else is same-origin only."""

CALLBACK_PATH = "/_dash-update-component"
log = logging.getLogger("mace.dashboard")


def harden(app: dash.Dash) -> None:
    """Security headers on every response; callback requests whose shape does not match
    a registered callback get a 400 and one log line (not a 500 and a traceback)."""
    import flask

    server = app.server

    @server.after_request
    def add_headers(response: flask.Response) -> flask.Response:
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        response.headers.setdefault("Content-Security-Policy", content_security_policy(app))
        return response

    endpoint = next(
        rule.endpoint for rule in server.url_map.iter_rules() if rule.rule.endswith(CALLBACK_PATH)
    )
    dispatch: Callable[..., Any] = server.view_functions[endpoint]

    @functools.wraps(dispatch)
    def checked(*args: Any, **kwargs: Any) -> Any:
        body = flask.request.get_json(silent=True)
        problem = callback_request_problem(body, app.callback_map)
        if problem is not None:
            log.warning("rejected callback request from %s: %s", flask.request.remote_addr, problem)
            return flask.Response(f"bad callback request: {problem}\n", 400, mimetype="text/plain")
        return dispatch(*args, **kwargs)

    server.view_functions[endpoint] = checked


def content_security_policy(app: dash.Dash) -> str:
    """The CSP header for ``app``: computed per response because Dash adds its inline
    scripts (and their hashes) only once its pages and callbacks are registered."""
    return CSP_TEMPLATE.format(script_hashes=" ".join(app.csp_hashes()))


def require_basic_auth(app: dash.Dash, user: str, password: str) -> None:
    """Every request must carry HTTP basic credentials equal to (user, password),
    compared in constant time; anything else gets a 401 asking for them."""
    import flask

    expected = base64.b64encode(f"{user}:{password}".encode())

    @app.server.before_request
    def authenticate() -> flask.Response | None:
        header = flask.request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        # bytes: compare_digest refuses a str that is not ASCII (the header may be anything)
        given = token.strip().encode("utf-8", "replace")
        if scheme.lower() == "basic" and hmac.compare_digest(given, expected):
            return None
        return flask.Response(
            "authentication required\n",
            401,
            {"WWW-Authenticate": 'Basic realm="mace", charset="UTF-8"'},
            mimetype="text/plain",
        )


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def _split_host(value: str) -> tuple[str, str | None]:
    """(name, port or None) of a ``Host`` header or an allowed host, lower-case; an IPv6
    address keeps its brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value.partition("]")
        return name + "]", rest[1:] if rest.startswith(":") else None
    name, colon, port = value.partition(":")
    return name, port if colon else None


def allowed_hosts(bind_host: str, port: int, extra: Iterable[str] = ()) -> list[str]:
    """The ``Host`` header values the dashboard answers: the bind host, localhost,
    127.0.0.1 and [::1], each with the port it listens on, plus ``extra`` (the names a
    reverse proxy forwards; one without a port matches any port)."""
    bind = f"[{bind_host.strip('[]')}]" if ":" in bind_host.strip("[]") else bind_host
    names = dict.fromkeys([bind.lower(), *LOOPBACK_NAMES])
    return [f"{name}:{port}" for name in names] + [e.strip().lower() for e in extra]


def host_allowed(header: str, allowed: Iterable[str]) -> bool:
    """Whether a request's ``Host`` header names one of ``allowed`` (an entry without a
    port matches that name on any port)."""
    name, port = _split_host(header)
    for entry in allowed:
        allowed_name, allowed_port = _split_host(entry)
        if name == allowed_name and (allowed_port is None or port == allowed_port):
            return True
    return False


def require_known_host(app: dash.Dash, allowed: Iterable[str]) -> None:
    """A request whose ``Host`` header is not one of ``allowed`` gets a 400: a page of
    another site whose name was re-pointed at this machine (DNS rebinding) cannot read or
    drive the dashboard through the visitor's browser."""
    import flask

    hosts = list(allowed)

    @app.server.before_request
    def check_host() -> flask.Response | None:
        if host_allowed(flask.request.host, hosts):
            return None
        return flask.Response(
            "unknown host: this server answers only the names it serves (see --allowed-host)\n",
            400,
            mimetype="text/plain",
        )


def _is_dependency(entry: Any) -> bool:
    """An input, state or output entry: {id, property, ...} or a list of them
    (pattern-matching ALL)."""
    if isinstance(entry, list):
        return all(_is_dependency(e) and not isinstance(e, list) for e in entry)
    return (
        isinstance(entry, Mapping)
        and isinstance(entry.get("id"), str | Mapping)
        and isinstance(entry.get("property"), str)
    )


def callback_request_problem(body: Any, callbacks: Mapping[str, Any]) -> str | None:
    """Why a ``/_dash-update-component`` body cannot be a call of one of ``callbacks``
    (None if its shape fits: known output, one entry per declared input and state)."""
    if not isinstance(body, Mapping):
        return "the body is not a JSON object"
    output = body.get("output")
    if not isinstance(output, str) or output not in callbacks:
        return "unknown callback output"
    spec = callbacks[output]
    for key in ("inputs", "state"):
        entries = body.get(key, [])
        if not isinstance(entries, list) or len(entries) != len(spec.get(key, [])):
            return f"'{key}' does not match the callback"
        if not all(_is_dependency(e) for e in entries):
            return f"malformed '{key}' entry"
    outputs = body.get("outputs", [])
    if not (
        _is_dependency(outputs) or (isinstance(outputs, list) and all(map(_is_dependency, outputs)))
    ):
        return "malformed 'outputs'"
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        return "malformed 'changedPropIds'"
    return None
