"""The `interactions` Hudi table: what shoppers were shown and did, one row per event.

Record key `event_id` (the impression's recommendation_id, the client's namespaced id, or
one the service assigned), precombine `ts`, partitioned by `day` (UTC, `yyyy-MM-dd`,
hive style) so retention drops whole partitions. Columns: app/events/records.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.events.records import COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

TABLE_NAME = "interactions"
RECORD_KEY = "event_id"
PRECOMBINE_FIELD = "ts"
PARTITION_FIELD = "day"


def event_schema() -> StructType:
    """The segments' JSON lines as Spark reads them (every column nullable)."""
    from pyspark.sql.types import (
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    types = {"STRING": StringType(), "BIGINT": LongType(), "INT": IntegerType()}
    return StructType([StructField(name, types[t]) for name, t in COLUMNS])


def utc_day(ts_millis: Column) -> Column:
    """`yyyy-MM-dd` of an epoch-millis column in UTC, whatever the session's time zone."""
    from pyspark.sql import functions as F

    days = F.floor(ts_millis / 86_400_000).cast("int")
    return F.date_format(F.date_add(F.lit("1970-01-01").cast("date"), days), "yyyy-MM-dd")


def write_options(operation: str, overrides: dict[str, str] | None = None) -> dict[str, str]:
    """Datasource options of every write to the interactions table (the first creates it)."""
    options = {
        "hoodie.table.name": TABLE_NAME,
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.operation": operation,
        "hoodie.datasource.write.recordkey.field": RECORD_KEY,
        "hoodie.datasource.write.precombine.field": PRECOMBINE_FIELD,
        "hoodie.datasource.write.partitionpath.field": PARTITION_FIELD,
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.table.timeline.timezone": "UTC",
    }
    return {**options, **(overrides or {})}


def write(df: DataFrame, table_path: str, operation: str = "upsert") -> None:
    """One Hudi commit; a failed one is rolled back by the next writer."""
    df.write.format("hudi").options(**write_options(operation)).mode("append").save(table_path)
