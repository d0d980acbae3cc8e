"""CLI: print nDCG@10 of the service's retrieval next to a whole-text dense baseline.

python -m app.eval                                  # demo files, in-memory index
python -m app.eval --queries Q --qrels R --products FILE
python -m app.eval --use-store                      # rank with the configured store
python -m app.eval --constraints FILE               # the labelled constraint queries
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from app.core.config import get_settings
from app.core.logging import configure_logging
from app.embedding import embedder_for
from app.eval.constraints import (
    DEFAULT_CONSTRAINTS,
    load_constraint_cases,
    report_constraints,
)
from app.eval.data import (
    DEFAULT_PRODUCTS,
    DEFAULT_QRELS,
    DEFAULT_QUERIES,
    load_products,
    load_qrels,
    load_queries,
)
from app.eval.index import WholeTextIndex, build_chunk_index
from app.eval.runner import EvalReport, evaluate
from app.retrieval import Retriever
from app.store import StoreError, open_store

logger = logging.getLogger(__name__)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m app.eval", description=__doc__.split("\n")[0])
    p.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    p.add_argument("--qrels", type=Path, default=DEFAULT_QRELS)
    p.add_argument(
        "--products",
        type=Path,
        default=DEFAULT_PRODUCTS,
        help="catalog the judgments refer to: indexed in memory, and the baseline's texts",
    )
    p.add_argument(
        "--use-store",
        action="store_true",
        help="rank with the configured store (QDRANT_URL/QDRANT_PATH) instead of a fresh index",
    )
    p.add_argument(
        "--constraints",
        type=Path,
        default=DEFAULT_CONSTRAINTS,
        help="labelled constraint queries: parse accuracy and budget violations",
    )
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--per-query", action="store_true", help="print every query's two scores")
    return p.parse_args(argv)


def _print(report: EvalReport, per_query: bool) -> None:
    if per_query:
        for qid, (r, b) in sorted(report.per_query.items()):
            print(f"{qid}\tretriever {r:.4f}\tbaseline {b:.4f}")
    k = report.k
    print(f"queries judged           {len(report.per_query)}")
    print(f"nDCG@{k} chunked+grouped  {report.retriever:.4f}")
    print(f"nDCG@{k} whole-text dense {report.baseline:.4f}")
    print(f"difference               {report.retriever - report.baseline:+.4f}")


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    settings = get_settings()
    configure_logging(settings.log_level)
    try:
        queries, qrels = load_queries(args.queries), load_qrels(args.qrels)
        products = load_products(args.products)
        cases = load_constraint_cases(args.constraints)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: cannot read eval files: {e}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    embedder = embedder_for(settings)
    try:
        store = open_store(settings) if args.use_store else None
        if store is None:
            store = build_chunk_index(products, settings, embedder)
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        retriever = Retriever(embedder, store, settings)
        report = evaluate(queries, qrels, retriever, WholeTextIndex(products, embedder), k=args.k)
        constraint_lines = report_constraints(cases, queries, qrels, store, retriever, args.k)
    finally:
        store.close()
    print(
        f"model {embedder.model_id}, chunks <= {settings.max_chunk_tokens} tokens "
        f"(overlap {settings.chunk_overlap_tokens}), threshold {settings.similarity_threshold}, "
        f"{len(products)} products, {time.perf_counter() - started:.1f}s"
    )
    _print(report, args.per_query)
    print("\n".join(constraint_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
