"""Facts about a Hudi table at a path, read through Hadoop's FileSystem (local, s3a, ...),
and the datasource options every write uses."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

from app.core.catalog import COLUMN_NAMES, PRECOMBINE_FIELD, RECORD_KEY
from spark_jobs.errors import TableNotFoundError

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


def write_options(props: dict[str, str], operation: WriteOperation) -> dict[str, str]:
    """Datasource options for a write that agrees with the table's own config."""
    return {
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
        # Sized for a 2-core box; a cluster run can override through spark-submit --conf.
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
        "hoodie.delete.shuffle.parallelism": "2",
        "hoodie.bulkinsert.shuffle.parallelism": "2",
    }


def read_snapshot(spark: SparkSession, table_path: str) -> DataFrame:
    """The table's current rows with the product columns only."""
    return spark.read.format("hudi").load(table_path).select(*COLUMN_NAMES)


def write(df: DataFrame, table_path: str, props: dict[str, str], operation: WriteOperation) -> None:
    """One Hudi commit. A failure leaves an inflight instant that the next writer rolls back."""
    df.write.format("hudi").options(**write_options(props, operation)).mode("append").save(
        table_path
    )


def normalize_table_path(table_path: str) -> str:
    """Local paths made absolute (Hudi and hudi-rs both want that); URIs kept as they are."""
    if "://" in table_path:
        return table_path.rstrip("/")
    from pathlib import Path

    return str(Path(table_path).expanduser().resolve())
