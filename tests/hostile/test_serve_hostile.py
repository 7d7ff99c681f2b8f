"""The waitress server of ``mace serve`` under hostile connections (the server settings
of :func:`mace.serve_command.start_server`; a plain WSGI app stands in for Dash)."""

from __future__ import annotations

import socket
import urllib.request
from types import SimpleNamespace

from mace.serve_command import start_server

HALF_OPEN = 100


def _hello(environ: dict[str, object], start_response) -> list[bytes]:  # type: ignore[no-untyped-def]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello"]


def test_half_open_connections_do_not_starve_the_server(free_port: int) -> None:
    stop = start_server(SimpleNamespace(server=_hello), "127.0.0.1", free_port)
    held = []
    try:
        for _ in range(HALF_OPEN):  # connected, a request line begun, never finished
            sock = socket.create_connection(("127.0.0.1", free_port), timeout=5)
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x")
            held.append(sock)
        url = f"http://127.0.0.1:{free_port}/"
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.read() == b"hello"
    finally:
        for sock in held:
            sock.close()
        stop()
