"""The demo table, in one JVM start: build it if missing, or apply the demo changes.

    python -m spark_jobs.demo              # create + load data/demo/products.jsonl if no table
    python -m spark_jobs.demo --changes    # upsert data/demo/changes.jsonl, delete deletes.txt

Used by ./uvicorn.sh (first run) and scripts/demo_changes.sh. The table path is
HUDI_TABLE_PATH (Settings), like every other job.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from app.core.config import ROOT, get_settings
from spark_jobs import cli
from spark_jobs.create_table import create_table
from spark_jobs.delete_products import delete_ids, read_ids_file
from spark_jobs.session import get_spark
from spark_jobs.table import normalize_table_path, read_table_properties
from spark_jobs.upsert_products import upsert_files

logger = logging.getLogger(__name__)

DEMO = ROOT / "data" / "demo"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.demo", description=__doc__)
    parser.add_argument("--changes", action="store_true", help="apply the demo edits/deletes")
    parser.add_argument("--table-path", default=None, help="default: HUDI_TABLE_PATH")
    args = parser.parse_args(argv)
    cli.configure_logging()
    settings = get_settings()
    path = normalize_table_path(args.table_path or settings.hudi_table_path)

    # The common case for ./uvicorn.sh (second start onwards) must not pay a JVM start.
    if not args.changes and "://" not in path and (Path(path) / ".hoodie").is_dir():
        print(f"table exists at {path}")
        return 0

    def job() -> None:
        spark = get_spark(settings, app_name="demo")
        if args.changes:
            up = upsert_files(spark, path, [str(DEMO / "changes.jsonl")])
            gone = delete_ids(spark, path, read_ids_file(str(DEMO / "deletes.txt")))
            print(f"upserted {up.upserted}")
            print(f"deleted {gone.deleted}")
            return
        if read_table_properties(spark, path) is not None:
            print(f"table exists at {path}")
            return
        if not Path(path).exists() and "://" not in path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        create_table(spark, path)
        loaded = upsert_files(spark, path, [str(DEMO / "products.jsonl")])
        print(f"created demo table at {path} with {loaded.upserted} products")

    return cli.run(job)


if __name__ == "__main__":
    raise SystemExit(main())
