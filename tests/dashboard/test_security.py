"""Security headers, malformed callback requests and the warning for a non-loopback
host (issue 17)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from dashboard.app import create_app


@pytest.fixture
def client(small_db: Path):  # type: ignore[no-untyped-def]
    app = create_app(small_db)
    return app.server.test_client()


@pytest.mark.parametrize("path", ["/", "/_dash-layout", "/_dash-dependencies", "/no-such-page"])
def test_every_response_carries_the_security_headers(client, path: str) -> None:  # type: ignore[no-untyped-def]
    response = client.get(path)
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "no-referrer"


GARBAGE = [
    b"{garbage",
    b"[]",
    b'{"output": 5}',
    b'{"output": "no-such.output", "inputs": [], "changedPropIds": []}',
    b'{"output": "a..b@x", "inputs": "zz"}',
]


@pytest.mark.parametrize("body", GARBAGE)
def test_malformed_callback_payload_is_400_and_one_log_line(  # type: ignore[no-untyped-def]
    client, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    client.get("/")  # Dash registers its callbacks on the first request
    with caplog.at_level(logging.INFO):
        response = client.post(
            "/_dash-update-component", data=body, content_type="application/json"
        )
    assert response.status_code == 400
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    text = caplog.text
    assert "Traceback" not in text
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1


def test_a_real_callback_with_a_malformed_input_is_400(client) -> None:  # type: ignore[no-untyped-def]
    client.get("/")
    dependencies = json.loads(client.get("/_dash-dependencies").data)
    spec = next(d for d in dependencies if d["inputs"])
    body = {
        "output": spec["output"],
        "outputs": [],
        "inputs": [{"id": 7}] * len(spec["inputs"]),
        "state": [],
        "changedPropIds": [],
    }
    response = client.post("/_dash-update-component", json=body)
    assert response.status_code == 400


def test_non_loopback_host_warns_about_missing_authentication(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mace.serve_command import warn_if_exposed

    warn_if_exposed("127.0.0.1")
    warn_if_exposed("localhost")
    warn_if_exposed("::1")
    assert capsys.readouterr().err == ""
    warn_if_exposed("0.0.0.0")
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "0.0.0.0" in err and "no authentication" in err and "reverse proxy" in err


def test_port_in_use_is_a_one_line_usage_error(small_db: Path) -> None:
    import socket

    from mace.errors import UsageError
    from mace.serve_command import start_server

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"cannot listen on 127.0.0.1:{port}") as caught:
            start_server(create_app(small_db), "127.0.0.1", port)
    assert len(str(caught.value).splitlines()) == 1
