"""Benchmark: the upsert job against a plain Hudi bulk insert of the same rows.

    flock /tmp/bench.lock .venv/bin/python bench/spark_upsert.py [--counts 100000 1000000] \
        [--table-type COPY_ON_WRITE|MERGE_ON_READ] [--hoodie-conf KEY=VALUE ...]

For each count N (one JVM, one run): generate N products to JSONL; write them into a
fresh table with a plain `df.write.format("hudi")` bulk insert (schema given, no
validation, no de-duplication, no diff) -- the baseline; then run the job
(`upsert_files`) into another fresh table. Prints the job's rows/s as a ratio of the
baseline's (target >= 0.7), and the driver's peak RSS (the Python process and the JVM,
reset before each N), and the JVM's CPU seconds of both paths (a loaded machine stretches
wall time more than CPU time). For the largest N it also upserts a 1% changed batch into the
job's table and prints its time against the first load. A figure, not a test: the
machine is noisy, so read the ratios measured in one run. `--table-type` and
`--hoodie-conf` (the jobs' own options) apply to every table and write of the run, the
baseline's too, e.g. to see what a merge-on-read table or the record-level index does to
the 1% batch.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.catalog import spark_schema
from spark_jobs.create_table import create_table
from spark_jobs.generate_products import generate, generate_file
from spark_jobs.session import get_spark
from spark_jobs.table import TableType, parse_hoodie_conf, require_table, write_options
from spark_jobs.upsert_products import upsert_files

logger = logging.getLogger("bench.spark_upsert")


def _peak_rss_mb(pid: int) -> float:
    """VmHWM (peak resident set) of a process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (the JVM: every Spark thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _reset_peak(pid: int) -> None:
    # Linux: writing 5 to clear_refs resets VmHWM to the current RSS.
    Path(f"/proc/{pid}/clear_refs").write_text("5")


@dataclass(frozen=True, slots=True)
class Tables:
    """How every table of the run is made and written (the jobs' --table-type, --hoodie-conf)."""

    table_type: TableType
    hoodie_conf: dict[str, str]


def _baseline(spark: Any, source: str, table: str, tables: Tables) -> float:
    """Seconds for a plain bulk insert of the file into an existing table (schema, no checks)."""
    props = require_table(spark, table)
    options = write_options(props, "bulk_insert", tables.hoodie_conf)
    started = time.monotonic()
    df = spark.read.schema(spark_schema()).json(source)
    df.write.format("hudi").options(**options).mode("append").save(table)
    return time.monotonic() - started


def _changed_batch(count: int, total: int, seed: int, output: str) -> int:
    """1% of the ids, spread over the table, with a new name and a newer ts."""
    step = max(1, total // count)
    with Path(output).open("w", encoding="utf-8") as f:
        written = 0
        for row in generate(total, seed):
            if (row["id"] - 1) % step == 0 and written < count:
                row = {**row, "name": f"{row['name']} (2027 edition)", "ts": row["ts"] + 10**9}
                f.write(json.dumps(row) + "\n")
                written += 1
    return written


def run_size(
    spark: Any, jvm_pid: int, count: int, seed: int, tmp: Path, last: bool, tables: Tables
) -> None:
    size_started = time.monotonic()
    source = str(tmp / f"products-{count}.jsonl")
    logger.info("N=%d: generating", count)
    generate_file(count, seed, source)
    _reset_peak(os.getpid())
    _reset_peak(jvm_pid)

    logger.info("N=%d: baseline bulk insert", count)
    # Tables are created outside the CPU windows, for the baseline as for the job.
    create_table(spark, str(tmp / f"base-{count}"), tables.table_type)
    cpu = _cpu_seconds(jvm_pid)
    base_seconds = _baseline(spark, source, str(tmp / f"base-{count}"), tables)
    base_cpu = _cpu_seconds(jvm_pid) - cpu
    shutil.rmtree(tmp / f"base-{count}", ignore_errors=True)
    logger.info("N=%d: baseline %.1f s; running the job", count, base_seconds)

    table = str(tmp / f"job-{count}")
    create_table(spark, table, tables.table_type)
    cpu = _cpu_seconds(jvm_pid)
    result = upsert_files(spark, table, [source], hoodie_conf=tables.hoodie_conf)
    job_cpu = _cpu_seconds(jvm_pid) - cpu
    assert result.upserted == count, result
    job_rate, base_rate = count / result.seconds, count / base_seconds
    print(f"N={count} baseline_seconds {base_seconds:.1f} ({base_rate:.0f} rows/s)")
    print(f"N={count} job_seconds {result.seconds:.1f} ({job_rate:.0f} rows/s)")
    print(f"N={count} job_vs_baseline {job_rate / base_rate:.2f}")
    # CPU seconds of the JVM: what a loaded, shared machine disturbs least.
    print(f"N={count} jvm_cpu_seconds baseline {base_cpu:.1f} job {job_cpu:.1f}")
    print(f"N={count} job_vs_baseline_by_cpu {base_cpu / job_cpu:.2f}")
    print(f"N={count} driver_python_peak_rss_mb {_peak_rss_mb(os.getpid()):.0f}")
    print(f"N={count} driver_jvm_peak_rss_mb {_peak_rss_mb(jvm_pid):.0f}")

    if last:
        changes = str(tmp / f"changes-{count}.jsonl")
        changed = _changed_batch(count // 100, count, seed, changes)
        logger.info("N=%d: upserting a %d-row changed batch", count, changed)
        cpu = _cpu_seconds(jvm_pid)
        upsert = upsert_files(spark, table, [changes], hoodie_conf=tables.hoodie_conf)
        print(f"N={count} changed_1pct_jvm_cpu_seconds {_cpu_seconds(jvm_pid) - cpu:.1f}")
        assert upsert.upserted == changed, upsert
        print(f"N={count} changed_1pct_rows {changed} seconds {upsert.seconds:.1f}")
        print(f"N={count} changed_1pct_vs_first_load {upsert.seconds / result.seconds:.2f}")
    shutil.rmtree(table, ignore_errors=True)
    logger.info("N=%d done in %.0f s", count, time.monotonic() - size_started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--counts", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--warmup", type=int, default=20_000, help="rows for a JIT warm-up")
    parser.add_argument("--table-type", choices=get_args(TableType), default="COPY_ON_WRITE")
    parser.add_argument(
        "--hoodie-conf", action="append", metavar="KEY=VALUE", help="Hudi write option (repeatable)"
    )
    args = parser.parse_args()
    tables = Tables(args.table_type, parse_hoodie_conf(args.hoodie_conf))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("py4j").setLevel(logging.WARNING)

    print(f"machine {platform.machine()} {platform.system()}, {os.cpu_count()} cores")
    print(f"table_type {tables.table_type} hoodie_conf {tables.hoodie_conf or 'none'}")
    spark = get_spark(app_name="bench-spark-upsert")
    jvm = spark._jvm
    assert jvm is not None, "no JVM behind the SparkSession"
    jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
    with tempfile.TemporaryDirectory(prefix="bench-upsert-") as tmp:
        # Both paths once, small, so the JIT does not favour whichever runs second.
        warm = str(Path(tmp) / "warm.jsonl")
        generate_file(args.warmup, args.seed, warm)
        create_table(spark, str(Path(tmp) / "warm-base"), tables.table_type)
        _baseline(spark, warm, str(Path(tmp) / "warm-base"), tables)
        create_table(spark, str(Path(tmp) / "warm-job"), tables.table_type)
        upsert_files(spark, str(Path(tmp) / "warm-job"), [warm], hoodie_conf=tables.hoodie_conf)
        counts = sorted(args.counts)
        for count in counts:
            last = count == counts[-1]
            run_size(spark, jvm_pid, count, args.seed, Path(tmp), last, tables)
    spark.stop()
    whole_run = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"python_max_rss_mb_whole_run {whole_run:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
