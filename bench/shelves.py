"""The shop's shelves ("best sellers", "under $5", "a gift for her": a search per category)
on the demo catalog, in process: the embedded shard against a Qdrant server, the server
asked as the service asks it (every shelf in one batch, grouped per product here) and
shelf by shelf (Qdrant's group-by, a request per shelf: the path before the batch), same
run, alternating, p50 of `--rounds` x each query.

    QDRANT_SERVER_BIN=... flock /tmp/bench.lock .venv/bin/python -m bench.shelves

BENCHMARKS.md, "Edge shard against a Qdrant server".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.core.config import Settings
from app.embedding import embedder_for
from app.eval.data import DEFAULT_PRODUCTS, load_products
from app.eval.index import build_chunk_index, chunker_for
from app.query import FilterPlan, build_query_understanding, constrained_retrieve, plan_filters
from app.query.types import ParsedQuery
from app.retrieval import Retriever
from app.store import ProductHit, SearchFilter, VectorStore, open_store
from app.store.base import VectorLike
from app.sync.apply import ChunkApplier
from bench.service_process import QdrantServerProcess

QUERIES = ["best sellers", "under $5", "a gift for her"]


class ShelfByShelf:
    """A store whose batch of searches goes one search per call (the server's group-by,
    one request each), the rest as the store does."""

    def __init__(self, store: VectorStore) -> None:
        self._store = store

    def search_dense_each(
        self,
        searches: Sequence[tuple[VectorLike, SearchFilter | None, int]],
        *,
        chunks_per_product: int,
        score_threshold: float | None = None,
    ) -> list[list[ProductHit]]:
        return [
            self._store.search_dense_each(
                [s], chunks_per_product=chunks_per_product, score_threshold=score_threshold
            )[0]
            for s in searches
        ]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=20, help="requests per query per round")
    args = ap.parse_args()
    binary = os.environ.get("QDRANT_SERVER_BIN")
    if not binary:
        raise SystemExit("set QDRANT_SERVER_BIN (a qdrant binary)")
    print(f"load {os.getloadavg()[0]:.1f}")
    products = load_products(DEFAULT_PRODUCTS)
    with tempfile.TemporaryDirectory() as tmp, QdrantServerProcess(binary, Path(tmp) / "q") as q:
        settings = Settings(qdrant_url=q.url, qdrant_collection="shelves")
        embedder = embedder_for(settings)
        edge = build_chunk_index(products, settings, embedder, path=f"{tmp}/shard")
        server = open_store(settings)
        server.ensure_collection(embedder.dim)
        ChunkApplier(server, embedder, chunker_for(settings, embedder)).apply(products, {})
        understanding = build_query_understanding(settings, edge)
        plans = {}
        for query in QUERIES:
            parsed = asyncio.run(understanding.parse(query))
            categories = understanding.categories()
            plans[query] = (parsed, plan_filters(parsed, None, categories=categories))
        stores: dict[str, Any] = {
            "edge": edge,
            "server, one batch": server,
            "server, shelf by shelf": ShelfByShelf(server),
        }
        times: dict[tuple[str, str], list[float]] = {}
        answers: dict[str, set[tuple[int, ...]]] = {q: set() for q in QUERIES}
        for round_ in range(args.rounds):
            print(f"round {round_ + 1}/{args.rounds}, load {os.getloadavg()[0]:.1f}", flush=True)
            for name, store in stores.items():
                retriever = Retriever(embedder, store, settings)
                for query in QUERIES:
                    parsed, plan = plans[query]
                    times.setdefault((name, query), []).extend(
                        _timed(retriever, parsed, plan, args.repeats, answers[query])
                    )
        server.close()
        edge.close()
    for query in QUERIES:
        # Every store answered alike: the comparison is of the same work.
        assert len(answers[query]) == 1, (query, answers[query])
        edge_p50 = statistics.median(times["edge", query])
        for name in stores:
            p50 = statistics.median(times[name, query])
            print(f"{query!r:16} {name:<24} p50 {p50:7.2f} ms = {p50 / edge_p50:5.2f}x the edge")
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


def _timed(
    retriever: Retriever,
    parsed: ParsedQuery,
    plan: FilterPlan,
    repeats: int,
    answers: set[tuple[int, ...]],
) -> list[float]:
    took = []
    constrained_retrieve(retriever, parsed.search_text, 5, plan)  # warm
    for _ in range(repeats):
        started = time.perf_counter()
        outcome = constrained_retrieve(retriever, parsed.search_text, 5, plan)
        took.append((time.perf_counter() - started) * 1000)
        answers.add(tuple(p.id for p in outcome.products))
    return took


if __name__ == "__main__":
    raise SystemExit(main())
