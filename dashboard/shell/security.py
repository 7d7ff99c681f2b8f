"""The app's hardening: security headers, callback-request shape checks, basic authentication."""

from __future__ import annotations

import base64
import functools
import hmac
import logging
from collections.abc import Callable, Mapping
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

    expected = base64.b64encode(f"{user}:{password}".encode()).decode()

    @app.server.before_request
    def authenticate() -> flask.Response | None:
        header = flask.request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() == "basic" and hmac.compare_digest(token.strip(), expected):
            return None
        return flask.Response(
            "authentication required\n",
            401,
            {"WWW-Authenticate": 'Basic realm="mace", charset="UTF-8"'},
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
