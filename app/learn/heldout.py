"""Score an encoder's rankings of judged queries, per fold.

Two measures (`python -m app.learn --measure`):
- `catalog` (default), app.eval's machinery: the whole catalog indexed the way the sync
  indexes it (app.eval.index) with the encoder's document engine as the service would pick
  it, every query through the service's retriever (`service`: RETRIEVAL_MODE, by default
  the relevance fusion with BM25), condensed nDCG@10 over the top 100, threshold 0 (the
  ranking itself, as DESIGN.md's quality table is measured); `dense` as below.
- `judged`, dense only and a fraction of the cost: each query's judged products ranked
  by their best chunk's cosine. That is the whole catalog's dense ranking condensed (a
  product's cosine does not depend on the others), without the top-100 cut; only the
  chunks of judged products are embedded (Home Depot: ~6 per query, not 54,667).

`catalog`'s `dense` is searched exactly, not through the index: every chunk's cosine from
the vectors the index build just cached, a product by its best chunk, its top 100
condensed. That is the dense search's ranking without the graph's approximation, and one
matrix product instead of a second search per query (BENCHMARKS.md, "Learning").
"""

from __future__ import annotations

import contextlib
import logging
import statistics
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

import numpy as np

from app.core.config import Settings
from app.embedding import Embedder
from app.eval.index import build_chunk_index, chunker_for
from app.eval.ndcg import condensed_ndcg_at_k
from app.eval.parallel import each_query
from app.eval.runner import ranked_ids
from app.eval.vector_cache import CachedEmbedder
from app.learn.judgments import Folds, Judgments
from app.retrieval import Retriever
from app.sync.progress import Progress

logger = logging.getLogger(__name__)

Measure = Literal["catalog", "judged"]
DEPTH = 100
K = 10


@dataclass(frozen=True, slots=True)
class Scores:
    """mode -> qid -> condensed nDCG@10, for the queries that were run."""

    per_query: dict[str, dict[str, float]]

    def fold_means(self, folds: Folds, fold: int) -> dict[str, float]:
        qids = folds.qids(fold)
        return {
            mode: round(statistics.fmean(v for q, v in scores.items() if q in qids), 4)
            for mode, scores in self.per_query.items()
            if any(q in qids for q in scores)
        }


def score_queries(
    judgments: Judgments,
    qids: Iterable[str],
    embedder: Embedder,
    settings: Settings,
    cache_dir: Path | None,
    label: str,
    index_dir: Path | None = None,
) -> Scores:
    """Index the catalog with `embedder` and score the queries `qids`: `service` through the
    retriever, `dense` by `exact_dense` (from the vectors the index build cached).

    `cache_dir`: dense vectors kept by model id and text (app.eval.vector_cache), so the
    base encoder's catalog is embedded once per machine; None embeds afresh.
    `index_dir`: build the index in this new folder and leave it there (closed) for the
    caller, who owns the folder (app.learn hands the shipped encoder's to the ranker);
    None: a temporary folder.
    """
    wanted = set(qids)
    queries = [q for q in judgments.queries if q.qid in wanted]
    engine = _cached(embedder, cache_dir)
    ranking = settings.model_copy(
        update={"similarity_threshold": 0.0, "relevance_min_cosine": -1.0}
    )
    service: dict[str, float] = {}
    chunks: list[tuple[int, str]] = []
    with contextlib.ExitStack() as stack:
        folder = (
            str(index_dir)
            if index_dir is not None
            else stack.enter_context(tempfile.TemporaryDirectory(prefix="learn-index-"))
        )
        try:
            store = build_chunk_index(
                judgments.products, ranking, engine, path=folder, record=chunks
            )
        finally:
            if isinstance(engine, CachedEmbedder):
                engine.save()
        try:
            retriever = Retriever(engine, store, ranking)
            progress = Progress(logger, f"{label}: held-out queries", len(queries))
            rankings = each_query(partial(ranked_ids, retriever, DEPTH), [q.query for q in queries])
            for q, ranked in zip(queries, rankings, strict=True):
                service[q.qid] = condensed_ndcg_at_k(ranked, judgments.qrels[q.qid], K)
                progress.advance(1)
        finally:
            store.close()
    exact = exact_dense(chunks, [q.query for q in queries], engine, ranking)
    dense = {
        q.qid: condensed_ndcg_at_k(ranked, judgments.qrels[q.qid], K)
        for q, ranked in zip(queries, exact, strict=True)
    }
    return Scores({"dense": dense, "service": service})


