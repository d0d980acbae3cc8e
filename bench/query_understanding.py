"""What query understanding adds to a request, as ratios to the query embedding it precedes.

Times, in one run: the offline parse of every labelled constraint query
(data/eval/constraints.jsonl), one query embedding through the service's encoder (the
baseline: every request pays it), and one read of the catalog's categories from a store
holding N products (the vocabulary refresh, once per CATEGORY_REFRESH_SECONDS). The store
gets N products × 2 chunks with random vectors: the category read never looks at them.

    .venv/bin/python bench/query_understanding.py                  # 20k products
    .venv/bin/python bench/query_understanding.py --products 100000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.core.config import Settings  # noqa: E402
from app.embedding import load_embedder  # noqa: E402
from app.embedding.onnx_query import query_encoder_for  # noqa: E402
from app.eval.constraints import DEFAULT_CONSTRAINTS, load_constraint_cases  # noqa: E402
from app.query import OfflineQueryParser  # noqa: E402
from app.query.category import CategoryVocabulary  # noqa: E402
from app.store import ChunkPoint, open_store  # noqa: E402

CATEGORIES = ["audio", "books", "garden", "home", "kitchen", "outdoor", "pet", "toys"]


def per_call_ms(fn: object, calls: list[object], rounds: int) -> float:
    """Median over rounds of the mean time per call, in ms."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for arg in calls:
            fn(arg)  # type: ignore[operator]
        times.append((time.perf_counter() - started) / len(calls) * 1000)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--products", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()

    queries = [c.query for c in load_constraint_cases(DEFAULT_CONSTRAINTS)]
    parser = OfflineQueryParser()
    settings = Settings()
    embedder = load_embedder()
    encoder = query_encoder_for(settings, embedder)
    encoder.embed(["warm up"])

    parse_ms = per_call_ms(lambda q: parser.parse(q, CATEGORIES), list(queries), args.rounds)
    embed_ms = per_call_ms(lambda q: encoder.embed([q]), list(queries), args.rounds)

    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(settings.model_copy(update={"qdrant_path": tmp, "qdrant_url": None}))
        store.ensure_collection(embedder.dim)
        rng = np.random.default_rng(7)
        started, batch = time.perf_counter(), []
        for i in range(args.products * 2):
            vector = rng.standard_normal(embedder.dim).astype(np.float32)
            payload = {"product_id": i // 2, "category": CATEGORIES[(i // 2) % len(CATEGORIES)]}
            batch.append(ChunkPoint(str(uuid.UUID(int=i)), vector, payload))
            if len(batch) == 4096:
                store.upsert(batch)
                batch = []
                done = (i + 1) / (args.products * 2)
                eta = (time.perf_counter() - started) / done * (1 - done)
                print(f"  loading chunks {done:.0%}, ETA {eta:.0f}s", file=sys.stderr)
        store.upsert(batch)
        vocab_times = []
        for _ in range(args.rounds):
            vocabulary = CategoryVocabulary(store, refresh_seconds=3600)
            t = time.perf_counter()
            assert vocabulary.get() == frozenset(CATEGORIES)
            vocab_times.append((time.perf_counter() - t) * 1000)
        store.close()
    vocab_ms = statistics.median(vocab_times)

    print(f"queries                           {len(queries)}")
    print(f"query embedding (baseline)        {embed_ms:.3f} ms")
    print(f"offline parse                     {parse_ms:.3f} ms  ({parse_ms / embed_ms:.3f}x)")
    print(
        f"category read, {args.products} products ({args.products * 2} chunks)  "
        f"{vocab_ms:.1f} ms  ({vocab_ms / embed_ms:.0f}x; once per refresh)"
    )


if __name__ == "__main__":
    main()
