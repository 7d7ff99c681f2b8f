"""Benchmark: what a newcomer sees after starting the demo, from the command on.

Polls the Overview of a starting ``mace demo`` (or ``make demo``) in headless Chromium
every second and prints, in seconds after ``--since`` (the command's start, epoch
seconds): when the page first answers, when the first-ingestion message shows and when
the latency chart first has points. Start it right after the command:

    t0=$(date +%s.%N); make demo & .venv/bin/python benchmarks/bench_first_figure.py --since $t0
"""

from __future__ import annotations

import argparse
import json
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

from dashboard.overview.ids import OV_LATENCY

PROGRESS = "first ingestion is running"
"""Words of the page's message while the first ingestion runs."""
POINTS = (
    f"const g = document.querySelector('#{OV_LATENCY} .js-plotly-plot');"
    "if (!g || !g.data) return 0;"
    "return g.data.reduce((n, t) => n + (t.y ? t.y.length : 0), 0);"
)


def browser() -> webdriver.Chrome:
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8050/")
    parser.add_argument("--since", type=float, default=time.time(), help="epoch seconds")
    parser.add_argument("--limit", type=float, default=180.0, help="give up after (s)")
    args = parser.parse_args()
    seen: dict[str, float] = {}
    driver = browser()
    loaded = False
    try:
        while time.time() - args.since < args.limit and "figure" not in seen:
            try:
                if not loaded:
                    driver.get(args.url)
                    loaded = True
                    seen.setdefault("page", time.time() - args.since)
                text = driver.execute_script("return document.body.innerText") or ""
                if PROGRESS in text:
                    seen.setdefault("progress message", time.time() - args.since)
                if driver.execute_script(POINTS):
                    seen["figure"] = time.time() - args.since
            except WebDriverException:  # the server is not up yet
                loaded = False
            time.sleep(1.0)
    finally:
        driver.quit()
    print(json.dumps({k: round(v, 1) for k, v in seen.items()}))


if __name__ == "__main__":
    main()
