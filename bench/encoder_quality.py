"""Retrieval quality of the sync's document encoder against sentence-transformers fp32.

    flock /tmp/bench.lock .venv/bin/python bench/encoder_quality.py \
        [--dataset /work/shared/eval/homedepot-dev] [--max-queries N]

Dense whole-text ranking, scored with condensed nDCG@10 (unjudged products dropped from
the ranking, so only judged products need embedding): on the demo set (data/eval against
data/demo/products.jsonl) and on each --dataset DIR holding products.jsonl, queries.jsonl
and qrels.tsv (read in place, never copied). Side by side, per dataset:
  torch fp32 documents + torch fp32 queries      (the reference)
  encoder documents + encoder queries            (what the service runs: one vector space)
  encoder documents + torch fp32 queries         (the cross effect)
Target (issue 11): the encoder within 0.005 of the reference.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import Settings
from app.core.logging import configure_logging
from app.embedding import Embedder, embedder_for, load_embedder
from app.eval.data import (
    DEFAULT_PRODUCTS,
    DEFAULT_QRELS,
    DEFAULT_QUERIES,
    load_products,
    load_qrels,
    load_queries,
)
from app.eval.ndcg import ndcg_at_k

logger = logging.getLogger("bench.encoder_quality")


def condensed_ndcg(
    doc_vecs: dict[int, np.ndarray],
    query_vecs: dict[str, np.ndarray],
    qrels: dict[str, dict[int, float]],
    k: int,
) -> float:
    scores = []
    for qid, judged in qrels.items():
        ids = [pid for pid in judged if pid in doc_vecs]
        sims = np.array([float(doc_vecs[pid] @ query_vecs[qid]) for pid in ids])
        ranking = [ids[i] for i in np.argsort(-sims, kind="stable")]
        scores.append(ndcg_at_k(ranking, judged, k))
    return statistics.fmean(scores)


def evaluate(
    name: str,
    products: Path,
    queries: Path,
    qrels_path: Path,
    pair: tuple[Embedder, Embedder],
    max_queries: int,
    k: int,
) -> None:
    qrels = load_qrels(qrels_path)
    asked = [q for q in load_queries(queries) if q.qid in qrels][: max_queries or None]
    qrels = {q.qid: qrels[q.qid] for q in asked}
    judged = {pid for j in qrels.values() for pid in j}
    catalog = [p for p in load_products(products) if p.id in judged]
    texts = [f"{p.name}\n{p.description}" for p in catalog]
    logger.info("%s: %d queries, %d judged products", name, len(asked), len(catalog))
    reference, encoder = pair
    docs, query = {}, {}
    for e in (reference, encoder):
        t0 = time.perf_counter()
        vecs = e.embed(texts)
        docs[e.encoder] = dict(zip([p.id for p in catalog], vecs, strict=True))
        query[e.encoder] = dict(
            zip([q.qid for q in asked], e.embed([q.query for q in asked]), strict=True)
        )
        logger.info("%s: %s embedded in %.1f s", name, e.encoder, time.perf_counter() - t0)
    ref = condensed_ndcg(docs[reference.encoder], query[reference.encoder], qrels, k)
    same = condensed_ndcg(docs[encoder.encoder], query[encoder.encoder], qrels, k)
    cross = condensed_ndcg(docs[encoder.encoder], query[reference.encoder], qrels, k)
    print(f"{name}: {len(asked)} queries, {len(catalog)} judged products, condensed nDCG@{k}")
    print(f"  torch fp32 docs + torch fp32 queries   {ref:.4f}")
    print(
        f"  {encoder.encoder} docs + {encoder.encoder} queries     {same:.4f}  ({same - ref:+.4f})"
    )
    print(f"  {encoder.encoder} docs + torch fp32 queries    {cross:.4f}  ({cross - ref:+.4f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, action="append", default=[])
    parser.add_argument(
        "--max-queries", type=int, default=0, help="first N judged queries; 0 = all"
    )
    parser.add_argument("-k", type=int, default=10)
    args = parser.parse_args()
    configure_logging("INFO")
    settings = Settings()
    encoder = embedder_for(settings)
    reference = load_embedder(
        settings.embedding_model, "cpu", settings.embedding_batch_size, encoder="torch"
    )
    pair = (reference, encoder)
    evaluate("demo", DEFAULT_PRODUCTS, DEFAULT_QUERIES, DEFAULT_QRELS, pair, 0, args.k)
    for d in args.dataset:
        evaluate(
            d.name,
            d / "products.jsonl",
            d / "queries.jsonl",
            d / "qrels.tsv",
            pair,
            args.max_queries,
            args.k,
        )


if __name__ == "__main__":
    main()
