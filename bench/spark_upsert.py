"""Benchmark: upsert N generated products into a fresh Hudi table with the real job.

    .venv/bin/python bench/spark_upsert.py [--count 100000] [--seed 42] [--table-type ...]

Prints the generation time (pure Python, the baseline), the upsert time (read + validate +
Spark/Hudi commit, JVM start excluded) and rows/s. A figure, not a test: compare ratios
measured in one run.
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spark_jobs.create_table import create_table
from spark_jobs.generate_products import generate_file
from spark_jobs.session import get_spark
from spark_jobs.upsert_products import upsert_files

logger = logging.getLogger("bench.spark_upsert")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--table-type", choices=["COPY_ON_WRITE", "MERGE_ON_READ"], default="COPY_ON_WRITE"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    with tempfile.TemporaryDirectory(prefix="bench-upsert-") as tmp:
        source = str(Path(tmp) / "products.jsonl")
        logger.info("generating %d products", args.count)
        generated = generate_file(args.count, args.seed, source)

        started = time.monotonic()
        spark = get_spark(app_name="bench-spark-upsert")
        jvm_seconds = time.monotonic() - started
        table = str(Path(tmp) / "products")
        create_table(spark, table, args.table_type)

        logger.info("upserting into a fresh %s table", args.table_type)
        result = upsert_files(spark, table, [source])
        rerun = upsert_files(spark, table, [source])
        spark.stop()

    print(f"machine {platform.machine()} {platform.system()}, python {platform.python_version()}")
    print(f"rows {result.upserted} (read {result.read}, quarantined {result.quarantined})")
    print(f"generate_seconds {generated.seconds:.2f}")
    print(f"generate_rows_per_s {generated.count / generated.seconds:.0f}")
    print(f"spark_start_seconds {jvm_seconds:.2f}")
    print(f"upsert_seconds {result.seconds:.2f}")
    print(f"upsert_rows_per_s {result.upserted / result.seconds:.0f}")
    print(f"rerun_seconds {rerun.seconds:.2f} (unchanged {rerun.unchanged}, no commit)")
    print(f"upsert_vs_generate {result.seconds / generated.seconds:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
