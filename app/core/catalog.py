"""The product record, defined once: the `Product` dataclass and its fields' metadata.

Everything else is derived from `Product`'s fields, so a new column is one edit here:
the table DDL (`PRODUCT_COLUMNS`), the Spark schema (`spark_schema()`), the input column
names and aliases (`ALIASES`, `REQUIRED_COLUMNS`), the validation rule each column gets
(spark_jobs/validation.py reads `ColumnSpec.rule`), the row -> `Product` mapping
(`Product.from_row`) and the product-level chunk payload (`PAYLOAD_COLUMNS`).
The shop's signal columns (`SIGNAL_COLUMNS`, written by `spark_jobs.product_signals`) are
in the table and the payload but never taken from a product file: an upsert keeps the
stored values.

The table is created with Spark SQL DDL `USING HUDI` (see spark_jobs/create_table.py):
record key `id`, precombine/ordering field `ts` (epoch millis of the change).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

RECORD_KEY = "id"
PRECOMBINE_FIELD = "ts"
TABLE_NAME = "products"
# The zone of the table's instant times: the jobs create tables with UTC, the sync reads it.
TIMELINE_TIMEZONE_KEY = "hoodie.table.timeline.timezone"

SqlType = Literal["BIGINT", "STRING", "DOUBLE"]
# How an incoming value is checked (spark_jobs/validation.py):
# key: a required BIGINT; epoch_millis: optional BIGINT >= 0, missing -> ingestion time;
# text: cleaned text (required or optional); amount: optional finite DOUBLE >= 0.
Rule = Literal["key", "epoch_millis", "text", "amount"]


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    sql_type: SqlType
    rule: Rule
    required: bool = False
    aliases: tuple[str, ...] = ()  # other input column names (normalized) that mean this one
    payload: bool = False  # copied into every chunk's payload (filters, display)
    # What `Product.from_row` stores when the table row holds null.
    missing: Any = None
    # seller: comes from product files (upsert_products, ingest); shop: written only by the
    # shop's own jobs (product_signals), kept as stored whatever a product file says.
    source: Literal["seller", "shop"] = "seller"


def _column(spec: ColumnSpec) -> Any:
    if spec.source == "shop":
        return field(default=None, metadata={"column": spec})
    return field(metadata={"column": spec})


def _signal() -> Any:
    """A shoppers' signal: a time-decayed count (spark_jobs/product_signals.py)."""
    return _column(ColumnSpec("DOUBLE", "amount", payload=True, source="shop"))


@dataclass(frozen=True, slots=True)
class Product:
    id: int = _column(ColumnSpec("BIGINT", "key", True, ("product_id", "productid")))
    ts: int = _column(ColumnSpec("BIGINT", "epoch_millis", aliases=("updated_ts",), missing=0))
    name: str = _column(
        ColumnSpec("STRING", "text", True, ("title", "product_name"), payload=True, missing="")
    )
    description: str = _column(
        ColumnSpec("STRING", "text", aliases=("desc", "details"), missing="")
    )
    category: str | None = _column(
        ColumnSpec("STRING", "text", aliases=("product_category",), payload=True)
    )
    brand: str | None = _column(
        ColumnSpec("STRING", "text", aliases=("manufacturer",), payload=True)
    )
    price: float | None = _column(
        ColumnSpec("DOUBLE", "amount", aliases=("unit_price", "price_usd"), payload=True)
    )
    # What shoppers did with the product, decayed (null until product_signals first ran).
    impressions: float | None = _signal()
    clicks: float | None = _signal()
    add_to_carts: float | None = _signal()
    purchases: float | None = _signal()
    ctr: float | None = _signal()  # smoothed click-through rate

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Product:
        """A table row (Spark, hudi-rs or JSON dict) as a Product; nulls get `missing`."""
        values: dict[str, Any] = {}
        for name, spec in columns_of(cls).items():
            value = row.get(name)
            values[name] = spec.missing if value is None else _PYTHON_TYPE[spec.sql_type](value)
        return cls(**values)


_PYTHON_TYPE: dict[SqlType, Any] = {"BIGINT": int, "STRING": str, "DOUBLE": float}


def columns_of(record: type) -> dict[str, ColumnSpec]:
    """Column name -> spec, in table order, of `Product` (or a record that extends it)."""
    return {f.name: f.metadata["column"] for f in dataclasses.fields(record)}


COLUMNS: dict[str, ColumnSpec] = columns_of(Product)
# (column, Spark SQL type) in table order.
PRODUCT_COLUMNS: tuple[tuple[str, str], ...] = tuple((n, s.sql_type) for n, s in COLUMNS.items())
COLUMN_NAMES: tuple[str, ...] = tuple(COLUMNS)
REQUIRED_COLUMNS: tuple[str, ...] = tuple(n for n, s in COLUMNS.items() if s.required)
PAYLOAD_COLUMNS: tuple[str, ...] = tuple(n for n, s in COLUMNS.items() if s.payload)
# The shop's own columns: never taken from a product file, never part of a seller's diff.
SIGNAL_COLUMNS: tuple[str, ...] = tuple(n for n, s in COLUMNS.items() if s.source == "shop")
# Input column name (normalized, see normalize_column) -> table column.
ALIASES: dict[str, str] = {
    alias: name
    for name, spec in COLUMNS.items()
    if spec.source == "seller"
    for alias in (name, *spec.aliases)
}


def normalize_column(name: str) -> str:
    """How input column names are compared: `Product ID` and `product-id` are `product_id`."""
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def spark_schema(record: type = Product) -> StructType:
    """The table's columns as a Spark schema (the key and required columns not nullable)."""
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    types = {"BIGINT": LongType(), "STRING": StringType(), "DOUBLE": DoubleType()}
    return StructType(
        [
            StructField(name, types[spec.sql_type], nullable=not spec.required)
            for name, spec in columns_of(record).items()
        ]
    )


def payload_fields(product: Product) -> dict[str, Any]:
    """The product-level fields every chunk of the product carries."""
    return {name: getattr(product, name) for name in PAYLOAD_COLUMNS}
