"""Drop interaction partitions older than a retention period.

    python -m spark_jobs.events_retention [--table-path T] --keep-days N

Deletes every `day=` partition of the interactions table older than N UTC days (today
counts as one) in one Hudi `delete_partition` commit; the cleaner removes the files
later, and readers (hudi-rs, `GET /analytics`, `product_signals`) stop seeing the rows at
once. Prints `partitions N` (dropped). A retention of days the signals' half-life makes
negligible keeps their values (0.5 ** (N / half-life)).
"""

from __future__ import annotations

import argparse
import logging
import time
from typing import TYPE_CHECKING

from app.core.config import get_settings
from spark_jobs import cli
from spark_jobs.errors import JobError
from spark_jobs.interactions import PARTITION_FIELD, event_schema, write_options
from spark_jobs.table import normalize_table_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)


def expired_days(days: list[str], keep_days: int, *, now: float | None = None) -> list[str]:
    """The days (yyyy-MM-dd) older than the newest `keep_days` UTC days."""
    oldest_kept = time.strftime(
        "%Y-%m-%d", time.gmtime((now or time.time()) - (keep_days - 1) * 86_400)
    )
    return sorted(d for d in days if d < oldest_kept)


def drop_expired(spark: SparkSession, table_path: str, keep_days: int) -> list[str]:
    """Delete the expired partitions; returns their days."""
    from pyspark.sql import functions as F

    if keep_days < 1:
        raise JobError("--keep-days must be at least 1")
    table = spark.read.format("hudi").load(table_path)
    days = [r[PARTITION_FIELD] for r in table.select(PARTITION_FIELD).distinct().collect()]
    expired = expired_days(days, keep_days)
    if not expired:
        return []
    options = {
        **write_options("delete_partition"),
        "hoodie.datasource.write.partitions.to.delete": ",".join(
            f"{PARTITION_FIELD}={d}" for d in expired
        ),
    }
    empty = spark.createDataFrame([], event_schema()).withColumn(PARTITION_FIELD, F.lit(""))
    empty.write.format("hudi").options(**options).mode("append").save(table_path)
    logger.info("dropped %d partitions of %s: %s", len(expired), table_path, ", ".join(expired))
    return expired


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.events_retention", description=__doc__)
    parser.add_argument("--table-path", default=None, help="default: INTERACTIONS_TABLE_PATH")
    parser.add_argument("--keep-days", type=int, required=True)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        from spark_jobs.session import get_spark

        settings = get_settings()
        spark = get_spark(app_name="events-retention")
        path = normalize_table_path(args.table_path or settings.interactions_table_path)
        print(f"partitions {len(drop_expired(spark, path, args.keep_days))}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
