"""Vector-store latency: embedded qdrant-edge vs qdrant-client local mode vs numpy.

Builds N random normalized vectors (2 chunks per product, 20 categories, prices 1-500),
loads them into an on-disk edge shard (and, for comparison, qdrant-client's in-memory
local mode), and prints p50/p95 of `search_products` (limit 5, 3 chunks per product)
unfiltered, with a category filter and with a price range; before and after
`optimize()` (HNSW build), plus load, optimize and reopen times, and a numpy brute-force
top-k over the same matrix in the same run.

    .venv/bin/python bench/store_latency.py                 # 100k points
    .venv/bin/python bench/store_latency.py --points 200000 # bigger
    .venv/bin/python bench/store_latency.py --no-client     # skip the slow local mode
    .venv/bin/python bench/store_latency.py --roll 50000    # optimize every 50k points
                                                            # while loading, as the sync does

Recall is the top-5 product overlap with the exact answer (numpy, same filter).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from app.store.base import ChunkPoint, SearchFilter, VectorStore
from app.store.edge_store import FLUSH_AFTER_POINTS, FLUSH_AFTER_SECONDS, EdgeStore

CATEGORIES = [f"cat-{i:02d}" for i in range(20)]
FILTERS: dict[str, SearchFilter | None] = {
    "unfiltered": None,
    "category": SearchFilter(category="cat-03"),
    "price 100-150": SearchFilter(min_price=100.0, max_price=150.0),
}


def make_data(n: int, dim: int, seed: int) -> tuple[np.ndarray, list[ChunkPoint]]:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(n, dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    prices = np.round(rng.uniform(1, 500, size=n // 2 + 1), 2)
    points = [
        ChunkPoint(
            id=str(uuid.UUID(int=i + 1)),
            vector=matrix[i],
            payload={
                "product_id": i // 2,
                "chunk_index": i % 2,
                "chunk_count": 2,
                "category": CATEGORIES[(i // 2) % len(CATEGORIES)],
                "price": float(prices[i // 2]),
                "name": f"p{i // 2}",
            },
        )
        for i in range(n)
    ]
    return matrix, points


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"p50 {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms"


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def bench_searches(
    label: str, store: VectorStore, queries: np.ndarray
) -> dict[str, list[list[int]]]:
    answers: dict[str, list[list[int]]] = {}
    for name, flt in FILTERS.items():
        samples: list[float] = []
        ids: list[list[int]] = []
        for q in queries:
            started = time.perf_counter()
            hits = store.search_products(
                q, limit=5, chunks_per_product=3, score_threshold=None, flt=flt
            )
            samples.append(time.perf_counter() - started)
            ids.append([h.product_id for h in hits])
        answers[name] = ids
        print(f"  {label:<28} {name:<14} {percentiles(samples)}")
    return answers


def load(
    store: VectorStore, points: list[ChunkPoint], dim: int, batch: int, roll: int = 0
) -> float:
    """Upsert every point; with `roll`, optimize after every `roll` points (the sync's
    ROLL_AFTER_POINTS: one indexed segment per `roll` points)."""
    store.ensure_collection(dim)
    started = time.perf_counter()
    written = 0
    for start in range(0, len(points), batch):
        store.upsert(points[start : start + batch])
        written += len(points[start : start + batch])
        if roll and written >= roll:
            store.optimize()
            written = 0
    return time.perf_counter() - started


def filter_masks(points: list[ChunkPoint]) -> dict[str, np.ndarray | None]:
    """The bench's three filters as boolean masks over the points (None: unfiltered)."""
    category = np.array([p.payload["category"] == "cat-03" for p in points])
    price = np.array([p.payload["price"] for p in points])
    return {
        "unfiltered": None,
        "category": category,
        "price 100-150": (price >= 100) & (price <= 150),
    }


