"""Validate product files and upsert the good rows into the products Hudi table.

    python -m spark_jobs.upsert_products --table-path P --input FILE_OR_DIR... \
        [--format jsonl|csv|parquet] [--quarantine PATH]

Prints `read N`, `upserted N`, `quarantined N` (then `duplicates N`, `unchanged N`).
Everything is read and validated before the table is touched: a missing, unreadable or
unmappable input fails the job with the table as it was. Rows the table already holds
(same content, and the same ts or none given) are not rewritten, so re-running a file
makes no commit and gives the sync nothing to do.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.catalog import COLUMN_NAMES
from app.core.config import get_settings
from spark_jobs import cli
from spark_jobs.inputs import (
    FORMATS,
    InputFormat,
    RawRow,
    column_mapping,
    discover,
    iter_mapped,
    read_rows,
)
from spark_jobs.table import (
    WriteOperation,
    has_completed_writes,
    normalize_table_path,
    read_snapshot,
    require_table,
    write,
)
from spark_jobs.validation import ValidRow, validate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)

_CONTENT_COLUMNS = ("name", "description", "category", "brand", "price")
_PROGRESS_EVERY = 50_000


@dataclass(frozen=True, slots=True)
class UpsertResult:
    read: int
    upserted: int
    quarantined: int
    duplicates: int  # same id more than once in the batch: all but the newest ts dropped
    unchanged: int  # the table already holds this content, or a newer version of the row
    quarantine_path: str | None
    seconds: float


@dataclass(slots=True)
class Batch:
    """Validated, de-duplicated rows plus the rejects, before anything is written."""

    rows: dict[int, ValidRow] = field(default_factory=dict)
    rejects: list[dict[str, Any]] = field(default_factory=list)
    read: int = 0
    duplicates: int = 0

    def add(self, raw: RawRow, mapped: dict[str, Any] | None, ingestion_ts: int) -> None:
        self.read += 1
        outcome = validate(mapped, ingestion_ts) if mapped is not None else ["not a JSON object"]
        if isinstance(outcome, list):
            row: Any = raw.data if raw.data is not None else raw.text
            self.rejects.append(
                {"source": raw.source, "line": raw.line, "reasons": outcome, "row": row}
            )
            return
        current = self.rows.get(outcome.id)
        if current is not None:
            self.duplicates += 1
            # Highest ts wins; on a tie the later row wins, as Hudi's own merge would do.
            if outcome.ts < current.ts:
                return
        self.rows[outcome.id] = outcome
        if self.read % _PROGRESS_EVERY == 0:
            logger.info("validated %d rows", self.read)


def upsert_files(
    spark: SparkSession,
    table_path: str,
    inputs: list[str],
    fmt: InputFormat | None = None,
    quarantine_path: str | None = None,
) -> UpsertResult:
    """Read, validate and upsert product files (a file or a folder of files each).

    Args:
        fmt: input format for every file; None infers it from each file's extension.
        quarantine_path: where rejected rows go (written even when empty); None writes a
            timestamped file under Settings.quarantine_dir only when rows were rejected.
    Returns:
        The counts; raises JobError subclasses (nothing written) on bad paths or inputs.
    """
    started = time.monotonic()
    table_path = normalize_table_path(table_path)
    props = require_table(spark, table_path)
    ingestion_ts = time.time_ns() // 1_000_000
    batch = Batch()
    files = discover(inputs, fmt)
    for number, (path, file_fmt) in enumerate(files, start=1):
        columns, raw_rows = read_rows(path, file_fmt)
        mapping = column_mapping(columns, str(path)) if raw_rows else {}
        for raw, mapped in iter_mapped(raw_rows, mapping):
            batch.add(raw, mapped, ingestion_ts)
        logger.info("read %d rows from %s (file %d of %d)", len(raw_rows), path, number, len(files))
    return _apply(spark, table_path, props, batch, quarantine_path, started)


def upsert_rows(
    spark: SparkSession,
    table_path: str,
    rows: list[dict[str, Any]],
    quarantine_path: str | None = None,
) -> UpsertResult:
    """Upsert product dicts (table column names or their aliases) with the file rules.

    For tests and scripts: `upsert_rows(spark, path, [{"id": 1, "name": "Kettle", ...}])`.
    """
    started = time.monotonic()
    table_path = normalize_table_path(table_path)
    props = require_table(spark, table_path)
    ingestion_ts = time.time_ns() // 1_000_000
    batch = Batch()
    if rows:
        columns = list(dict.fromkeys(k for row in rows for k in row))
        raw_rows = [RawRow("<rows>", n, dict(row)) for n, row in enumerate(rows, start=1)]
        for raw, mapped in iter_mapped(raw_rows, column_mapping(columns, "<rows>")):
            batch.add(raw, mapped, ingestion_ts)
    return _apply(spark, table_path, props, batch, quarantine_path, started)


def _apply(
    spark: SparkSession,
    table_path: str,
    props: dict[str, str],
    batch: Batch,
    quarantine_path: str | None,
    started: float,
) -> UpsertResult:
    written_quarantine = _write_quarantine(batch.rejects, quarantine_path)
    logger.info(
        "%d rows read: %d valid, %d rejected, %d duplicates",
        batch.read,
        len(batch.rows),
        len(batch.rejects),
        batch.duplicates,
    )
    upserted = 0
    if batch.rows:
        # A table that never had a write holds no keys to look up: bulk_insert skips the
        # index and small-file work and is ~2x faster for the first load. The batch is
        # already de-duplicated, so the result is the same as an upsert.
        first_load = not has_completed_writes(spark, table_path)
        changed = _changed_rows(spark, table_path, list(batch.rows.values()), first_load)
        changed = changed.persist()
        try:
            upserted = changed.count()
            if upserted:
                operation: WriteOperation = "bulk_insert" if first_load else "upsert"
                logger.info("writing %d rows to %s (%s)", upserted, table_path, operation)
                write_started = time.monotonic()
                write(changed, table_path, props, operation)
                logger.info("commit done in %.1f s", time.monotonic() - write_started)
        finally:
            changed.unpersist()
    return UpsertResult(
        read=batch.read,
        upserted=upserted,
        quarantined=len(batch.rejects),
        duplicates=batch.duplicates,
        unchanged=len(batch.rows) - upserted,
        quarantine_path=written_quarantine,
        seconds=time.monotonic() - started,
    )


def _changed_rows(
    spark: SparkSession, table_path: str, rows: list[ValidRow], first_load: bool
) -> DataFrame:
    """The rows that would change what the table shows; the rest are left out.

    Left out: rows whose stored version is newer (Hudi would keep the stored one anyway),
    and rows whose content is already stored with the same ts, or with any ts when the
    incoming row had none (its ts is only the ingestion time).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        BooleanType,
        DoubleType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    schema = StructType(
        [
            StructField("id", LongType(), False),
            StructField("ts", LongType(), False),
            StructField("name", StringType(), False),
            StructField("description", StringType(), True),
            StructField("category", StringType(), True),
            StructField("brand", StringType(), True),
            StructField("price", DoubleType(), True),
            StructField("ts_defaulted", BooleanType(), False),
        ]
    )
    # The rows are validated already; Spark's per-row schema check would double the cost.
    incoming = spark.createDataFrame(
        [(*r.as_tuple(), r.ts_defaulted) for r in rows], schema, verifySchema=False
    )
    if first_load:
        return incoming.select(*COLUMN_NAMES)
    stored = read_snapshot(spark, table_path).select(
        F.col("id"), *(F.col(c).alias(f"stored_{c}") for c in ("ts", *_CONTENT_COLUMNS))
    )
    joined = incoming.join(stored, "id", "left")
    same_content = reduce(
        lambda a, b: a & b, (F.col(c).eqNullSafe(F.col(f"stored_{c}")) for c in _CONTENT_COLUMNS)
    )
    is_new = F.col("stored_ts").isNull()
    not_older = F.col("ts") >= F.col("stored_ts")
    already_stored = same_content & (F.col("ts_defaulted") | (F.col("ts") == F.col("stored_ts")))
    return joined.filter(is_new | (not_older & ~already_stored)).select(*COLUMN_NAMES)


