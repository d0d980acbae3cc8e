"""Sync throughput against sentence-transformers' own speed, measured in one run.

    flock /tmp/bench.lock .venv/bin/python bench/sync.py [--products 10000] [--seed 7]
    flock /tmp/bench.lock .venv/bin/python bench/sync.py --dataset DIR

With --dataset (a folder holding a real catalog's products.jsonl, e.g. CrowdFlower's dev
set): Spark upserts that file into a Hudi table, the sync bootstraps it into the default
embedded store, and sentence-transformers' torch fp32 embeds the very chunk texts the
bootstrap embedded (half of them before the bootstrap, half after, so a drift in load
shows as a gap); prints bootstrap chunks/s ÷ torch chunks/s (issue 34: >= 2.0) and the
cosine of the sync's vectors to torch's. Whole process, one run, progress with an ETA.

Without it, on N generated products:

Prints, all from this run on this machine:
  1. raw embedding throughput (chunks/s) on a sample of the same chunk texts, of
     sentence-transformers torch fp32 (the baseline) and of the encoder the sync uses
     (EMBEDDING_ENCODER, default auto), with the cosine between their vectors;
  2. bootstrap sync throughput (chunks/s: read + chunk + embed + upsert + checkpoint) and
     its ratio to the torch baseline    target >= 2.0 (issue 11), and to its own encoder
  3. an incremental cycle after editing 1% of the products, as a fraction of the
     bootstrap's time               target <= 0.03
  4. embeddings spent on a price-only update of 1,000 products     target 0
The table is written by real Spark (Hudi COW) and the index is the default embedded
qdrant-edge store, both in a temporary folder.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import Settings
from app.core.logging import configure_logging
from app.embedding import Embedder, embedder_for, load_embedder
from app.store import open_store
from app.sync.engine import SyncEngine
from spark_jobs.create_table import create_table
from spark_jobs.generate_products import generate
from spark_jobs.session import get_spark
from spark_jobs.upsert_products import upsert_rows

logger = logging.getLogger("bench.sync")


def sync_and_torch(settings: Settings) -> tuple[Embedder, Embedder, SyncEngine]:
    """The sync's own encoder, torch fp32 (the baseline) and a sync engine on the store."""
    embedder = embedder_for(settings)
    baseline = load_embedder(
        settings.embedding_model,
        settings.embedding_device,
        settings.embedding_batch_size,
        encoder="torch",
    )
    return embedder, baseline, SyncEngine(settings, open_store(settings), embedder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--products", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sample", type=int, default=2_000, help="chunks for the raw baseline")
    parser.add_argument("--dataset", type=Path, help="a folder with a real products.jsonl")
    args = parser.parse_args()
    configure_logging("INFO")
    if args.dataset:
        run_dataset(args.dataset)
        return

    work = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    settings = Settings(hudi_table_path=str(work / "products"), qdrant_path=str(work / "qdrant"))
    spark = get_spark(settings, app_name="bench-sync")
    rows = list(generate(args.products, args.seed))
    logger.info("writing %d products with Spark", len(rows))
    create_table(spark, settings.hudi_table_path)
    upsert_rows(spark, settings.hudi_table_path, rows)

    embedder, baseline, engine = sync_and_torch(settings)

    # 1. Raw model throughput on the very texts the sync will embed (a sample of them).
    from app.core.catalog import Product

    sample_texts: list[str] = []
    for r in rows:
        product = Product(
            r["id"], 0, r["name"], r["description"], r["category"], r["brand"], r["price"]
        )
        sample_texts.extend(c.text for c in engine.chunker.chunk(product))
        if len(sample_texts) >= args.sample:
            break
    logger.info(
        "baseline torch fp32, encoder %s: %d sample chunks", embedder.encoder, len(sample_texts)
    )
    for e in (baseline, embedder):
        e.embed(sample_texts[:64])  # warm-up: first batch pays lazy init

    def raw_rates() -> tuple[float, float]:
        rates = []
        for e in (baseline, embedder):
            t0 = time.perf_counter()
            e.embed(sample_texts)
            rates.append(len(sample_texts) / (time.perf_counter() - t0))
        return rates[0], rates[1]

    cos = np.sum(baseline.embed(sample_texts) * embedder.embed(sample_texts), axis=1)
    # Measured before and after the bootstrap: a drift in machine load during the run
    # shows up as a gap between the two instead of skewing the ratio unnoticed.
    torch_before, enc_before = raw_rates()

    # 2. Bootstrap.
    t0 = time.perf_counter()
    boot = engine.run_cycle()
    boot_s = time.perf_counter() - t0
    boot_rate = boot.embedded / boot_s
    torch_after, enc_after = raw_rates()
    torch_raw = (torch_before + torch_after) / 2
    enc_raw = (enc_before + enc_after) / 2

    # 3. Edit 1% of the products (new descriptions), then one incremental cycle.
    rng = random.Random(args.seed)
    edited = rng.sample(rows, max(1, len(rows) // 100))
    changed = [
        {**r, "ts": r["ts"] + 1, "description": r["description"] + " Now with a longer warranty."}
        for r in edited
    ]
    upsert_rows(spark, settings.hudi_table_path, changed)
    current = {r["id"]: r for r in rows} | {r["id"]: r for r in changed}
    t0 = time.perf_counter()
    inc = engine.run_cycle()
    inc_s = time.perf_counter() - t0

    # 4. Price-only update of 1,000 products.
    priced = [
        {**r, "ts": r["ts"] + 2, "price": round(r["price"] * 0.9, 2)}
        for r in rng.sample(sorted(current.values(), key=lambda r: r["id"]), min(1000, len(rows)))
    ]
    upsert_rows(spark, settings.hudi_table_path, priced)
    t0 = time.perf_counter()
    price = engine.run_cycle()
    price_s = time.perf_counter() - t0
    engine.store.close()
    spark.stop()

    print(f"products                         {len(rows)}")
    print(f"chunks (bootstrap)               {boot.embedded}")
    print(
        f"baseline torch fp32              {torch_raw:8.1f} chunks/s  ({len(sample_texts)} chunks; "
        f"before {torch_before:.1f}, after {torch_after:.1f})"
    )
    print(
        f"encoder {embedder.encoder:24s} {enc_raw:8.1f} chunks/s  "
        f"(before {enc_before:.1f}, after {enc_after:.1f}) x{enc_raw / torch_raw:.2f} torch"
    )
    print(f"  cosine to torch, min / mean    {cos.min():8.6f} / {cos.mean():.6f}")
    print(f"bootstrap sync                   {boot_rate:8.1f} chunks/s  ({boot_s:.1f} s)")
    print(f"  ratio sync/torch baseline      {boot_rate / torch_raw:8.3f}   (target >= 2.0)")
    print(f"  ratio sync/its encoder         {boot_rate / enc_raw:8.3f}")
    print(
        f"incremental, 1% edited           {inc_s:8.2f} s  rows {inc.rows}, "
        f"embedded {inc.embedded}, skipped {inc.skipped}, deleted {inc.deleted}"
    )
    print(f"  fraction of bootstrap          {inc_s / boot_s:8.4f}   (target <= 0.03)")
    print(
        f"price-only update, 1000 products {price_s:8.2f} s  rows {price.rows}, "
        f"embedded {price.embedded} (target 0), payload updates {price.payload_updates}"
    )


def run_dataset(folder: Path) -> None:
    """The bootstrap of a real catalog against torch on the same chunk texts."""
    from app.eval.data import load_products
    from app.sync.apply import EMBED_GROUP
    from app.sync.progress import Progress
    from spark_jobs.upsert_products import upsert_files

    work = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    settings = Settings(hudi_table_path=str(work / "products"), qdrant_path=str(work / "qdrant"))
    products_file = folder / "products.jsonl"
    spark = get_spark(settings, app_name="bench-sync")
    logger.info("writing %s with Spark", products_file)
    create_table(spark, settings.hudi_table_path)
    upsert_files(spark, settings.hudi_table_path, [str(products_file)])
    spark.stop()

    embedder, baseline, engine = sync_and_torch(settings)
    texts = [c.text for p in load_products(products_file) for c in engine.chunker.chunk(p)]
    # The sync embeds in calls of EMBED_GROUP chunks in table order; torch gets the same calls.
    groups = [texts[i : i + EMBED_GROUP] for i in range(0, len(texts), EMBED_GROUP)]
    half = len(groups) // 2
    for e in (baseline, embedder):
        e.embed(texts[:64])  # warm-up: the first batch pays lazy init

    def torch_rate(part: list[list[str]], label: str) -> tuple[float, int]:
        progress = Progress(logger, f"torch baseline, {label}", sum(len(g) for g in part))
        t0 = time.perf_counter()
        for group in part:
            baseline.embed(group)
            progress.advance(len(group))
        return progress.done / (time.perf_counter() - t0), progress.done

    torch_before, n_before = torch_rate(groups[:half], "before the bootstrap")
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    boot = engine.run_cycle()
    boot_s = time.perf_counter() - t0
    load_boot = os.getloadavg()[0]
    torch_after, n_after = torch_rate(groups[half:], "after the bootstrap")
    load_after = os.getloadavg()[0]
    # Chunks per second over all of them: total texts / total torch time.
    torch_all = (n_before + n_after) / (n_before / torch_before + n_after / torch_after)
    boot_rate = boot.embedded / boot_s
    sample = texts[:: max(1, len(texts) // 1000)]
    cos = np.sum(baseline.embed(sample) * embedder.embed(sample), axis=1)
    engine.store.close()

    print(f"dataset                          {folder} ({len(texts)} chunk texts)")
    print(f"encoder                          {embedder.encoder} ({embedder.model_id})")
    print(
        f"bootstrap sync                   {boot_rate:8.1f} chunks/s  ({boot.embedded} chunks, "
        f"{boot_s:.1f} s, {boot.rows} rows)"
    )
    print(
        f"torch fp32, same chunk texts     {torch_all:8.1f} chunks/s  "
        f"(before {torch_before:.1f}, after {torch_after:.1f})"
    )
    print(f"  ratio bootstrap/torch          {boot_rate / torch_all:8.3f}   (target >= 2.0)")
    print(f"  cosine to torch, min / mean    {cos.min():8.6f} / {cos.mean():.6f} ({len(sample)})")
    loads = f"{load_before:.1f} / {load_boot:.1f} / {load_after:.1f}"
    print(f"  1-min load before / boot / after  {loads}")
    if boot.embedded != len(texts):
        print(f"  WARNING: the bootstrap embedded {boot.embedded}, torch {len(texts)} texts")


if __name__ == "__main__":
    main()
