"""The product record as the table stores it; shared by the Spark jobs and the sync.

The table is created with Spark SQL DDL `USING HUDI` (see spark_jobs/create_table.py):
record key `id`, precombine/ordering field `ts` (epoch millis of the change).
"""

from __future__ import annotations

from dataclasses import dataclass

RECORD_KEY = "id"
PRECOMBINE_FIELD = "ts"
TABLE_NAME = "products"

# (column, Spark SQL type) in table order.
PRODUCT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "BIGINT"),
    ("ts", "BIGINT"),
    ("name", "STRING"),
    ("description", "STRING"),
    ("category", "STRING"),
    ("brand", "STRING"),
    ("price", "DOUBLE"),
)
COLUMN_NAMES: tuple[str, ...] = tuple(c for c, _ in PRODUCT_COLUMNS)


@dataclass(frozen=True, slots=True)
class Product:
    id: int
    ts: int
    name: str
    description: str
    category: str | None
    brand: str | None
    price: float | None
