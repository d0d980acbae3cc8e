"""Hard-delete products by id.

    python -m spark_jobs.delete_products --table-path P (--ids FILE | --id N [--id N ...])

The ids file holds one id per line (blank lines and `#` comments are skipped). Ids the
table does not hold are fine: they are counted as `not_found` and cause no commit.
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.core.catalog import COLUMN_NAMES
from app.core.config import get_settings
from spark_jobs import cli
from spark_jobs.driver_rows import rows_frame
from spark_jobs.errors import InputError
from spark_jobs.table import (
    materialize,
    normalize_table_path,
    read_snapshot,
    require_table,
    write,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

_ID = re.compile(r"[+-]?\d+")
_BIGINT = range(-(2**63), 2**63)


@dataclass(frozen=True, slots=True)
class DeleteResult:
    requested: int  # distinct ids asked for
    deleted: int
    not_found: int
    seconds: float


def read_ids_file(path: str) -> list[int]:
    """Ids from a file, one per line; InputError names the first bad line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read ids file {path}: {type(e).__name__}") from e
    ids: list[int] = []
    for number, line in enumerate(lines, start=1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if not _ID.fullmatch(text) or int(text) not in _BIGINT:
            raise InputError(f"{path}:{number}: not an integer id: {text[:40]!r}")
        ids.append(int(text))
    return ids


def delete_ids(spark: SparkSession, table_path: str, ids: list[int]) -> DeleteResult:
    """Delete the rows with these ids in one commit (none when no id is present)."""
    from pyspark.sql import functions as F

    started = time.monotonic()
    table_path = normalize_table_path(table_path)
    props = require_table(spark, table_path)
    wanted = sorted(set(ids))
    if not wanted:
        return DeleteResult(0, 0, 0, time.monotonic() - started)
    id_frame = rows_frame(spark, [{"id": i} for i in wanted], "id: bigint")
    now = time.time_ns() // 1_000_000
    # Under EVENT_TIME_ORDERING a delete whose ts is older than the stored row's can lose
    # the merge, so each delete carries max(stored ts, now).
    # Counted, then written: kept once (`materialize`, neither persist nor localCheckpoint).
    present = materialize(
        read_snapshot(spark, table_path)
        .join(id_frame, "id", "inner")
        .withColumn("ts", F.greatest(F.col("ts"), F.lit(now)))
        .select(*COLUMN_NAMES)
    )
    deleted = present.count()
    if deleted:
        logger.info("deleting %d of %d ids from %s", deleted, len(wanted), table_path)
        write(present, table_path, props, "delete")
    return DeleteResult(len(wanted), deleted, len(wanted) - deleted, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.delete_products", description=__doc__)
    parser.add_argument("--table-path", default=None, help="default: HUDI_TABLE_PATH")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--ids", metavar="FILE", help="one id per line")
    which.add_argument("--id", type=int, action="append", metavar="N")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        from spark_jobs.session import get_spark

        path = args.table_path or get_settings().hudi_table_path
        ids = read_ids_file(args.ids) if args.ids else list(args.id)
        result = delete_ids(get_spark(), path, ids)
        print(f"requested {result.requested}")
        print(f"deleted {result.deleted}")
        print(f"not_found {result.not_found}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