def exact_dense(
    chunks: Sequence[tuple[int, str]], queries: list[str], engine: Embedder, settings: Settings
) -> list[list[int]]:
    """Each query's exact dense ranking of the catalog's `chunks` (product id, text): a
    product by its best chunk's cosine, at least the similarity threshold, the top DEPTH
    (ties by id)."""
    owners = [pid for pid, _ in chunks]
    texts = [text for _, text in chunks]
    chunks_v = np.concatenate(
        [engine.embed(texts[i : i + 4096]) for i in range(0, len(texts), 4096)]
    )
    # Chunks grouped by product, so each product's best is a reduceat over its run.
    order = np.argsort(np.asarray(owners), kind="stable")
    chunks_v = chunks_v[order]
    pids, starts = np.unique(np.asarray(owners)[order], return_index=True)
    out: list[list[int]] = []
    for first in range(0, len(queries), 256):
        cosines = engine.embed(queries[first : first + 256]) @ chunks_v.T
        best = cosines if len(pids) == len(owners) else np.maximum.reduceat(cosines, starts, 1)
        for row in best:
            top = np.argpartition(-row, min(DEPTH, len(row)) - 1)[:DEPTH]
            top = top[row[top] >= settings.similarity_threshold]
            out.append(pids[top[np.lexsort((pids[top], -row[top]))]].tolist())
    return out


def score_judged(
    judgments: Judgments,
    qids: Iterable[str],
    embedder: Embedder,
    settings: Settings,
    cache_dir: Path | None,
    label: str,
) -> Scores:
    """Dense only: each query's judged products ranked by their best chunk's cosine."""
    wanted = set(qids)
    queries = [q for q in judgments.queries if q.qid in wanted]
    by_id = {p.id: p for p in judgments.products}
    pids = sorted({p for q in queries for p in judgments.qrels[q.qid] if p in by_id})
    chunker = chunker_for(settings, embedder)
    owners, texts = [], []
    for pid in pids:
        for chunk in chunker.chunk(by_id[pid]):
            owners.append(pid)
            texts.append(chunk.text)
    engine = _cached(embedder, cache_dir)
    progress = Progress(logger, f"{label}: judged products' chunks", len(texts))
    parts = []
    try:
        for start in range(0, len(texts), 1024):
            parts.append(engine.embed(texts[start : start + 1024]))
            progress.advance(len(parts[-1]))
        queries_v = engine.embed([q.query for q in queries])
    finally:
        if isinstance(engine, CachedEmbedder):
            engine.save()
    chunks_v = np.concatenate(parts) if parts else np.zeros((0, engine.dim), np.float32)
    rows: dict[int, list[int]] = {}
    for row, pid in enumerate(owners):
        rows.setdefault(pid, []).append(row)
    scores: dict[str, float] = {}
    for q, vector in zip(queries, queries_v, strict=True):
        judged = [p for p in judgments.qrels[q.qid] if p in rows]
        best = {p: float(np.max(chunks_v[rows[p]] @ vector)) for p in judged}
        ranked = sorted(judged, key=lambda p: (-best[p], p))
        scores[q.qid] = condensed_ndcg_at_k(ranked, judgments.qrels[q.qid], K)
    return Scores({"dense": scores})


def score(
    measure: Measure,
    judgments: Judgments,
    qids: Iterable[str],
    embedder: Embedder,
    settings: Settings,
    cache_dir: Path | None,
    label: str,
    index_dir: Path | None = None,
) -> Scores:
    """`score_queries` (measure "catalog", leaving its index in `index_dir` if given) or
    `score_judged` (measure "judged": no index)."""
    if measure == "catalog":
        return score_queries(judgments, qids, embedder, settings, cache_dir, label, index_dir)
    return score_judged(judgments, qids, embedder, settings, cache_dir, label)


def _cached(embedder: Embedder, cache_dir: Path | None) -> Embedder:
    if cache_dir is None:
        return embedder
    engine = CachedEmbedder.wrap(embedder, cache_dir)
    # wrap() builds a plain torch Embedder: keep the ONNX engine the service would run.
    engine.onnx, engine.encoder = embedder.onnx, embedder.encoder
    return engine