def _write_quarantine(rejects: list[dict[str, Any]], path: str | None) -> str | None:
    if path is None:
        if not rejects:
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        path = str(Path(get_settings().quarantine_dir) / f"quarantine-{stamp}.jsonl")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as f:
        for reject in rejects:
            # default=str: Parquet rows may hold dates or bytes that JSON cannot spell.
            f.write(json.dumps(reject, ensure_ascii=False, default=str) + "\n")
    if rejects:
        logger.warning("%d rows quarantined to %s", len(rejects), target)
    return str(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.upsert_products", description=__doc__)
    parser.add_argument("--table-path", default=None, help="default: HUDI_TABLE_PATH")
    parser.add_argument("--input", nargs="+", required=True, metavar="FILE_OR_DIR")
    parser.add_argument("--format", choices=FORMATS, default=None, help="default: by extension")
    parser.add_argument("--quarantine", default=None, metavar="PATH")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        from spark_jobs.session import get_spark

        path = args.table_path or get_settings().hudi_table_path
        # Inputs are checked before the JVM starts: a typo fails in a second, not ten.
        discover(args.input, args.format)
        result = upsert_files(get_spark(), path, args.input, args.format, args.quarantine)
        print(f"read {result.read}")
        print(f"upserted {result.upserted}")
        print(f"quarantined {result.quarantined}")
        print(f"duplicates {result.duplicates}")
        print(f"unchanged {result.unchanged}")
        if result.quarantine_path and result.quarantined:
            print(f"quarantine_file {result.quarantine_path}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
