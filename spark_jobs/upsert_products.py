"""Validate product files and upsert the good rows into the products Hudi table.

    python -m spark_jobs.upsert_products --table-path P --input FILE_OR_DIR... \
        [--format jsonl|csv|parquet] [--quarantine DIR] [--hoodie-conf KEY=VALUE ...]

Prints `read N`, `upserted N`, `quarantined N` (then `duplicates N`, `unchanged N`).
DataFrame code end to end: Spark reads the inputs (local paths, s3a:// or s3://) on the
executors, validates them with the product rules (spark_jobs/validation.py), writes the
rejects to a quarantine folder, keeps the newest row per id and diffs the batch against
the table, so the driver holds counts, never rows. Everything is read and validated
before the table is touched: a missing, unreadable or unmappable input fails the job with
the table as it was. Rows the table already holds
(same content, and the same ts or none given) are not rewritten, so re-running a file
makes no commit and gives the sync nothing to do.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import reduce
from typing import TYPE_CHECKING, Any

from app.core.catalog import (
    COLUMN_NAMES,
    PRECOMBINE_FIELD,
    RECORD_KEY,
    SIGNAL_COLUMNS,
    spark_schema,
)
from app.core.config import get_settings
from spark_jobs import cli
from spark_jobs.errors import InputError
from spark_jobs.inputs import (
    FORMATS,
    ROW,
    SOURCE,
    InputFormat,
    discover,
    json_lines,
    list_inputs,
    read_inputs,
)
from spark_jobs.table import (
    WriteOperation,
    default_quarantine,
    has_completed_writes,
    materialize,
    normalize_table_path,
    parse_hoodie_conf,
    read_snapshot,
    require_table,
    write,
)
from spark_jobs.validation import (
    IS_DELETE,
    REASONS,
    TS_DEFAULTED,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)

# What a seller's row says: the shop's signal columns are neither compared nor taken.
_CONTENT_COLUMNS = tuple(
    c for c in COLUMN_NAMES if c not in (RECORD_KEY, PRECOMBINE_FIELD, *SIGNAL_COLUMNS)
)
_SEQ = "_seq"
_COMMIT_META_PREFIX = "_ingest."
# Up to this many ids per batch, the diff broadcasts them (~20 MB of hash table at 1M)
# and reads only the stored rows they name; a larger batch joins the whole table.
_BROADCAST_IDS_MAX = 1_000_000


@dataclass(frozen=True, slots=True)
class UpsertResult:
    read: int
    upserted: int
    quarantined: int
    duplicates: int  # same id more than once in the batch: all but the newest ts dropped
    unchanged: int  # the table already holds this content, or a newer version of the row
    quarantine_path: str | None
    seconds: float
    deleted: int = 0  # rows with op=delete whose id the table held


def upsert_files(
    spark: SparkSession,
    table_path: str,
    inputs: list[str],
    fmt: InputFormat | None = None,
    quarantine_path: str | None = None,
    hoodie_conf: dict[str, str] | None = None,
) -> UpsertResult:
    """Read, validate and upsert product files (files or folders; local, s3a:// or s3://).

    Args:
        fmt: input format for every file; None infers it from each file's extension.
        quarantine_path: folder the rejected rows are written to (JSON, by Spark; written
            even when empty); None writes a timestamped folder under
            Settings.quarantine_dir only when rows were rejected.
        hoodie_conf: Hudi write options that override the job's (see table.write_options).
    Returns:
        The counts; raises JobError subclasses (nothing written) on bad paths or inputs.
    """
    started = time.monotonic()
    table_path = normalize_table_path(table_path)
    props = require_table(spark, table_path)
    files = list_inputs(spark, inputs, fmt)
    logger.info("reading %d input files", len(files))
    source = read_inputs(spark, files, _now_millis())
    return upsert_source(spark, table_path, props, source, quarantine_path, hoodie_conf, started)


def upsert_rows(
    spark: SparkSession,
    table_path: str,
    rows: list[dict[str, Any]],
    quarantine_path: str | None = None,
) -> UpsertResult:
    """Upsert product dicts (table column names or their aliases) with the file rules.

    For tests and scripts: `upsert_rows(spark, path, [{"id": 1, "name": "Kettle", ...}])`.
    The dicts go through the JSONL path (one JSON line each), so the rules are the same.
    """
    from pyspark.sql import functions as F

    started = time.monotonic()
    table_path = normalize_table_path(table_path)
    props = require_table(spark, table_path)
    lines = [(json.dumps(row, ensure_ascii=False, default=str),) for row in rows]
    frame = spark.createDataFrame(lines, "value string")
    source = json_lines(frame, _now_millis(), F.lit("<rows>"))
    return upsert_source(spark, table_path, props, source, quarantine_path, None, started)


def upsert_source(
    spark: SparkSession,
    table_path: str,
    props: dict[str, str],
    source: DataFrame,
    quarantine_path: str | None,
    hoodie_conf: dict[str, str] | None,
    started: float,
    quarantine_empty: bool = True,
    commit_meta: dict[str, str] | None = None,
) -> UpsertResult:
    """Checked rows (spark_jobs.inputs shape) -> quarantine, de-duplicate, diff, write.

    A few Spark actions run over the kept, validated rows (counts, quarantine, changed
    rows) before the Hudi commits (one for deletes, one for upserts, each only when it has
    rows); nothing reaches the table when reading fails.

    Args:
        quarantine_empty: write the quarantine folder even when nothing was rejected.
        commit_meta: extra key/values recorded in each Hudi commit's metadata.
    """
    from pyspark.sql import functions as F

    # Known before anything is read: a table that never had a write holds nothing to diff
    # against or delete from.
    first_load = not has_completed_writes(spark, table_path)
    checked = source.withColumn(_SEQ, F.monotonically_increasing_id())
    # Parsed and validated once, then read back by every step below (counts, quarantine,
    # the write), kept by `materialize` (neither persist nor localCheckpoint). Only rejects
    # need their source text (for the quarantine): dropping it from the valid rows halves
    # what is kept.
    checked = materialize(checked.withColumn(ROW, F.when(F.size(REASONS) > 0, F.col(ROW))))
    counts = _count(checked)
    quarantined = counts.read - counts.valid
    written_quarantine = (
        write_quarantine(
            checked.filter(F.size(REASONS) > 0), quarantined, quarantine_path, table_path
        )
        if quarantined or quarantine_empty
        else None
    )
    accepted = checked.filter(F.size(REASONS) == 0)
    # Most batches hold each id once: then the (costly) newest-per-id aggregate is
    # skipped and the kept rows are written as they are.
    deduplicate = counts.ids < counts.valid
    newest = newest_per_key(accepted) if deduplicate else accepted
    changes = _write_changes(
        spark,
        table_path,
        props,
        newest,
        None if deduplicate else (counts.valid, counts.valid_deletes),
        first_load,
        hoodie_conf,
        commit_meta,
    )
    duplicates = counts.valid - changes.distinct
    logger.info(
        "%d rows read: %d valid, %d rejected, %d duplicates",
        counts.read,
        counts.valid,
        quarantined,
        duplicates,
    )
    return UpsertResult(
        read=counts.read,
        upserted=changes.upserted,
        quarantined=quarantined,
        duplicates=duplicates,
        unchanged=changes.distinct - changes.deletes - changes.upserted,
        quarantine_path=written_quarantine,
        seconds=time.monotonic() - started,
        deleted=changes.deleted,
    )


def _now_millis() -> int:
    """The ingestion time: the ts of rows that bring none."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class _Counts:
    read: int
    valid: int
    ids: int  # distinct ids among the valid rows
    valid_deletes: int  # valid rows with op=delete


def _count(checked: DataFrame) -> _Counts:
    """Every count the job needs, from one aggregation (one pass over the inputs).

    The first action, so unreadable inputs fail here.
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    valid = F.size(REASONS) == 0
    try:
        row = checked.agg(
            F.count(F.lit(1)).alias("read"),
            F.count(F.when(valid, 1)).alias("valid"),
            F.countDistinct(F.when(valid, F.col(RECORD_KEY))).alias("ids"),
            F.count(F.when(valid & F.col(IS_DELETE), 1)).alias("deletes"),
        ).first()
    except (Py4JJavaError, PySparkException) as e:
        first = (str(e).strip().splitlines() or [""])[0][:300]
        raise InputError(f"cannot read the inputs: {first}") from e
    assert row is not None  # an aggregate without grouping always has one row
    return _Counts(int(row["read"]), int(row["valid"]), int(row["ids"]), int(row["deletes"]))


def newest_per_key(valid: DataFrame) -> DataFrame:
    """One row per id: the highest ts wins; on a tie the later row wins, as Hudi's merge would.

    An aggregate rather than a window: it combines map-side, so only one row per id and
    partition crosses the shuffle.
    """
    from pyspark.sql import functions as F

    keys = (RECORD_KEY, PRECOMBINE_FIELD)
    rest = [c for c in (*COLUMN_NAMES, TS_DEFAULTED, IS_DELETE) if c not in keys]
    best = F.max(F.struct(PRECOMBINE_FIELD, _SEQ, *rest)).alias("best")
    return (
        valid.groupBy(RECORD_KEY)
        .agg(best)
        .select(RECORD_KEY, *(F.col(f"best.{c}").alias(c) for c in (PRECOMBINE_FIELD, *rest)))
    )


@dataclass(frozen=True, slots=True)
class _Changes:
    distinct: int  # ids in the batch after de-duplication (deletes included)
    deletes: int  # of which op=delete
    upserted: int
    deleted: int


def _write_changes(
    spark: SparkSession,
    table_path: str,
    props: dict[str, str],
    newest: DataFrame,
    known: tuple[int, int] | None,
    first_load: bool,
    hoodie_conf: dict[str, str] | None,
    commit_meta: dict[str, str] | None,
) -> _Changes:
    """Write the deletes, then the rows that change the table (a commit each, if any).

    Args:
        newest: one row per id. When `known` is None it is an aggregate's output,
            counted here and kept for the steps that read it again.
        known: (rows, of which op=delete) of `newest`, when already counted.
        first_load: the table has no completed write: bulk_insert, no diff, no deletes.
    """
    from pyspark.sql import functions as F

    # Hudi copies datasource options that start with this prefix into the commit's
    # extra metadata: that is how the landing job marks which batch made a commit.
    options = {**(hoodie_conf or {})}
    if commit_meta:
        options["hoodie.datasource.write.commitmeta.key.prefix"] = _COMMIT_META_PREFIX
        options.update({f"{_COMMIT_META_PREFIX}{k}": v for k, v in commit_meta.items()})
    if known is None:  # an aggregate's output, read by several actions below
        newest = materialize(newest)
        counts = newest.agg(F.count(F.lit(1)), F.count(F.when(F.col(IS_DELETE), 1))).first()
        assert counts is not None  # an aggregate without grouping always has one row
        known = int(counts[0]), int(counts[1])
    distinct, deletes = known
    deleted = 0
    if deletes and not first_load:
        deleted = _delete_present(spark, table_path, props, newest, options)
    incoming = newest.filter(~F.col(IS_DELETE))
    changed = _changed_rows(spark, table_path, incoming, first_load, distinct - deletes)
    if first_load:
        # A table that never had a write holds no keys to look up: bulk_insert skips
        # the index and small-file work and is ~2x faster for the first load. The
        # batch is already de-duplicated, so the result is the same as an upsert.
        upserted = distinct - deletes
    else:
        # Counted, then written; its plan reads the table (`materialize`, not persist).
        changed = materialize(changed)
        upserted = changed.count()
    if upserted:
        operation: WriteOperation = "bulk_insert" if first_load else "upsert"
        logger.info("writing %d rows to %s (%s)", upserted, table_path, operation)
        write_started = time.monotonic()
        write(changed, table_path, props, operation, options)
        logger.info("commit done in %.1f s", time.monotonic() - write_started)
    return _Changes(distinct, deletes, upserted, deleted)


def _delete_present(
    spark: SparkSession,
    table_path: str,
    props: dict[str, str],
    newest: DataFrame,
    options: dict[str, str],
) -> int:
    """Delete the ids of op=delete rows that the table holds and that are not stale.

    A delete whose ts is older than the stored row's lost to it (event-time order). Each
    delete carries max(stored ts, its ts): under EVENT_TIME_ORDERING an older one could
    lose Hudi's merge.
    """
    from pyspark.sql import functions as F

    deletes = newest.filter(F.col(IS_DELETE)).select(
        RECORD_KEY, F.col(PRECOMBINE_FIELD).alias("d_ts")
    )
    # Counted, then written; its plan reads the table (`materialize`, not persist).
    present = materialize(
        read_snapshot(spark, table_path)
        .join(deletes, RECORD_KEY, "inner")
        .filter(F.col("d_ts") >= F.col(PRECOMBINE_FIELD))
        .withColumn(PRECOMBINE_FIELD, F.greatest(F.col(PRECOMBINE_FIELD), F.col("d_ts")))
        .select(*COLUMN_NAMES)
    )
    deleted = present.count()
    if deleted:
        logger.info("deleting %d ids from %s", deleted, table_path)
        write(present, table_path, props, "delete", options)
    return deleted


def _changed_rows(
    spark: SparkSession, table_path: str, incoming: DataFrame, first_load: bool, rows: int
) -> DataFrame:
    """The rows that would change what the table shows; the rest are left out.

    Left out: rows whose stored version is newer (Hudi would keep the stored one anyway),
    and rows whose content is already stored with the same ts, or with any ts when the
    incoming row had none (its ts is only the ingestion time).

    Args:
        rows: how many rows `incoming` holds (one per id).
    """
    from pyspark.sql import functions as F

    if first_load:
        return _table_rows(incoming.select(*_without_signals(incoming)))
    snapshot = read_snapshot(spark, table_path)
    if rows <= _BROADCAST_IDS_MAX:
        # A left join would shuffle every stored row (the whole table, for a 1% batch);
        # the stored rows of the batch's ids are found first with the ids broadcast.
        ids = F.broadcast(incoming.select(RECORD_KEY))
        snapshot = snapshot.join(ids, RECORD_KEY, "left_semi")
    stored = snapshot.select(
        F.col(RECORD_KEY),
        *(
            F.col(c).alias(f"stored_{c}")
            for c in (PRECOMBINE_FIELD, *_CONTENT_COLUMNS, *SIGNAL_COLUMNS)
        ),
    )
    joined = incoming.join(stored, RECORD_KEY, "left")
    # The shop's signals stay as stored (null for a new product), whatever the file said.
    joined = joined.select(
        *(c for c in joined.columns if c not in SIGNAL_COLUMNS),
        *(F.col(f"stored_{c}").alias(c) for c in SIGNAL_COLUMNS),
    )
    same_content = reduce(
        lambda a, b: a & b, (F.col(c).eqNullSafe(F.col(f"stored_{c}")) for c in _CONTENT_COLUMNS)
    )
    ts, stored_ts = F.col(PRECOMBINE_FIELD), F.col(f"stored_{PRECOMBINE_FIELD}")
    is_new = stored_ts.isNull()
    not_older = ts >= stored_ts
    already_stored = same_content & (F.col(TS_DEFAULTED) | (ts == stored_ts))
    return _table_rows(joined.filter(is_new | (not_older & ~already_stored)))


def _without_signals(df: DataFrame) -> list[Any]:
    """`df`'s columns with the signal columns null (a file cannot set them)."""
    from pyspark.sql import functions as F

    return [F.lit(None).alias(c) if c in SIGNAL_COLUMNS else F.col(c) for c in df.columns]


def _table_rows(df: DataFrame) -> DataFrame:
    """The table's columns, typed as the one product schema says (app.core.catalog)."""
    from pyspark.sql import functions as F

    return df.select(*(F.col(f.name).cast(f.dataType).alias(f.name) for f in spark_schema()))


def write_quarantine(
    rejects: DataFrame, count: int, path: str | None, table_path: str = ""
) -> str | None:
    """Rejected rows as JSON (`source`, `reasons`, `row`) in one part file under `path`.

    Written by Spark, so `path` may be on any Hadoop filesystem; an existing folder is
    replaced (a rerun of the same inputs rewrites the same rejects, it does not add them).
    Without `path`, a timestamped folder under table.default_quarantine.
    """
    if path is None:
        if not count:
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        base = default_quarantine(table_path, get_settings().quarantine_dir)
        path = f"{base.rstrip('/')}/quarantine-{stamp}"
    out = rejects.select(
        rejects[SOURCE].alias("source"),
        rejects[REASONS].alias("reasons"),
        rejects[ROW].alias("row"),
    )
    # One small file per run: rejects are few, and a person reads them.
    out.coalesce(1).write.mode("overwrite").json(path)
    if count:
        logger.warning("%d rows quarantined to %s", count, path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.upsert_products", description=__doc__)
    parser.add_argument("--table-path", default=None, help="default: HUDI_TABLE_PATH")
    parser.add_argument("--input", nargs="+", required=True, metavar="FILE_OR_DIR")
    parser.add_argument("--format", choices=FORMATS, default=None, help="default: by extension")
    parser.add_argument("--quarantine", default=None, metavar="DIR")
    parser.add_argument(
        "--hoodie-conf",
        action="append",
        metavar="KEY=VALUE",
        help="Hudi write option overriding the job's (repeatable)",
    )
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        from spark_jobs.session import get_spark

        path = args.table_path or get_settings().hudi_table_path
        # Inputs are checked before the JVM starts: a typo fails in a second, not ten.
        discover(args.input, args.format)
        conf = parse_hoodie_conf(args.hoodie_conf)
        spark = get_spark()
        result = upsert_files(spark, path, args.input, args.format, args.quarantine, conf)
        print(f"read {result.read}")
        print(f"upserted {result.upserted}")
        print(f"quarantined {result.quarantined}")
        print(f"duplicates {result.duplicates}")
        print(f"unchanged {result.unchanged}")
        print(f"deleted {result.deleted}")
        if result.quarantine_path and result.quarantined:
            print(f"quarantine_file {result.quarantine_path}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
