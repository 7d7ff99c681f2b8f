"""Headless Chromium for dash_duo (the small test databases are in tests/conftest.py).

Starting Chromium takes seconds, so the browser tests share one: ``dash_duo`` is dash's
fixture (a fresh Dash server per test, the same API) on a session-wide browser that
each test leaves as a new one would be (a blank page, no storage, no cookies, the first
window size, no console entries). A test that failed, sent a DevTools command (an
emulated colour scheme or time zone, a script injected into new pages) or opened
another window gets a new browser after it: that state cannot be undone reliably.

The tests' Dash servers all listen on one port per browser: the browser's HTTP cache
(keyed by origin) then holds Dash's and Plotly's scripts from the first page on, and
each later page loads them from it. Their answers close the connection, so that no
request of a later test reaches an earlier test's server over a kept-alive one."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dash.testing.application_runners import ThreadedRunner
from dash.testing.browser import Browser
from dash.testing.composite import DashComposite
from flask import Response
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.remote.webdriver import WebDriver

from simulator.workloads import workload_model
from tests.dashboard.builders import write_workload_run

CHROMIUM = Path("/usr/bin/chromium")


def pytest_setup_options() -> Options:
    options = Options()
    if CHROMIUM.exists():
        options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,1000",
    ):
        options.add_argument(argument)
    return options


class _SharedChromium:
    """One headless Chromium for many tests, started on first use and started again
    after a test that left state behind."""

    def __init__(self, config: pytest.Config, download_path: Path) -> None:
        self._config = config
        self._download_path = download_path
        self._browser: Browser | None = None
        self._size: dict[str, int] = {}
        self._port: int | None = None
        self.used_devtools = False

    def driver(self) -> WebDriver:
        if self._browser is None:
            self._browser = Browser(
                browser=self._config.getoption("webdriver"),
                headless=self._config.getoption("headless"),
                options=self._config.hook.pytest_setup_options(),
                download_path=str(self._download_path),
            )
            self._size = self._browser.driver.get_window_size()
            self._record_devtools(self._browser.driver)
        return self._browser.driver

    def port(self) -> int:
        """The port for this browser's Dash servers: the same one while it is free (each
        test's server has stopped before the next starts), a new one otherwise."""
        if self._port is None or not _bindable(self._port):
            self._port = _free_port()
        return self._port

    def _record_devtools(self, driver: WebDriver) -> None:
        """Note every DevTools command a test sends: their effects outlive the page."""
        send = driver.execute_cdp_cmd  # type: ignore[attr-defined]

        def recorded(cmd: str, cmd_args: dict[str, Any]) -> Any:
            self.used_devtools = True
            return send(cmd, cmd_args)

        driver.execute_cdp_cmd = recorded  # type: ignore[attr-defined]

    def reset(self, clean: bool) -> None:
        """Leave the browser as new for the next test, or close it when ``clean`` is
        false or it cannot be reset."""
        if self._browser is None:
            return
        if clean and not self.used_devtools:
            driver = self._browser.driver
            try:
                if len(driver.window_handles) == 1:
                    driver.execute_script("localStorage.clear(); sessionStorage.clear();")
                    driver.delete_all_cookies()
                    driver.get("about:blank")
                    driver.set_window_size(self._size["width"], self._size["height"])
                    driver.get_log("browser")  # what this test's pages logged
                    return
            except WebDriverException:
                pass
        self.close()

    def close(self) -> None:
        if self._browser is not None:
            self._browser.__exit__(None, None, None)
            self._browser = None
        self._port = None  # a new browser has an empty cache: any free port will do
        self.used_devtools = False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _close_connection(response: Response) -> Response:
    """No keep-alive: the server of this test stops at its end, its port is reused."""
    response.headers["Connection"] = "close"
    return response


