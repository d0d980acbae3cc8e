"""The Spark embed job against the sync's own embedding, measured in one run.

    flock /tmp/bench.lock .venv/bin/python bench/spark_embed.py [--products 5000 100000]
        [--until HH:MM] [--seed 7]

Sizes run in order in one Spark session; with `--until` (UTC), a size whose run would not
end by then (scaled from the last run's time per product) is cut to the largest round size
that would, so one turn of the bench lock gives an estimate and then the biggest figure.

Prints, all from this run on this machine (Spark local[2], SPARK_MASTER):
  1. the sync's encoder alone on a sample of the chunk texts (chunks/s, before and after);
  2. a bootstrap without vectors (the sync embeds every chunk): its chunks/s and time;
  3. `spark_jobs.embed` over the same table (read, chunk, embed, write): chunks/s, and
     ratio job ÷ the sync's bootstrap (target >= 0.9) and ÷ the bare encoder
     also per CPU-second (the job's JVM and Python workers against the encoder's process),
     which other load on the machine moves far less than wall time;
  4. a bootstrap into an empty store with every vector in the vectors table: what it
     embedded (target 0), its time, and ratio with ÷ without;
  5. cosine of the job's vectors to the sync's own for the sample, and the sync's own
     spread: the same texts embedded in two different batchings (int8 quantizes per batch).
The table is written by real Spark (Hudi COW); the stores are the default embedded
qdrant-edge engine; everything lives in a temporary folder.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.catalog import Product
from app.core.config import Settings
from app.core.logging import configure_logging
from app.embedding import embedder_for
from app.store import open_store
from app.sync.chunk_vectors import ChunkVectorSource
from app.sync.chunking import ProductChunker
from app.sync.engine import SyncEngine
from app.sync.state import CycleReport
from spark_jobs.create_table import create_table
from spark_jobs.embed import config_from, embed_table
from spark_jobs.generate_products import generate
from spark_jobs.session import get_spark
from spark_jobs.upsert_products import upsert_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger("bench.spark_embed")


def bootstrap(settings: Settings, label: str) -> tuple[CycleReport, float]:
    embedder = embedder_for(settings)
    store = open_store(settings)
    try:
        engine = SyncEngine(settings, store, embedder)
        t0 = time.perf_counter()
        report = engine.run_cycle()
        seconds = time.perf_counter() - t0
    finally:
        store.close()
    logger.info(
        "%s: embedded %d, loaded %d in %.1fs", label, report.embedded, report.loaded, seconds
    )
    return report, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--products", type=int, nargs="+", default=[100_000])
    parser.add_argument("--until", default=None, metavar="HH:MM", help="UTC end of the turn")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sample", type=int, default=4_000, help="chunks for the raw rate")
    parser.add_argument(
        "--seconds-per-product", type=float, default=0.0, help="a prior run's, for --until"
    )
    args = parser.parse_args()
    configure_logging("INFO")
    spark = get_spark(Settings(), app_name="bench-spark-embed")
    deadline = _deadline(args.until)
    per_product = args.seconds_per_product
    for size in args.products:
        if deadline is not None and per_product:
            fits = int((deadline - time.time()) / per_product) // 10_000 * 10_000
            if fits < size:
                logger.info("%d products would not end by %s: %d instead", size, args.until, fits)
                size = fits
            if size <= 0:
                break
        t0 = time.time()
        run(spark, size, args.seed, args.sample)
        per_product = (time.time() - t0) / size
    spark.stop()


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _jvm_pid(spark: SparkSession) -> int:
    # The JVM (spark-submit's shell and the java under it) that this driver launched.
    gateway: Any = spark.sparkContext._gateway
    return int(gateway.proc.pid)


def _tree_cpu(root: int) -> float:
    """CPU seconds of `root` and every process under it, live or reaped (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        pid = int(name)
        children.setdefault(int(fields[1]), []).append(pid)
        # utime, stime, and the same for children it waited for (exited Python workers).
        cpu[pid] = sum(int(f) for f in fields[11:15]) / tick
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack.extend(children.get(pid, []))
    return total


def _deadline(until: str | None) -> float | None:
    if until is None:
        return None
    hour, minute = (int(v) for v in until.split(":"))
    now = datetime.now(UTC)
    return now.replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()


def run(spark: SparkSession, products: int, seed: int, sample_size: int) -> None:
    loads = [os.getloadavg()[0]]
    work = Path(tempfile.mkdtemp(prefix="bench-spark-embed-"))
    table = str(work / "products")
    base = Settings(hudi_table_path=table)
    rows = list(generate(products, seed))
    logger.info("writing %d products with Spark", len(rows))
    create_table(spark, table)
    upsert_rows(spark, table, rows)

    embedder = embedder_for(base)
    chunker = ProductChunker(
        embedder.tokenizer(),
        embedder.model_id,
        min(base.max_chunk_tokens, embedder.max_seq_tokens),
        base.chunk_overlap_tokens,
    )
    sample: dict[str, str] = {}
    for r in random.Random(seed).sample(rows, min(len(rows), sample_size)):
        for c in chunker.chunk(Product.from_row(r)):
            sample[c.chunk_hash] = c.text
    keys = sorted(sample)[:sample_size]
    texts = [sample[k] for k in keys]
    embedder.embed(texts[:64])  # warm-up

    def raw_rate() -> tuple[float, float]:
        """Chunks per second and per CPU-second of this process (the encoder's threads)."""
        t0, c0 = time.perf_counter(), _self_cpu()
        embedder.embed(texts)
        return len(texts) / (time.perf_counter() - t0), len(texts) / (_self_cpu() - c0)

    (raw_before, cpu_before) = raw_rate()
    without, without_s = bootstrap(
        base.model_copy(
            update={
                "qdrant_path": str(work / "q-without"),
                "vectors_table_path": str(work / "none"),
            }
        ),
        "bootstrap without vectors",
    )
    loads.append(os.getloadavg()[0])
    jvm = _jvm_pid(spark)
    job_cpu = _tree_cpu(jvm) + _self_cpu()
    job = embed_table(spark, table, config_from(base))
    job_cpu = _tree_cpu(jvm) + _self_cpu() - job_cpu
    loads.append(os.getloadavg()[0])
    (raw_after, cpu_after) = raw_rate()
    with_, with_s = bootstrap(
        base.model_copy(update={"qdrant_path": str(work / "q-with")}), "bootstrap with vectors"
    )
    loads.append(os.getloadavg()[0])

    # 5. The job's vectors against the sync's, and the sync against itself.
    source = ChunkVectorSource(base, embedder.dim)
    source.start_cycle()
    found = source.lookup(keys)
    own = embedder.embed(texts)
    shuffled = list(range(len(texts)))
    random.Random(1).shuffle(shuffled)
    again = np.empty_like(own)
    for start in range(0, len(shuffled), 100):
        part = shuffled[start : start + 100]
        again[part] = embedder.embed([texts[i] for i in part])
    job_cos = np.sum(np.stack([found[k] for k in keys]) * own, axis=1)
    self_cos = np.sum(again * own, axis=1)

    raw = (raw_before + raw_after) / 2
    per_cpu = (cpu_before + cpu_after) / 2
    job_per_cpu = job.embedded / job_cpu
    boot_rate = without.embedded / without_s
    print(
        f"products                          {len(rows)}  ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)"
    )
    print(f"encoder                           {embedder.encoder} ({embedder.model_id})")
    print(f"load average (1 min) start/after sync/after job/end  {loads}")
    print(
        f"sync encoder alone                {raw:8.1f} chunks/s  ({len(texts)} chunks; "
        f"before {raw_before:.1f}, after {raw_after:.1f})"
    )
    print(
        f"bootstrap without vectors         {boot_rate:8.1f} chunks/s  "
        f"({without.embedded} embedded, {without_s:.1f} s)"
    )
    print(
        f"spark_jobs.embed, local[2]        {job.chunks_per_second:8.1f} chunks/s  "
        f"({job.embedded} embedded, {job.seconds:.1f} s; chunk + embed {job.embed_seconds:.1f} s)"
    )
    # The target compares the same work end to end (read, chunk, embed, write); the bare
    # encoder does only the embedding, so it bounds the job from above.
    end_to_end = job.chunks_per_second / boot_rate
    print(f"  ratio job / sync bootstrap      {end_to_end:8.3f}   (target >= 0.9)")
    print(f"  ratio job / sync encoder        {job.chunks_per_second / raw:8.3f}")
    print(
        f"per CPU-second: encoder {per_cpu:.1f} (before {cpu_before:.1f}, after "
        f"{cpu_after:.1f}), job {job_per_cpu:.1f} chunks ({job_cpu:.0f} CPU-s)"
    )
    print(f"  ratio job / sync encoder by CPU {job_per_cpu / per_cpu:8.3f}")
    print(
        f"bootstrap with vectors            {with_s:8.1f} s  "
        f"(embedded {with_.embedded}, target 0; loaded {with_.loaded})"
    )
    print(f"  ratio with / without            {with_s / without_s:8.3f}")
    print(
        f"cosine job vs sync, min / mean    {job_cos.min():8.5f} / {job_cos.mean():.5f}  "
        f"(sync vs itself rebatched: {self_cos.min():.5f} / {self_cos.mean():.5f})"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
