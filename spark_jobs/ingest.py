"""Ingest a landing folder into the products table with Spark Structured Streaming.

    python -m spark_jobs.ingest --landing PATH --checkpoint PATH [--table-path P]
        [--once | --continuous [--interval SECONDS]] [--format jsonl|csv|parquet]
        [--quarantine DIR] [--max-files-per-batch N] [--hoodie-conf KEY=VALUE ...]

Files dropped into PATH (a local folder, s3a:// or s3://; sub-folders included) are
upserted once each, with the rules of `upsert_products` (same readers, validation,
de-duplication and diff). A row whose `op` column says `delete` (or `d`) deletes its id;
so upserts and deletes arrive through the same folder, as a CDC feed would send them.
`--once` processes what is there and stops (Spark's available-now trigger: for cron and
tests); `--continuous` polls every `--interval` seconds until stopped. Prints `batches N`,
`files N`, `upserted N`, `deleted N`, `quarantined N` when it stops.

Exactly once, across restarts and kill -9:
- Which files: Spark's file source. Each batch's file list is written to the checkpoint
  (`offsets/`, `sources/`) before the batch runs and marked done (`commits/`) after it;
  a file is planned into one batch only, and a batch that did not finish is re-run on
  restart with the same files. The stream reads file *names* (the `binaryFile` source
  with the content column pruned); each batch reads its files with the batch readers, so
  CSV headers and Parquet schemas are mapped per file as in `upsert_products`.
- The table: the re-run must not change anything the first run already committed. A
  Hudi sink that trusts the batch id alone would need the id and the commit in one
  atomic step; instead every batch is idempotent by content. Rows are de-duplicated per id
  (newest ts, deterministic tie-break), then diffed against the table: a row whose
  content is already stored is not written, a delete of an absent id writes nothing. The
  ingestion time given to rows without a `ts` is stored in the checkpoint per batch
  (`ingest/batch-N.ts`) before the batch writes, so a re-run uses the same ts and cannot
  overwrite a newer write made in between. A re-run of a committed batch therefore makes
  no commit; a batch killed mid-commit is rolled back by Hudi and re-written. Each commit
  records `_ingest.batch_id` and `_ingest.checkpoint` in its metadata, to audit this.
- The quarantine: each batch's rejects replace `<quarantine>/batch=N`, so a re-run
  rewrites the same rows rather than adding them. A file that cannot be read (a broken
  Parquet footer, a CSV without an id column) is quarantined whole
  (`<quarantine>/batch=N-files`) instead of stopping the stream forever.
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from app.core.config import get_settings
from spark_jobs import cli
from spark_jobs.driver_rows import rows_frame
from spark_jobs.errors import InputError
from spark_jobs.inputs import FORMATS, InputFormat, check_file, infer_format, read_inputs
from spark_jobs.table import (
    default_quarantine,
    normalize_table_path,
    parse_hoodie_conf,
    require_table,
)
from spark_jobs.upsert_products import upsert_source

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class IngestTotals:
    batches: int = 0
    files: int = 0
    upserted: int = 0
    deleted: int = 0
    quarantined: int = 0


@dataclass(frozen=True, slots=True)
class IngestConfig:
    table_path: str
    landing: str
    checkpoint: str
    quarantine: str
    fmt: InputFormat | None = None
    max_files_per_batch: int = 1000
    hoodie_conf: dict[str, str] | None = None


def _qualified(path: str) -> str:
    """Local paths made absolute; URIs kept. The checkpoint must not move between runs."""
    return normalize_table_path(path) if "://" not in path else path.rstrip("/")


class BatchWriter:
    """The foreachBatch function: one call per micro-batch of newly landed files."""

    def __init__(self, spark: SparkSession, config: IngestConfig) -> None:
        self.spark = spark
        self.config = config
        self.props = require_table(spark, config.table_path)
        self.totals = IngestTotals()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        files = sorted(str(row["path"]) for row in batch.select("path").collect())
        if not files:
            return
        logger.info("batch %d: %d new files", batch_id, len(files))
        readable, rejected = self._split(files)
        quarantine = f"{self.config.quarantine.rstrip('/')}/batch={batch_id}"
        if rejected:
            self._quarantine_files(rejected, f"{quarantine}-files")
        self.totals.batches += 1
        self.totals.files += len(files)
        self.totals.quarantined += len(rejected)
        if not readable:
            return
        result = upsert_source(
            self.spark,
            self.config.table_path,
            self.props,
            read_inputs(self.spark, readable, self._ingestion_ts(batch_id)),
            quarantine,
            self.config.hoodie_conf,
            started,
            quarantine_empty=False,
            commit_meta={"batch_id": str(batch_id), "checkpoint": self.config.checkpoint},
        )
        self.totals.upserted += result.upserted
        self.totals.deleted += result.deleted
        self.totals.quarantined += result.quarantined
        logger.info(
            "batch %d done in %.1f s: read %d, upserted %d, deleted %d, quarantined %d",
            batch_id,
            time.monotonic() - started,
            result.read,
            result.upserted,
            result.deleted,
            result.quarantined,
        )

    def _split(
        self, files: list[str]
    ) -> tuple[list[tuple[str, InputFormat]], list[tuple[str, str]]]:
        readable: list[tuple[str, InputFormat]] = []
        rejected: list[tuple[str, str]] = []
        for file in files:
            fmt = self.config.fmt or infer_format(file)
            if fmt is None:
                rejected.append((file, "cannot tell the format; name it .jsonl/.csv/.parquet"))
                continue
            try:
                check_file(self.spark, file, fmt)
            except InputError as e:
                rejected.append((file, str(e)))
                continue
            readable.append((file, fmt))
        return readable, rejected

    def _quarantine_files(self, rejected: list[tuple[str, str]], path: str) -> None:
        logger.warning("%d files quarantined whole to %s", len(rejected), path)
        rows = [{"source": file, "reasons": [reason], "row": None} for file, reason in rejected]
        frame = rows_frame(self.spark, rows, "source: string, reasons: array<string>, row: string")
        frame.coalesce(1).write.mode("overwrite").json(path)

    def _ingestion_ts(self, batch_id: int) -> int:
        """The batch's ingestion time, fixed on its first run and reused by a re-run."""
        jvm: Any = self.spark._jvm
        conf = self.spark._jsc.hadoopConfiguration()
        path = jvm.org.apache.hadoop.fs.Path(f"{self.config.checkpoint}/ingest/batch-{batch_id}.ts")
        fs = path.getFileSystem(conf)
        if fs.exists(path):
            stream = fs.open(path)
            try:
                reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream, "UTF-8"))
                return int(str(reader.readLine()))
            finally:
                stream.close()
        ts = time.time_ns() // 1_000_000
        out = fs.create(path, True)
        try:
            out.write(str(ts).encode("ascii"))
        finally:
            out.close()
        return ts


