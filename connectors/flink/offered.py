"""The records offered to a file-fed source: the lines of the files in its folder.

A source that reads a monitored folder (Flink's file source, the SQL ``filesystem``
connector) reports what it read, and no ``pendingRecords``: the files it has not read
yet wait in the folder, where no counter shows them. When the collector can see that
folder, it counts what was offered instead: every line of every visible file (names
starting with ``.`` or ``_`` are hidden, as Flink's file source skips them), counted
once a file's modification time is reached. A file is counted again when its size or
modification time changes (a file written in place), and a file that disappears (read
and deleted) keeps its count, so the total only grows. Line-oriented formats only
(CSV, JSON Lines).
"""

from __future__ import annotations

import os
from pathlib import Path

from connectors.errors import ConnectorError

CHUNK = 1 << 20


def count_lines(path: Path) -> int:
    """Lines of a text file (a last line without a newline counts)."""
    lines, last = 0, b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


class OfferedFiles:
    """Counts the lines offered in ``folder`` (and its sub-folders) up to a time."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise ConnectorError(f"--offered: {self.folder} is not a folder")
        self._seen: dict[str, tuple[int, float, int]] = {}  # path -> (size, mtime, lines)

    def total(self, until: float) -> int:
        """Lines of every file seen so far whose modification time is at most ``until``
        (epoch seconds)."""
        for path in self._visible(self.folder):
            try:
                stat = path.stat()
                key = str(path)
                known = self._seen.get(key)
                if stat.st_mtime <= until and (
                    known is None or known[:2] != (stat.st_size, stat.st_mtime)
                ):
                    self._seen[key] = (stat.st_size, stat.st_mtime, count_lines(path))
            except OSError:  # gone between the listing and the read: counted if seen
                continue
        return sum(lines for _, _, lines in self._seen.values())

    def _visible(self, folder: Path) -> list[Path]:
        found: list[Path] = []
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return found
        for entry in entries:
            if entry.name.startswith((".", "_")):
                continue
            if entry.is_dir(follow_symlinks=False):
                found += self._visible(Path(entry.path))
            elif entry.is_file():
                found.append(Path(entry.path))
        return found
