"""Shoppers' signals per product, from the interactions table into the products table.

    python -m spark_jobs.product_signals --interactions T [--table-path P]
        [--half-life-days D] [--prior-impressions K]

For every product: impressions, clicks, add-to-carts and purchases, each event weighted by
0.5 ** (age / half-life), and a smoothed click-through rate
`(clicked answers + K * shop_ctr) / (impressions + K)` (a product seen a few times sits
near the shop's average instead of at 0 or 1; an answer clicked twice counts once).
Written into the products table as a partial update: only the signal columns change;
each row keeps its stored `ts` and seller columns, so a seller's edit committed meanwhile
wins over this job (the newer `ts`), never the reverse.
Products that had signals and have none now are set to 0; products never interacted with
stay null; ids no longer in the table are ignored (a signal never resurrects a product).
The sync mirrors the new values as payload: no chunk changes, nothing is embedded.
Prints `products N` (rows updated).
"""

from __future__ import annotations

import argparse
import logging
import time
from functools import reduce
from typing import TYPE_CHECKING

from app.core.catalog import COLUMN_NAMES, RECORD_KEY, SIGNAL_COLUMNS
from app.core.config import get_settings
from spark_jobs import cli
from spark_jobs.table import normalize_table_path, require_table, write

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)

SIGNAL_DIGITS = 6
_EVENT_COLUMNS = {"click": "clicks", "add_to_cart": "add_to_carts", "purchase": "purchases"}


def decayed_signals(
    interactions: DataFrame, now_ms: int, half_life_days: float, prior_impressions: float
) -> DataFrame:
    """`id` and the five signal columns, for every product with at least one event."""
    from pyspark.sql import functions as F

    half_life_ms = half_life_days * 86_400_000
    weight = F.pow(F.lit(0.5), (F.lit(now_ms) - F.col("ts")) / F.lit(half_life_ms))
    shown = (
        interactions.filter(F.col("type") == "impression")
        .select(
            weight.alias("w"),
            F.explode(F.from_json("products", "array<struct<id:bigint>>")).alias("p"),
        )
        .groupBy(F.col("p.id").alias(RECORD_KEY))
        .agg(F.sum("w").alias("impressions"))
    )
    acted = (
        interactions.filter(F.col("type").isin(*_EVENT_COLUMNS) & F.col("product_id").isNotNull())
        .groupBy(F.col("product_id").alias(RECORD_KEY))
        .pivot("type", list(_EVENT_COLUMNS))
        .agg(F.sum(weight))
        .withColumnsRenamed(_EVENT_COLUMNS)
    )
    # A click-through is an answer whose product was clicked: repeated clicks on one
    # product of one answer count once, and clicks naming no answer are not through-clicks.
    through = (
        interactions.filter(
            (F.col("type") == "click")
            & F.col("product_id").isNotNull()
            & F.col("recommendation_id").isNotNull()
        )
        .groupBy("recommendation_id", "product_id")
        .agg(F.max("ts").alias("ts"))
        .groupBy(F.col("product_id").alias(RECORD_KEY))
        .agg(F.sum(weight).alias("through"))
    )
    signals = (
        shown.join(acted, RECORD_KEY, "full")
        .join(through, RECORD_KEY, "left")
        .na.fill(0.0, ["impressions", "through", *_EVENT_COLUMNS.values()])
    )
    totals = signals.agg(F.sum("through").alias("c"), F.sum("impressions").alias("i")).first()
    clicks, seen = (float(totals["c"] or 0), float(totals["i"] or 0)) if totals else (0.0, 0.0)
    shop_ctr = min(1.0, clicks / seen) if seen > 0 else 0.0
    k = F.lit(prior_impressions)
    ctr = (F.col("through") + k * F.lit(shop_ctr)) / (F.col("impressions") + k)
    return signals.withColumn("ctr", F.least(F.lit(1.0), ctr)).drop("through")


def updated_rows(products: DataFrame, signals: DataFrame) -> DataFrame:
    """Stored rows with their new signal values; only rows whose signals change."""
    from pyspark.sql import functions as F

    stored = products.select(
        *(c for c in products.columns if c not in SIGNAL_COLUMNS),
        *(F.col(c).alias(f"old_{c}") for c in SIGNAL_COLUMNS),
    )
    joined = stored.join(signals, RECORD_KEY, "left")  # inner on the table: no resurrection
    had = reduce(lambda a, b: a | b, (F.col(f"old_{c}").isNotNull() for c in SIGNAL_COLUMNS))
    has = F.col("impressions").isNotNull()
    # Rounded: a value of few digits reads back exactly from every store's JSON payload
    # (qdrant-edge's parser read 1.9999850385978455 one ulp off: a stale mirror).
    new = {
        c: F.round(F.when(has, F.col(c)).otherwise(F.lit(0.0)), SIGNAL_DIGITS).cast("double")
        for c in SIGNAL_COLUMNS
    }
    changed = reduce(
        lambda a, b: a | b, (~new[c].eqNullSafe(F.col(f"old_{c}")) for c in SIGNAL_COLUMNS)
    )
    return joined.filter((has | had) & changed).select(
        *(new[c].alias(c) if c in SIGNAL_COLUMNS else F.col(c) for c in COLUMN_NAMES)
    )


def read_products(spark: SparkSession, table_path: str) -> DataFrame:
    """The products table's rows; a table created before the signal columns gets them null."""
    from pyspark.sql import functions as F

    df = spark.read.format("hudi").option("hoodie.enable.data.skipping", "false").load(table_path)
    missing = [c for c in SIGNAL_COLUMNS if c not in df.columns]
    return df.select(
        *(F.lit(None).cast("double").alias(c) if c in missing else F.col(c) for c in COLUMN_NAMES)
    )


def run_product_signals(
    spark: SparkSession,
    interactions_path: str,
    table_path: str,
    *,
    half_life_days: float = 14.0,
    prior_impressions: float = 20.0,
    now_ms: int | None = None,
) -> int:
    """Compute and write the signals; returns how many product rows were updated."""
    props = require_table(spark, table_path)
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    interactions = spark.read.format("hudi").load(interactions_path)
    signals = decayed_signals(interactions, now, half_life_days, prior_impressions)
    rows = updated_rows(read_products(spark, table_path), signals)
    # Collected ids count the rows and fix the set written (no persist-then-count).
    ids = [r[RECORD_KEY] for r in rows.select(RECORD_KEY).collect()]
    if not ids:
        logger.info("no product's signals changed")
        return 0
    logger.info("writing the signals of %d products into %s", len(ids), table_path)
    write(rows, table_path, props, "upsert")
    return len(ids)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.product_signals", description=__doc__)
    parser.add_argument("--interactions", default=None, help="default: INTERACTIONS_TABLE_PATH")
    parser.add_argument("--table-path", default=None, help="default: HUDI_TABLE_PATH")
    parser.add_argument("--half-life-days", type=float, default=14.0)
    parser.add_argument("--prior-impressions", type=float, default=20.0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        from spark_jobs.session import get_spark

        settings = get_settings()
        spark = get_spark(app_name="product-signals")
        updated = run_product_signals(
            spark,
            normalize_table_path(args.interactions or settings.interactions_table_path),
            normalize_table_path(args.table_path or settings.hudi_table_path),
            half_life_days=args.half_life_days,
            prior_impressions=args.prior_impressions,
        )
        print(f"products {updated}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