def exact_products(
    matrix: np.ndarray, points: list[ChunkPoint], queries: np.ndarray
) -> dict[str, list[list[int]]]:
    """The exact top-5 products per query and filter (a product's best chunk)."""
    product = np.array([p.payload["product_id"] for p in points])
    masks = filter_masks(points)
    answers: dict[str, list[list[int]]] = {}
    for name, mask in masks.items():
        answers[name] = []
        for q in queries:
            scores = matrix @ q
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            top: list[int] = []
            for i in np.argsort(-scores)[:200]:
                if int(product[i]) not in top:
                    top.append(int(product[i]))
                if len(top) == 5:
                    break
            answers[name].append(top)
    return answers


def numpy_baseline(matrix: np.ndarray, points: list[ChunkPoint], queries: np.ndarray) -> None:
    masks = filter_masks(points)
    for name, mask in masks.items():
        samples = []
        for q in queries:
            started = time.perf_counter()
            scores = matrix @ q
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            top = np.argpartition(-scores, 60)[:60]
            top[np.argsort(-scores[top])]
            samples.append(time.perf_counter() - started)
        print(f"  {'numpy brute force top-60':<28} {name:<14} {percentiles(samples)}")


def overlap(a: dict[str, list[list[int]]], b: dict[str, list[list[int]]]) -> str:
    parts = []
    for name in a:
        same = [
            len(set(x) & set(y)) / max(len(x), 1) for x, y in zip(a[name], b[name], strict=True)
        ]
        parts.append(f"{name} {statistics.mean(same):.3f}")
    return ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=2048, help="points per upsert call")
    parser.add_argument("--no-client", action="store_true", help="skip qdrant-client local")
    parser.add_argument("--skip-optimize", action="store_true", help="no HNSW build")
    parser.add_argument("--path", help="edge shard folder (default: a temp dir)")
    parser.add_argument("--roll", type=int, default=0, help="optimize every N points loaded")
    args = parser.parse_args()

    matrix, points = make_data(args.points, args.dim, seed=0)
    rng = np.random.default_rng(1)
    queries = rng.normal(size=(args.queries, args.dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    print(f"{args.points} points, {args.dim}-d, {args.queries} queries, search_products(5, 3)")

    numpy_baseline(matrix, points, queries)
    truth = exact_products(matrix, points, queries)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.path) if args.path else Path(tmp) / "edge"
        edge = EdgeStore(path)
        took = load(edge, points, args.dim, args.batch, args.roll)
        print(
            f"edge: load {took:.1f}s ({args.points / took:,.0f} points/s, "
            f"flush every {FLUSH_AFTER_POINTS:,} points / {FLUSH_AFTER_SECONDS:.0f} s"
            + (f", optimize every {args.roll:,} points)" if args.roll else ")")
        )
        exact = bench_searches("edge before optimize", edge, queries)
        print(f"  top-5 product overlap with the exact answer: {overlap(exact, truth)}")

        small = points[:32]

        def upsert_and_flush() -> None:
            edge.upsert(small)
            edge.flush()

        flush_samples = [timed(upsert_and_flush)[0] for _ in range(10)]
        print(f"  edge upsert of 32 points + flush: {percentiles(flush_samples)}")

        if not args.skip_optimize:
            took, _ = timed(edge.optimize)
            print(f"edge: optimize {took:.1f}s")
            approx = bench_searches("edge after optimize", edge, queries)
            print(f"  top-5 product overlap with the exact answer: {overlap(approx, truth)}")
            print(f"  segments: {edge._require().info().segments_count}")

        edge.close()
        took, edge = timed(lambda: EdgeStore(path))
        print(f"edge: reopen {took:.2f}s, count {edge.count()}")
        bench_searches("edge after reopen", edge, queries[:50])
        edge.close()

    if not args.no_client:
        from qdrant_client import QdrantClient

        from app.store.qdrant_client_store import QdrantClientStore

        client = QdrantClientStore(QdrantClient(":memory:"), "bench", local=True)
        took = load(client, points, args.dim, args.batch)
        print(f"qdrant-client local: load {took:.1f}s")
        local = bench_searches("qdrant-client local", client, queries[:30])
        short = {k: v[:30] for k, v in exact.items()}
        print(f"  top-5 product overlap local/edge-exact: {overlap(local, short)}")
        client.close()


if __name__ == "__main__":
    main()
