"""The documentation site: the command reference against the parser ``mace.cli`` builds,
the shell examples of every page (run as written, in a scratch folder), and the build
itself with ``mkdocs build --strict``.

Example markers (docs/getting-started.md, "Examples in these pages"): every fenced
``bash`` block follows one comment line, ``<!-- example: run -->``, ``<!-- example: run
spark -->`` or ``<!-- example: not run (REASON) -->``.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SHELL_FENCES = {"bash", "sh", "shell", "console"}
MARKER = re.compile(r"<!-- example: (run|run spark|not run \(.+\)) -->")
FENCE = re.compile(r"```(\S*)")


def _reference() -> ModuleType:
    """docs/cli_reference.py (a script beside the pages, not a package module)."""
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = _reference()


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    kind: str | None  # "run", "run spark", "not run (...)", or None without a marker
    code: str


def examples(page: Path) -> list[Example]:
    """The shell blocks of a page, each with the marker on the line before its fence."""
    lines = page.read_text().splitlines()
    found = []
    index = 0
    while index < len(lines):
        fence = FENCE.fullmatch(lines[index].strip())
        if fence is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if fence.group(1) in SHELL_FENCES:
            marker = MARKER.fullmatch(lines[index - 1].strip()) if index else None
            kind = marker.group(1) if marker else None
            found.append(Example(page, index + 1, kind, "\n".join(lines[index + 1 : end])))
        index = end + 1
    return found


PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
ALL_EXAMPLES = [example for page in PAGES for example in examples(page)]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_every_subcommand_has_a_page_whose_options_block_matches_the_parser() -> None:
    assert REFERENCE.stale_pages(write=False) == [], (
        "run .venv/bin/python docs/cli_reference.py and commit the pages"
    )


def test_every_subcommand_and_option_appears_in_the_command_reference() -> None:
    missing = []
    for name, parser in REFERENCE.top_level(REFERENCE.build_parser()).items():
        text = REFERENCE.page(name).read_text()
        for full, leaf in REFERENCE.leaf_parsers(parser, f"mace {name}"):
            if f"`{full}`" not in text:
                missing.append(full)
            for action in REFERENCE.documented_actions(leaf):
                for option in action.option_strings:
                    if option not in text:
                        missing.append(f"{full} {option}")
    assert missing == []


def test_every_option_is_described_in_the_text_of_its_page() -> None:
    """Not only listed in the generated table: the page's own text says what it is for."""
    undescribed = []
    for name, parser in REFERENCE.top_level(REFERENCE.build_parser()).items():
        text = REFERENCE.page(name).read_text()
        prose = text[: text.index(REFERENCE.BEGIN)] + text[text.index(REFERENCE.END) :]
        for full, leaf in REFERENCE.leaf_parsers(parser, f"mace {name}"):
            for action in REFERENCE.documented_actions(leaf):
                if action.option_strings and not any(o in prose for o in action.option_strings):
                    undescribed.append(f"{full} {action.option_strings[0]}")
    assert undescribed == []


def test_the_options_block_lists_an_option_added_to_the_parser() -> None:
    parser = argparse.ArgumentParser(prog="mace prune")
    parser.add_argument("--older-than", metavar="DAYS", help="runs older than DAYS")
    parser.add_argument("--brand-new", action="store_true", help="an option the page lacks")
    block = REFERENCE.render_command("prune", parser)
    assert "| `--brand-new` |  | an option the page lacks |" in block
    assert "| `--older-than` | `DAYS` | runs older than DAYS |" in block
    page = REFERENCE.page("prune")
    assert REFERENCE.updated(page.read_text(), block, page) != page.read_text()


def test_every_shell_example_is_marked() -> None:
    unmarked = [f"{_name(e.page)}:{e.line}" for e in ALL_EXAMPLES if e.kind is None]
    assert unmarked == [], "mark each with <!-- example: run|run spark|not run (why) -->"


def _run_examples(page: Path, kinds: set[str], workdir: Path) -> None:
    """Run ``page``'s examples of ``kinds`` in order in ``workdir``, which holds a copy of
    examples/ and .venv/bin/mace, as if pasted at the repository's root."""
    shutil.copytree(ROOT / "examples", workdir / "examples")
    bin_dir = workdir / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "mace").symlink_to(Path(sys.executable).parent / "mace")
    for example in examples(page):
        if example.kind not in kinds:
            continue
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", example.code],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=540,
        )
        assert done.returncode == 0, (
            f"{_name(page)}:{example.line} exited {done.returncode}\n"
            f"{example.code}\n--- stderr\n{done.stderr[-3000:]}"
        )


def _runnable_pages() -> list[object]:
    """Each page with runnable examples, once: a page with Spark examples is marked
    ``spark`` and ``slow`` (its other examples run in the same test, in page order)."""
    pages = sorted({e.page for e in ALL_EXAMPLES if e.kind in ("run", "run spark")})
    spark = {e.page for e in ALL_EXAMPLES if e.kind == "run spark"}
    slow = [pytest.mark.spark, pytest.mark.slow]
    return [pytest.param(p, marks=slow if p in spark else (), id=_name(p)) for p in pages]


@pytest.mark.parametrize("page", _runnable_pages())
def test_runnable_examples_run(page: Path, tmp_path: Path) -> None:
    _run_examples(page, {"run", "run spark"}, tmp_path)


def test_examples_are_found() -> None:
    kinds = {e.kind for e in ALL_EXAMPLES}
    assert {"run", "run spark"} <= kinds
    assert any(k and k.startswith("not run (") for k in kinds)


def test_site_builds_without_warnings(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "commands" / "estimate.html").is_file()


def test_readme_links_stay_inside_the_repository() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", (ROOT / "README.md").read_text())
    assert links
    outside = [link for link in links if "://" in link or link.startswith(("/", "mailto:"))]
    assert outside == []
    missing = [link for link in links if not (ROOT / link.split("#")[0]).exists()]
    assert missing == []
