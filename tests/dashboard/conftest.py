"""Headless Chromium for dash_duo (the small test databases are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

from selenium.webdriver.chrome.options import Options

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
