"""Score an encoder's rankings of judged queries, per fold, with app.eval's machinery.

The catalog is indexed the way the sync indexes it (app.eval.index) with the encoder's
document engine as the service would pick it (int8 ONNX on a VNNI CPU), then every query
runs through the service's retriever twice: `dense` (the encoder alone) and `service`
(RETRIEVAL_MODE, by default the relevance fusion with BM25). Condensed nDCG@10 over the
top 100, threshold 0 (the ranking itself, as DESIGN.md's quality table is measured).
"""

from __future__ import annotations

import logging
import statistics
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from app.core.config import Settings
from app.embedding import Embedder
from app.eval.index import build_chunk_index
from app.eval.ndcg import condensed_ndcg_at_k
from app.eval.vector_cache import CachedEmbedder
from app.learn.judgments import Folds, Judgments
from app.retrieval import Retriever
from app.sync.progress import Progress

logger = logging.getLogger(__name__)

MODES = ("dense", "service")
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
) -> Scores:
    """Index the catalog with `embedder` and score the queries `qids` in both modes.

    `cache_dir`: dense vectors kept by model id and text (app.eval.vector_cache), so the
    base encoder's catalog is embedded once per machine; None embeds afresh.
    """
    wanted = set(qids)
    queries = [q for q in judgments.queries if q.qid in wanted]
    engine = embedder
    if cache_dir is not None:
        engine = CachedEmbedder.wrap(embedder, cache_dir)
        # wrap() builds a plain torch Embedder: keep the ONNX engine the service would run.
        engine.onnx, engine.encoder = embedder.onnx, embedder.encoder
    ranking = settings.model_copy(update={"similarity_threshold": 0.0})
    per_query: dict[str, dict[str, float]] = {mode: {} for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="learn-index-") as folder:
        try:
            store = build_chunk_index(judgments.products, ranking, engine, path=folder)
        finally:
            if isinstance(engine, CachedEmbedder):
                engine.save()
        try:
            retrievers = {
                "dense": Retriever(
                    engine, store, ranking.model_copy(update={"retrieval_mode": "dense"})
                ),
                "service": Retriever(engine, store, ranking),
            }
            progress = Progress(logger, f"{label}: held-out queries", len(queries) * len(MODES))
            for mode, retriever in retrievers.items():
                for q in queries:
                    ranked = [p.id for p in retriever.retrieve(q.query, top_k=DEPTH)]
                    per_query[mode][q.qid] = condensed_ndcg_at_k(ranked, judgments.qrels[q.qid], K)
                    progress.advance(1)
        finally:
            store.close()
    return Scores(per_query)
