"""CLI: condensed nDCG@10 of dense, BM25 and the service's ranking, side by side.

python -m app.eval                                  # demo catalog and its 30 queries
python -m app.eval --dataset ../shared/eval/homedepot-dev
python -m app.eval --queries Q --qrels R --products FILE
python -m app.eval --constraints FILE               # the labelled constraint queries

All three rankings run on ONE index of the catalog's chunks, written the way the sync
writes them (dense + BM25 in the embedded engine): `dense` and `bm25` are the two
branches alone, `service` is what the settings select (RETRIEVAL_MODE, default hybrid).
Dense vectors are cached on disk by model and text (--cache-dir), so a second run only
pays for search.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

from app.core.config import Settings, get_settings
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
    PRODUCTS_FILE,
    QRELS_FILE,
    QUERIES_FILE,
    load_products,
    load_qrels,
    load_queries,
)
from app.eval.index import build_chunk_index
from app.eval.runner import EvalReport, evaluate
from app.eval.vector_cache import DEFAULT_CACHE_DIR, CachedEmbedder
from app.retrieval import Retriever
from app.store import StoreError, VectorStore
from app.store.hybrid import RetrievalMode

logger = logging.getLogger(__name__)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m app.eval", description=__doc__.split("\n")[0])
    p.add_argument(
        "--dataset",
        type=Path,
        help=f"folder with {PRODUCTS_FILE}, {QUERIES_FILE} and {QRELS_FILE} (wins over the three)",
    )
    p.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    p.add_argument("--qrels", type=Path, default=DEFAULT_QRELS)
    p.add_argument("--products", type=Path, default=DEFAULT_PRODUCTS, help="the judged catalog")
    p.add_argument(
        "--constraints",
        type=Path,
        default=DEFAULT_CONSTRAINTS,
        help="labelled constraint queries over the demo catalog: parse accuracy and budget "
        "violations (skipped with --dataset)",
    )
    p.add_argument("-k", type=int, default=10)
    p.add_argument(
        "--depth",
        type=int,
        default=100,
        help="products ranked per query before unjudged ones are dropped (condensed nDCG)",
    )
    p.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="dense vector cache")
    p.add_argument("--per-query", action="store_true", help="print every query's scores")
    return p.parse_args(argv)


def _rankings(
    settings: Settings, embedder: CachedEmbedder, store: VectorStore
) -> dict[str, Retriever]:
    modes: dict[str, RetrievalMode] = {
        "dense": "dense",
        "bm25": "sparse",
        "service": settings.retrieval_mode,
    }
    return {
        name: Retriever(embedder, store, settings.model_copy(update={"retrieval_mode": mode}))
        for name, mode in modes.items()
    }


def _fusion_label(settings: Settings) -> str:
    if settings.fusion == "relevance":
        return f"relevance, lexical weight {settings.fusion_lexical_weight}"
    return f"{settings.fusion} k={settings.rrf_k}"


def _print(report: EvalReport, per_query: bool) -> None:
    names = list(report.per_query)
    if per_query:
        qids = sorted(next(iter(report.per_query.values()), {}))
        for qid in qids:
            print(qid, *(f"{n} {report.per_query[n][qid]:.4f}" for n in names), sep="\t")
    print(f"queries judged  {report.judged_queries}")
    for name in names:
        print(
            f"condensed nDCG@{report.k} {name:<8} {report.mean(name):.4f}"
            f"   ({report.seconds[name]:.1f}s)"
        )


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    settings = get_settings()
    configure_logging(settings.log_level)
    products_path, queries_path, qrels_path = args.products, args.queries, args.qrels
    if args.dataset is not None:
        products_path = args.dataset / PRODUCTS_FILE
        queries_path = args.dataset / QUERIES_FILE
        qrels_path = args.dataset / QRELS_FILE
    try:
        queries, qrels = load_queries(queries_path), load_qrels(qrels_path)
        products = load_products(products_path)
        # The constraint set is labelled over the demo catalog only.
        cases = load_constraint_cases(args.constraints) if args.dataset is None else []
    except (OSError, ValueError, KeyError) as e:
        print(f"error: cannot read eval files: {e}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    embedder = CachedEmbedder.wrap(embedder_for(settings), args.cache_dir)
    with tempfile.TemporaryDirectory(prefix="eval-index-") as folder:
        try:
            store = build_chunk_index(products, settings, embedder, path=folder)
        except StoreError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        finally:
            embedder.save()
        indexed = time.perf_counter() - started
        try:
            rankings = _rankings(settings, embedder, store)
            report = evaluate(queries, qrels, rankings, k=args.k, depth=args.depth)
            constraint_lines = (
                report_constraints(
                    cases, queries, qrels, store, Retriever(embedder, store, settings), args.k
                )
                if cases
                else []
            )
        finally:
            embedder.save()
            store.close()
    print(
        f"model {embedder.model_id}, {len(products)} products (indexed in {indexed:.1f}s), "
        f"service = {settings.retrieval_mode}"
        + (f" ({_fusion_label(settings)})" if settings.retrieval_mode == "hybrid" else "")
        + f", threshold {settings.similarity_threshold}, depth {args.depth}"
    )
    _print(report, args.per_query)
    if constraint_lines:
        print("\n".join(constraint_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
