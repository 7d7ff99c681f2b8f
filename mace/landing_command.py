"""``mace landing``: delete or compact landing files already ingested (never automatic)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "landing",
        help="delete or compact landing files already ingested into the store",
        description="Free the landing folder of files whose statistics are in the store. "
        "'delete' removes them; 'compact' merges each run's files of one record set into "
        "one file (Parquet per schema, JSON Lines kept as text) and removes the originals. "
        "Both are recorded in the manifest, so nothing is ingested twice. Only files "
        "ingested clean and unchanged since are touched: not files not ingested yet, "
        "waiting (ingest_pending), with quarantined rows, hidden or in progress.",
    )
    parser.add_argument("action", choices=("compact", "delete"), help="what to do")
    parser.add_argument("--landing", required=True, help="the landing folder given to ingest")
    parser.add_argument("--db", required=True, help="DuckDB file written by mace ingest")
    parser.add_argument("--run", dest="run_id", help="only this run (default: every run)")
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would go; change nothing"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ingest.compaction import compact_ingested, delete_ingested
    from ingest.errors import IngestError
    from storage.db import connect
    from storage.errors import StorageError

    landing, db = Path(args.landing), Path(args.db)
    if not landing.is_dir():
        raise IngestError(f"landing folder {landing} does not exist")
    if not db.is_file():
        raise StorageError(f"{db}: no such database file")
    con = connect(db)
    try:
        if args.action == "delete":
            result = delete_ingested(con, landing, args.run_id, dry_run=args.dry_run)
        else:
            result = compact_ingested(
                con,
                landing,
                args.run_id,
                dry_run=args.dry_run,
                progress=lambda p: print(f"wrote {p}"),
            )
    finally:
        con.close()
    print(result.describe(args.action, args.dry_run))
    return 0
