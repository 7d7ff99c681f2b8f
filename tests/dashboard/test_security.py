"""Security headers, malformed callback requests and the warning for a non-loopback
host."""

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
    warn_if_exposed("0.0.0.0", authenticated=True)
    err = capsys.readouterr().err.strip()
    assert "no authentication" not in err and "TLS" in err


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


def _inline_script_hashes(html: str) -> set[str]:
    """sha256 CSP sources of the page's inline executable scripts, computed here from
    the served HTML (independently of Dash's own csp_hashes)."""
    import base64
    import hashlib
    import re

    hashes = set()
    live = re.sub(r"<!--.*?-->", "", html, flags=re.S)  # e.g. the IE-only conditional
    for attributes, body in re.findall(r"<script([^>]*)>(.*?)</script>", live, flags=re.S):
        if "src=" in attributes or "application/json" in attributes or not body.strip():
            continue
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        hashes.add(f"'sha256-{digest}'")
    return hashes


def test_csp_allows_exactly_the_pages_inline_scripts_and_forbids_framing(client) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/")
    policy = page.headers["Content-Security-Policy"]
    directives = dict(
        (part.split()[0], part.split()[1:]) for part in policy.split(";") if part.strip()
    )
    assert directives["frame-ancestors"] == ["'none'"]
    assert directives["object-src"] == ["'none'"]
    assert directives["default-src"] == ["'self'"]
    inline = _inline_script_hashes(page.get_data(as_text=True))
    assert inline, "the page has inline scripts to allow"
    assert inline <= set(directives["script-src"])
    assert "'unsafe-inline'" not in directives["script-src"]


@pytest.fixture
def locked_client(small_db: Path):  # type: ignore[no-untyped-def]
    return create_app(small_db, credentials=("ops", "s3cret:x")).server.test_client()


def _basic(user: str, password: str) -> dict[str, str]:
    import base64

    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.mark.parametrize("path", ["/", "/_dash-layout", "/assets/style.css", "/reports"])
def test_basic_auth_refuses_missing_or_wrong_credentials(locked_client, path: str) -> None:  # type: ignore[no-untyped-def]
    bare = locked_client.get(path)
    assert bare.status_code == 401
    assert bare.headers["WWW-Authenticate"].startswith("Basic")
    assert bare.headers["X-Frame-Options"] == "DENY"
    assert locked_client.get(path, headers=_basic("ops", "wrong")).status_code == 401
    assert locked_client.get(path, headers=_basic("root", "s3cret:x")).status_code == 401


def test_basic_auth_lets_the_right_credentials_through(locked_client) -> None:  # type: ignore[no-untyped-def]
    assert locked_client.get("/", headers=_basic("ops", "s3cret:x")).status_code == 200
    layout = locked_client.get("/_dash-layout", headers=_basic("ops", "s3cret:x"))
    assert layout.status_code == 200


def test_credentials_come_from_the_file_or_the_environment(tmp_path: Path) -> None:
    from mace.errors import UsageError
    from mace.serve_command import read_credentials

    secret = tmp_path / "auth"
    secret.write_text("ops:pa:ss\n")
    assert read_credentials(str(secret), "other:one") == ("ops", "pa:ss")
    assert read_credentials(None, "env:pw") == ("env", "pw")
    assert read_credentials(None, None) is None
    for bad in ("nocolon\n", ":pw\n", "user:\n", ""):
        secret.write_text(bad)
        with pytest.raises(UsageError, match="USER:PASSWORD"):
            read_credentials(str(secret), None)
    with pytest.raises(UsageError, match="cannot read"):
        read_credentials(str(tmp_path / "missing"), None)
