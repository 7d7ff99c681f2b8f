"""A small client of Prometheus's HTTP API (``/api/v1/query_range``), standard library only."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from connectors.errors import ConnectorError

DEFAULT_TIMEOUT = 10.0
MAX_POINTS = 10_000
"""Most evaluation steps asked in one range query (Prometheus refuses more than 11,000)."""


class PrometheusError(ConnectorError):
    """Prometheus cannot be reached, is too slow, or answered with an error."""


class PrometheusClient:
    """Reads a Prometheus server at ``url`` (e.g. ``http://127.0.0.1:9090``)."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT):
        parsed = urllib.parse.urlparse(url if "://" in url else f"http://{url}")
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise PrometheusError(f"--url {url!r}: expected a URL like http://127.0.0.1:9090")
        self.url = f"{parsed.scheme}://{parsed.netloc}{parsed.path.rstrip('/')}"
        self.timeout = timeout

    def query_range(self, query: str, start: float, end: float, step: float) -> dict[str, Any]:
        """The decoded answer of one range query (``status`` = ``success``)."""
        body = urllib.parse.urlencode(
            {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        ).encode("ascii")
        request = urllib.request.Request(
            f"{self.url}/api/v1/query_range",
            data=body,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise PrometheusError(f"{self.url}: HTTP {exc.code} ({_error_text(exc)})") from None
        except TimeoutError:
            raise PrometheusError(
                f"Prometheus at {self.url} did not answer within {self.timeout:g} s"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError | socket.timeout):
                raise PrometheusError(
                    f"Prometheus at {self.url} did not answer within {self.timeout:g} s"
                ) from None
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {reason}") from None
        except ValueError as exc:
            raise PrometheusError(f"{self.url}: the answer is not JSON ({exc})") from None
        if not isinstance(answer, dict) or answer.get("status") != "success":
            error = answer.get("error") if isinstance(answer, dict) else None
            raise PrometheusError(f"{self.url}: query failed ({error or 'no status'})")
        return answer


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read().decode("utf-8"))
        return str(body.get("error") or exc.reason).splitlines()[0]
    except (ValueError, OSError, AttributeError, IndexError):
        return str(exc.reason)
