"""Ingest the service's closed event segments into the `interactions` Hudi table.

    python -m spark_jobs.ingest_events --events PATH --table-path T --checkpoint C
        [--once | --continuous [--interval SECONDS]] [--max-files-per-batch N]

PATH is EVENTS_DIR (or where its closed segments are shipped): `*.jsonl` files written and
renamed by app/events/log.py; the `_open/` folder is never read. Each segment is ingested
exactly once, across restarts and kill -9, as `spark_jobs.ingest` does for products:
- which files: Spark's file source records each batch's files in the checkpoint before
  the batch runs and marks it done after; an unfinished batch re-runs with the same files;
- the table: rows are upserted by `event_id`, so a re-run rewrites the same rows, and an
  event a client sent twice (same `event_id`, e.g. a retry after a lost 202) is one row.
Prints `batches N`, `files N`, `events N` (rows read) when it stops.
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from app.core.config import get_settings
from spark_jobs import cli
from spark_jobs.ingest import _qualified
from spark_jobs.interactions import PARTITION_FIELD, RECORD_KEY, event_schema, utc_day, write
from spark_jobs.table import normalize_table_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class EventTotals:
    batches: int = 0
    files: int = 0
    events: int = 0


class EventBatchWriter:
    """The foreachBatch function: one call per micro-batch of new segments."""

    def __init__(self, table_path: str) -> None:
        self.table_path = table_path
        self.totals = EventTotals()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F
        from pyspark.sql.window import Window

        started = time.monotonic()
        per_file = batch.groupBy(F.input_file_name().alias("file")).count().collect()
        if not per_file:
            return
        rows = sum(int(r["count"]) for r in per_file)
        # One row per event_id within the batch (the table's upsert does it across batches);
        # the earliest copy wins, deterministically.
        first = Window.partitionBy(RECORD_KEY).orderBy(F.col("ts").asc(), F.col("source").asc())
        events = (
            batch.filter(F.col(RECORD_KEY).isNotNull() & F.col("ts").isNotNull())
            .withColumn("_n", F.row_number().over(first))
            .filter(F.col("_n") == 1)
            .drop("_n")
            .withColumn(PARTITION_FIELD, utc_day(F.col("ts")))
        )
        write(events, self.table_path)
        self.totals.batches += 1
        self.totals.files += len(per_file)
        self.totals.events += rows
        logger.info(
            "batch %d: %d segments, %d events in %.1f s",
            batch_id,
            len(per_file),
            rows,
            time.monotonic() - started,
        )


def run_ingest_events(
    spark: SparkSession,
    events_path: str,
    table_path: str,
    checkpoint: str,
    *,
    once: bool = True,
    interval_seconds: float = 10.0,
    max_files_per_batch: int = 1000,
) -> EventTotals:
    """Run the segment stream: until no segment is left (`once`), or until stopped."""
    writer = EventBatchWriter(table_path)
    stream = (
        spark.readStream.schema(event_schema())
        .option("pathGlobFilter", "*.jsonl")
        .option("maxFilesPerTrigger", max_files_per_batch)
        .json(events_path)
        .writeStream.foreachBatch(writer)
        .option("checkpointLocation", f"{checkpoint}/stream")
    )
    if once:
        query = stream.trigger(availableNow=True).start()
    else:
        query = stream.trigger(processingTime=f"{interval_seconds} seconds").start()
    logger.info("ingesting events %s into %s (checkpoint %s)", events_path, table_path, checkpoint)
    query.awaitTermination()
    return writer.totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.ingest_events", description=__doc__)
    parser.add_argument("--events", default=None, metavar="PATH", help="default: EVENTS_DIR")
    parser.add_argument("--table-path", default=None, help="default: INTERACTIONS_TABLE_PATH")
    parser.add_argument("--checkpoint", required=True, metavar="PATH")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="process what is there, then stop")
    mode.add_argument("--continuous", action="store_true", help="poll until stopped")
    parser.add_argument("--interval", type=float, default=10.0, metavar="SECONDS")
    parser.add_argument("--max-files-per-batch", type=int, default=1000)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        from spark_jobs.session import get_spark

        settings = get_settings()
        spark = get_spark(app_name="interactions-ingest")
        totals = run_ingest_events(
            spark,
            _qualified(args.events or settings.events_dir),
            normalize_table_path(args.table_path or settings.interactions_table_path),
            _qualified(args.checkpoint),
            once=not args.continuous,
            interval_seconds=args.interval,
            max_files_per_batch=args.max_files_per_batch,
        )
        for name, value in asdict(totals).items():
            print(f"{name} {value}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