def _bindable(port: int) -> bool:
    """Whether a server can listen on ``port`` now (as Werkzeug does, address reuse on)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class _SharedBrowserComposite(DashComposite):
    """dash's dash_duo on a browser it does not own: leaving the test keeps it open."""

    def __init__(self, server: ThreadedRunner, driver: WebDriver, port: int, **kwargs: Any) -> None:
        self._shared_driver = driver
        self._port = port
        super().__init__(server, **kwargs)

    def _try_get_webdriver(self) -> WebDriver:
        return self._shared_driver

    def start_server(self, app: Any, navigate: bool = True, **kwargs: Any) -> None:
        """Dash's start_server, on the shared browser's port unless told otherwise."""
        if "port" not in kwargs:
            kwargs["port"] = self._port
            app.server.after_request(_close_connection)
        super().start_server(app, navigate, **kwargs)

    def __exit__(self, *exc_info: object) -> None:
        return None


_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Keep each phase's report on the item: dash_duo's teardown asks whether it failed."""
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


def _compile_kernels(folder: Path) -> None:
    """Run the estimators the pages default to (``auto`` picks per-origin on these runs)
    once, so that numba compiles their kernels here: with a cold cache (a fresh clone,
    or a kernel just changed) the first page would otherwise compile them inside its
    callback, for longer than a browser test waits for its figures."""
    import numpy as np

    from estimator.model import topology_from_dict
    from estimator.origins import origin_latency
    from mace.report_command import load_report
    from tests.dashboard.builders import write_small_run

    topology = topology_from_dict(
        {
            "subinterval": 1.0,
            "nodes": [{"id": "n0", "capacity": 1.0}, {"id": "n1", "capacity": 2.0}],
            "sources": [{"id": "s0"}, {"id": "s1"}],
            "operators": [
                {"id": "a", "query": "q", "inputs": ["s0", "s1"], "cost": [0.01, 0.01]},
                {"id": "b", "query": "q", "inputs": ["a"], "cost": 0.01},
            ],
            "placement": {"a": "n0", "b": "n1"},
        }
    )
    port, k = np.ones((3, 40)), 4
    for node_fine, source_fine in (
        (None, None),
        (np.ones((2, 40, k)), None),
        (None, np.ones((2, 40, k))),
    ):
        origin_latency(topology, port, node_fine, k, source_fine=source_fine)
    db = folder / "kernels.duckdb"
    write_small_run(db)
    for estimator in ("auto", "burst"):
        load_report(db, "small", 0.1, estimator)


@pytest.fixture(scope="session")
def shared_chromium(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[_SharedChromium]:
    _compile_kernels(tmp_path_factory.mktemp("kernels"))
    chromium = _SharedChromium(pytestconfig, tmp_path_factory.mktemp("download"))
    yield chromium
    chromium.close()


@pytest.fixture
def dash_duo(
    request: pytest.FixtureRequest,
    dash_thread_server: ThreadedRunner,
    shared_chromium: _SharedChromium,
) -> Iterator[DashComposite]:
    """dash's dash_duo (a Dash server of its own, the same API) on the shared browser."""
    driver = shared_chromium.driver()
    driver.get_log("browser")  # start with an empty console
    composite = _SharedBrowserComposite(
        dash_thread_server,
        driver,
        shared_chromium.port(),
        browser=request.config.getoption("webdriver"),
        headless=request.config.getoption("headless"),
        percy_assets_root=request.config.getoption("percy_assets"),
        percy_finalize=request.config.getoption("nopercyfinalize"),
        pause=request.config.getoption("pause"),
    )
    yield composite
    reports = request.node.stash.get(_REPORTS, {})
    shared_chromium.reset(clean=not any(r.failed for r in reports.values()))


@pytest.fixture
def five_node_db(tmp_path: Path) -> Path:
    """A run of the simulator's clickstream-5q on its default 5 nodes: 70 operators and
    5 sources, the graph the operator-graph tests read."""
    db = tmp_path / "five.duckdb"
    topology, _ = workload_model("clickstream-5q")
    write_workload_run(db, "five", topology)
    return db
