"""Spark writes the sync must survive, beyond spark_jobs' own: an aged timeline and every
way a row can leave the table.

- `AGED` makes Spark archive and clean after a few commits (Hudi 1.1.1 names), so a dozen
  commits give a table that looks like days of hourly jobs: its first instants moved from
  `.hoodie/timeline/` to the LSM archive in `.hoodie/timeline/history/`, old file slices
  cleaned, and (MOR) log files compacted inline into new base files.
- The delete paths are the ones a shop's jobs really use: Spark SQL `DELETE FROM`,
  `MERGE INTO ... WHEN MATCHED THEN DELETE`, an upsert batch with Hudi's
  `_hoodie_is_deleted` marker, and `INSERT OVERWRITE` (plus spark_jobs' delete_ids).
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.core.catalog import COLUMN_NAMES, PRODUCT_COLUMNS
from spark_jobs.table import require_table, write_options

AGED = {
    "hoodie.keep.min.commits": "3",
    "hoodie.keep.max.commits": "4",
    "hoodie.cleaner.commits.retained": "2",
}
# MOR only (a COW write refuses them): compact inline every 2 delta commits, so base files
# are rewritten as the table ages.
AGED_MOR = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"}
DELETE_MARKER = "_hoodie_is_deleted"
_names = itertools.count()


def _ddl(extra: str = "") -> str:
    return ", ".join(f"{c} {t}" for c, t in PRODUCT_COLUMNS) + extra


def write_rows(
    spark: Any,
    path: str,
    rows: list[dict[str, Any]],
    *,
    deleted: frozenset[int] = frozenset(),
    conf: dict[str, str] | None = None,
) -> None:
    """One upsert commit with the AGED settings (`conf` wins over them). Rows whose id is
    in `deleted` carry `_hoodie_is_deleted = true` (the batch then has the marker column
    for every row)."""
    props = require_table(spark, path)
    opts = {**write_options(props, "upsert"), **AGED}
    if props.get("hoodie.table.type") == "MERGE_ON_READ":
        opts.update(AGED_MOR)
    opts.update(conf or {})
    if deleted:
        values = [(*(r.get(c) for c in COLUMN_NAMES), r["id"] in deleted) for r in rows]
        df = spark.createDataFrame(values, _ddl(f", {DELETE_MARKER} BOOLEAN"))
    else:
        df = spark.createDataFrame([tuple(r.get(c) for c in COLUMN_NAMES) for r in rows], _ddl())
    df.write.format("hudi").options(**opts).mode("append").save(path)


def datasource_delete(spark: Any, path: str, pid: int) -> None:
    """What `delete_products` commits (a datasource `delete`, operationType DELETE), with
    the doomed row selected from the table itself, so no Python-side rows are involved."""
    from pyspark.sql import functions as F

    props = require_table(spark, path)
    doomed = spark.read.format("hudi").load(path).where(F.col("id") == pid)
    opts = {**write_options(props, "delete"), **AGED}
    doomed.select(*(c for c in COLUMN_NAMES if c in doomed.columns)).write.format("hudi").options(
        **opts
    ).mode("append").save(path)


@contextlib.contextmanager
def sql_table(spark: Any, path: str) -> Iterator[str]:
    """The table at `path` under a fresh catalog name, for Spark SQL; dropped after
    (external: DROP keeps the files)."""
    name = f"aged_{int(time.time())}_{next(_names)}"
    spark.sql(f"CREATE TABLE {name} USING hudi LOCATION '{path}'")
    try:
        yield name
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def sql_delete(spark: Any, path: str, pid: int) -> None:
    with sql_table(spark, path) as t:
        spark.sql(f"DELETE FROM {t} WHERE id = {pid}")


def merge_delete(spark: Any, path: str, pid: int) -> None:
    with sql_table(spark, path) as t:
        spark.sql(
            f"MERGE INTO {t} AS target USING (SELECT {pid} AS id, {time.time_ns() // 10**6} AS ts)"
            " AS source ON target.id = source.id WHEN MATCHED THEN DELETE"
        )


def marker_delete(spark: Any, path: str, pid: int, edit: dict[str, Any]) -> None:
    """A mixed batch: `edit` is upserted and `pid` deleted by the marker, in one commit."""
    doomed = spark_rows(spark, path, [pid])[0]
    doomed["ts"] = time.time_ns() // 10**6
    write_rows(spark, path, [edit, doomed], deleted=frozenset({pid}))


def insert_overwrite_without(spark: Any, path: str, pid: int) -> None:
    """INSERT OVERWRITE the whole table with every row but `pid` (a replacecommit)."""
    keep = [r for r in spark_rows(spark, path) if r["id"] != pid]
    view = f"keep_{next(_names)}"
    spark.createDataFrame(
        [tuple(r[c] for c in COLUMN_NAMES) for r in keep], _ddl()
    ).createOrReplaceTempView(view)
    with sql_table(spark, path) as t:
        # After a marker write the table also has `_hoodie_is_deleted`: kept rows are false.
        wanted = [c for c in spark.table(t).columns if c in COLUMN_NAMES or c == DELETE_MARKER]
        select = ", ".join(c if c in COLUMN_NAMES else f"false AS {c}" for c in wanted)
        spark.sql(f"INSERT OVERWRITE {t} SELECT {select} FROM {view}")


def spark_rows(spark: Any, path: str, ids: list[int] | None = None) -> list[dict[str, Any]]:
    df = spark.read.format("hudi").load(path)
    # Tables made before the signal columns (the checked-in fixtures) lack them.
    df = df.select(*(c for c in COLUMN_NAMES if c in df.columns))
    if ids is not None:
        df = df.where(df.id.isin(ids))
    return [r.asDict() for r in df.orderBy("id").collect()]


def spark_ids(spark: Any, path: str) -> set[int]:
    """Spark SQL's view of the snapshot: the reference every mirror is compared with."""
    return {int(r["id"]) for r in spark.read.format("hudi").load(path).select("id").collect()}


def active_instants(path: str) -> list[str]:
    """Requested times of completed writes on the active timeline."""
    timeline = Path(path) / ".hoodie" / "timeline"
    return sorted(
        p.name.split("_")[0]
        for p in timeline.iterdir()
        if p.is_file() and "_" in p.name.split(".")[0] and p.suffix[1:] in WRITE_ACTIONS
    )


def archived_files(path: str) -> list[Path]:
    """Files of the LSM archived timeline (Hudi 1.x: `.hoodie/timeline/history/`)."""
    history = Path(path) / ".hoodie" / "timeline" / "history"
    return sorted(p for p in history.rglob("*") if p.is_file()) if history.exists() else []


WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")
