"""Facts about a Hudi table at a path, read through Hadoop's FileSystem (local, s3a, ...),
and the datasource options every write uses."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

from app.core.catalog import PRECOMBINE_FIELD, RECORD_KEY
from spark_jobs.errors import JobError, TableNotFoundError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)

TableType = Literal["COPY_ON_WRITE", "MERGE_ON_READ"]
WriteOperation = Literal["upsert", "bulk_insert", "delete"]


def _hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    jvm: Any = spark._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath, hpath.getFileSystem(spark._jsc.hadoopConfiguration())


def read_table_properties(spark: SparkSession, table_path: str) -> dict[str, str] | None:
    """`.hoodie/hoodie.properties` as a dict, or None when no table exists at the path."""
    hpath, fs = _hadoop_path(spark, f"{table_path.rstrip('/')}/.hoodie/hoodie.properties")
    if not fs.exists(hpath):
        return None
    jvm: Any = spark._jvm
    props = jvm.java.util.Properties()
    stream = fs.open(hpath)
    try:
        props.load(stream)
    finally:
        stream.close()
    return {str(k): str(props.getProperty(k)) for k in props.stringPropertyNames()}


def require_table(spark: SparkSession, table_path: str) -> dict[str, str]:
    """The table's properties; raises TableNotFoundError when there is no table."""
    props = read_table_properties(spark, table_path)
    if props is None:
        raise TableNotFoundError(
            f"no Hudi table at {table_path} (create it with python -m spark_jobs.create_table)"
        )
    return props


def has_completed_writes(spark: SparkSession, table_path: str) -> bool:
    """Whether any write completed.

    Hudi 1.x names completed instants `<requested>_<completed>.<action>` in .hoodie/timeline.
    """
    hpath, fs = _hadoop_path(spark, f"{table_path.rstrip('/')}/.hoodie/timeline")
    if not fs.exists(hpath):
        return False
    for status in fs.listStatus(hpath):
        name = str(status.getPath().getName())
        stem, _, action = name.partition(".")
        if "_" in stem and action in ("commit", "deltacommit", "replacecommit"):
            return True
    return False


def write_options(
    props: dict[str, str], operation: WriteOperation, overrides: dict[str, str] | None = None
) -> dict[str, str]:
    """Datasource options for a write that agrees with the table's own config.

    Shuffle parallelism is left to Hudi, which sizes it from the input's partitions (and
    so from Spark's defaults); `overrides` (the jobs' `--hoodie-conf KEY=VALUE`) win over
    everything here, e.g. `hoodie.upsert.shuffle.parallelism=400` or an index type.
    """
    options = {
        # Hudi refuses a write whose table name differs from hoodie.properties.
        "hoodie.table.name": props["hoodie.table.name"],
        "hoodie.datasource.write.table.type": props.get("hoodie.table.type", "COPY_ON_WRITE"),
        "hoodie.datasource.write.operation": operation,
        "hoodie.datasource.write.recordkey.field": RECORD_KEY,
        "hoodie.datasource.write.precombine.field": PRECOMBINE_FIELD,
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": (
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
        ),
    }
    return {**options, **(overrides or {})}


def parse_hoodie_conf(items: list[str] | None) -> dict[str, str]:
    """`KEY=VALUE` strings (the CLIs' repeated `--hoodie-conf`) as a dict."""
    conf: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise JobError(f"--hoodie-conf wants KEY=VALUE, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf


def read_snapshot(spark: SparkSession, table_path: str) -> DataFrame:
    """The table's current rows with the product columns only.

    Data skipping is off: the jobs read every row anyway (a diff or a join by id), and
    Hudi's column-stats lookup persists and unpersists a Dataset while planning, which
    deadlocks against a cached DataFrame being built in the same query (seen with Hudi
    1.1.1 on Spark 3.5: `CachedRDDBuilder` lock held by AQE, the broadcast thread in
    `CacheManager.uncacheQuery`).
    """
    return product_columns(
        spark.read.format("hudi").option("hoodie.enable.data.skipping", "false").load(table_path)
    )


def product_columns(df: DataFrame) -> DataFrame:
    """`df`'s product columns in table order; a column the table predates (the shop's
    signals, added later) reads as null, as hudi-rs reads it for the sync."""
    from pyspark.sql import functions as F

    from app.core.catalog import spark_schema

    return df.select(
        *(
            F.col(f.name) if f.name in df.columns else F.lit(None).cast(f.dataType).alias(f.name)
            for f in spark_schema().fields
        )
    )


def materialize(df: DataFrame) -> DataFrame:
    """`df` computed once and kept as files in the session's checkpoint folder.

    For rows an action reads more than once (a count, then a write). Not `persist()`:
    counting a persisted frame holds its cache entry's lock while Hudi plans a read, and a
    Hudi planning step that unpersists waits on every entry's lock (a deadlock,
    docs/troubleshooting.md). Not `localCheckpoint()`: its blocks live on the executors and
    go with one. An eager reliable checkpoint computes the plan once, in the job that
    writes the files: into the session's checkpoint folder, or SPARK_CHECKPOINT_DIR when
    none is set (Spark makes a folder per application in it).
    """
    context = df.sparkSession.sparkContext
    if context.getCheckpointDir() is None:
        from app.core.config import get_settings

        context.setCheckpointDir(get_settings().spark_checkpoint_dir)
    return df.checkpoint(eager=True)


def write(
    df: DataFrame,
    table_path: str,
    props: dict[str, str],
    operation: WriteOperation,
    overrides: dict[str, str] | None = None,
) -> None:
    """One Hudi commit. A failure leaves an inflight instant that the next writer rolls back."""
    options = write_options(props, operation, overrides)
    df.write.format("hudi").options(**options).mode("append").save(table_path)


def default_quarantine(table_path: str, quarantine_dir: str) -> str:
    """Where a job's rejects go without `--quarantine`.

    QUARANTINE_DIR (`quarantine_dir`) for a local table, or when it is itself a URI. Beside
    a table on object storage otherwise (`<table>_quarantine`): Spark's executors write
    the rejects, and on a cluster they cannot write the driver's disk.
    """
    if "://" in quarantine_dir or "://" not in table_path or table_path.startswith("file:"):
        return quarantine_dir
    return f"{table_path.rstrip('/')}_quarantine"


def normalize_table_path(table_path: str) -> str:
    """Local paths made absolute (Hudi and hudi-rs both want that); URIs kept as they are."""
    if "://" in table_path:
        return table_path.rstrip("/")
    from pathlib import Path

    return str(Path(table_path).expanduser().resolve())
