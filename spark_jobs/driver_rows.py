"""Small driver-side data as a DataFrame that starts no Python on the executors.

`spark.createDataFrame(list)` ships the rows as a Python RDD: each executor that reads it
starts a Python worker, which on a cluster needs the job's Python environment there,
though the table jobs otherwise run only the JVM (the Java rules, Hudi). One JSON literal
parsed by the JVM needs none (tests/e2e/test_spark_cluster.py runs those jobs with the
executors' Python pointed at nothing).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def rows_frame(spark: SparkSession, rows: list[dict[str, Any]], fields: str) -> DataFrame:
    """`rows` as a DataFrame of `fields` (struct field DDL: `"id: bigint, name: string"`)."""
    from pyspark.sql import functions as F

    schema = f"array<struct<{fields}>>"
    return spark.range(1).select(F.inline(F.from_json(F.lit(json.dumps(rows)), schema)))