def run_ingest(
    spark: SparkSession, config: IngestConfig, once: bool = True, interval_seconds: float = 10.0
) -> IngestTotals:
    """Run the landing stream: until no file is left (`once`), or until stopped."""
    writer = BatchWriter(spark, config)
    files = (
        spark.readStream.format("binaryFile")
        # A streaming source wants its schema given; this is binaryFile's own.
        .schema("path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY")
        .option("recursiveFileLookup", "true")
        .option("maxFilesPerTrigger", config.max_files_per_batch)
        .load(config.landing)
        # Only the names: the content column is pruned, so the stream reads no data.
        .select("path")
    )
    stream = files.writeStream.foreachBatch(writer).option(
        "checkpointLocation", f"{config.checkpoint}/stream"
    )
    if once:
        query = stream.trigger(availableNow=True).start()
    else:
        query = stream.trigger(processingTime=f"{interval_seconds} seconds").start()
    logger.info(
        "ingesting %s into %s (checkpoint %s)", config.landing, config.table_path, config.checkpoint
    )
    query.awaitTermination()
    return writer.totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.ingest", description=__doc__)
    parser.add_argument("--landing", required=True, metavar="PATH")
    parser.add_argument("--checkpoint", required=True, metavar="PATH")
    parser.add_argument("--table-path", default=None, help="default: HUDI_TABLE_PATH")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="process what is there, then stop")
    mode.add_argument("--continuous", action="store_true", help="poll until stopped")
    parser.add_argument("--interval", type=float, default=10.0, metavar="SECONDS")
    parser.add_argument("--format", choices=FORMATS, default=None, help="default: by extension")
    parser.add_argument("--quarantine", default=None, metavar="DIR")
    parser.add_argument("--max-files-per-batch", type=int, default=1000)
    parser.add_argument("--hoodie-conf", action="append", metavar="KEY=VALUE")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        from spark_jobs.session import get_spark

        settings = get_settings()
        spark = get_spark(app_name="products-ingest")
        table_path = normalize_table_path(args.table_path or settings.hudi_table_path)
        quarantine = default_quarantine(table_path, settings.quarantine_dir)
        config = IngestConfig(
            table_path=table_path,
            landing=_qualified(args.landing),
            checkpoint=_qualified(args.checkpoint),
            quarantine=args.quarantine or f"{quarantine.rstrip('/')}/landing",
            fmt=args.format,
            max_files_per_batch=args.max_files_per_batch,
            hoodie_conf=parse_hoodie_conf(args.hoodie_conf),
        )
        totals = run_ingest(spark, config, once=not args.continuous, interval_seconds=args.interval)
        for name, value in asdict(totals).items():
            print(f"{name} {value}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
