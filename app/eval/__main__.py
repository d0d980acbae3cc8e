"""CLI: condensed nDCG@10 of dense, BM25, the service's ranking and `/recommend`, side by side.

python -m app.eval                                  # demo catalog and its 30 queries
python -m app.eval --dataset ../shared/eval/homedepot-dev
python -m app.eval --dataset D --model MODEL_DIR --folds 5 --fold 0
python -m app.eval --queries Q --qrels R --products FILE
python -m app.eval --constraints FILE               # the labelled constraint queries
python -m app.eval --fusion rrf --rrf-k 60          # a comparison fusion beside the service
python -m app.eval --dataset D --http               # and the real service asked over HTTP

All rankings run on ONE index of the catalog's chunks, written the way the sync writes
them (dense + BM25 in the embedded engine): `dense` and `bm25` are the two branches alone,
`service` is what the settings select (RETRIEVAL_MODE, default hybrid) and `recommend` is
the `/recommend` path (query understanding, ranking, cut off; app.eval.recommend), printed
with the cut's effect on its top k. `--model` (default LEARNED_MODEL) scores a learned
model: its encoder builds the index and its ranker re-orders `service` and `recommend`
(the first RANKER_CANDIDATES of the top `--depth`, as the service re-orders a page).
`--folds K --fold F` scores only the queries of fold F (app.eval.folds), the ones a model
trained with `python -m app.learn.ranker --holdout F` never saw. The comparison flags
(--fusion, --rrf-k, --fusion-*-weight, --feedback-*) add one more hybrid ranking, named
after its fusion; they are not settings of the service. Dense vectors are cached
on disk by model and text (--cache-dir), so a second run only pays for search. `--http`
starts the service on the same index and asks it every judged query (app.eval.over_http).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import get_args

from app.core.config import Settings, get_settings
from app.core.logging import configure_logging
from app.embedding import embedder_for
from app.embedding.learned import learned_embedder
from app.embedding.onnx_query import query_encoder_for
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
    EvalQuery,
    load_products,
    load_qrels,
    load_queries,
)
from app.eval.folds import fold_of
from app.eval.index import build_chunk_index, seal_chunk_index
from app.eval.over_http import HttpReport, ask_all, compare, print_http, served
from app.eval.recommend import RecommendReport, evaluate_recommend
from app.eval.runner import EvalReport, evaluate
from app.eval.vector_cache import DEFAULT_CACHE_DIR, CachedEmbedder, RememberedQueries
from app.learned import LearnedModelError, load_learned_model
from app.query.category import CategoryVocabulary
from app.query.spelling import read_speller
from app.ranking import Ranker, ranker_for
from app.retrieval import Retriever
from app.retrieval.retriever import QueryEncoder
from app.store import StoreError, VectorStore
from app.store.hybrid import FusionMethod, FusionSpec, RetrievalMode

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
    p.add_argument("--model", type=Path, help="a learned model folder (default: LEARNED_MODEL)")
    p.add_argument("--folds", type=int, default=0, help="k of a k-fold by query (with --fold)")
    p.add_argument("--fold", type=int, help="score only the queries of this fold")
    p.add_argument(
        "--http",
        action="store_true",
        help="also ask every judged query of the real service over HTTP (app.eval.over_http): "
        "what its answers show, scored, and compared with the in-process answers",
    )
    compare = p.add_argument_group("comparison fusion (one more hybrid ranking)")
    compare.add_argument("--fusion", choices=get_args(FusionMethod), help="how it fuses")
    compare.add_argument("--rrf-k", type=int, default=60, help="rrf: k of 1 / (k + rank)")
    compare.add_argument("--fusion-dense-weight", type=float, default=1.0, help="rrf")
    compare.add_argument("--fusion-sparse-weight", type=float, default=1.0, help="rrf")
    compare.add_argument(
        "--feedback-weight",
        type=float,
        default=0.0,
        help="relevance: pseudo-relevance feedback, how far the dense query moves towards "
        "its best products (0: off)",
    )
    compare.add_argument("--feedback-products", type=int, default=5, help="relevance feedback")
    return p.parse_args(argv)


def comparison_fusion(args: argparse.Namespace, settings: Settings) -> FusionSpec | None:
    """The fusion the comparison flags ask for, or None when none was given."""
    if args.fusion is None and not args.feedback_weight:
        return None
    return FusionSpec(
        method=args.fusion or "relevance",
        lexical_weight=settings.fusion_lexical_weight,
        feedback_weight=args.feedback_weight,
        feedback_products=args.feedback_products,
        rrf_k=args.rrf_k,
        dense_weight=args.fusion_dense_weight,
        sparse_weight=args.fusion_sparse_weight,
    )


def _rankings(
    settings: Settings,
    embedder: QueryEncoder,
    store: VectorStore,
    ranker: Ranker | None,
    compared: FusionSpec | None = None,
) -> dict[str, Retriever]:
    modes: dict[str, RetrievalMode] = {
        "dense": "dense",
        "bm25": "sparse",
        "service": settings.retrieval_mode,
    }
    rankings = {
        name: Retriever(
            embedder, store, settings.model_copy(update={"retrieval_mode": mode}), ranker=ranker
        )
        for name, mode in modes.items()
    }
    if compared is not None:
        hybrid = settings.model_copy(update={"retrieval_mode": "hybrid"})
        rankings[_fusion_label(compared)] = Retriever(embedder, store, hybrid, compared)
    return rankings


def _held_out(queries: list[EvalQuery], folds: int, fold: int | None) -> list[EvalQuery]:
    if fold is None:
        return queries
    return [q for q in queries if fold_of(q.qid, folds) == fold]


def _fusion_label(spec: FusionSpec) -> str:
    if spec.method == "relevance":
        feedback = f" feedback {spec.feedback_weight}" if spec.feedback_weight else ""
        return f"relevance {spec.lexical_weight}{feedback}"
    if spec.method == "rrf":
        return f"rrf k={spec.rrf_k}" + (f" w={spec.weights}" if spec.weights else "")
    return spec.method


def _print(report: EvalReport, per_query: bool) -> None:
    names = list(report.per_query)
    if per_query:
        qids = sorted(next(iter(report.per_query.values()), {}))
        for qid in qids:
            print(qid, *(f"{n} {report.per_query[n][qid]:.4f}" for n in names), sep="\t")
    print(f"queries judged  {report.judged_queries}")
    width = max(8, *map(len, names))
    for name in names:
        print(
            f"condensed nDCG@{report.k} {name:<{width}} {report.mean(name):.4f}"
            f"   ({report.seconds[name]:.1f}s)"
        )


# How many flagged queries are printed under each count (the first ones, in query order).
FLAGGED_SHOWN = 10


def _print_recommend(report: RecommendReport, retriever: Retriever) -> None:
    cut = (
        f"P(relevant) < {retriever.min_probability:g}"
        if retriever.ranks_by_probability
        else f"margin {retriever.relevance_margin}"
    )
    print(f"condensed nDCG@{report.k} recommend {report.mean:.4f}   ({report.seconds:.1f}s)")
    k, shown, uncut = report.k, report.shown_mean, report.uncut_mean
    print(f"condensed nDCG@{k} top {k} (cut off) {uncut:.4f}")
    effect = f"(the cut {shown - uncut:+.4f})"
    print(f"condensed nDCG@{k} shown (cut on) in process {shown:.4f} {effect}")
    c = report.cut
    print(
        f"cut ({cut}) on the top {report.k}: judged-relevant removed {c.relevant_removed}/"
        f"{c.relevant} ({c.relevant_share:.1%}), judged-irrelevant removed "
        f"{c.irrelevant_removed}/{c.irrelevant} ({c.irrelevant_share:.1%})"
    )
    for t, e in report.grid.items():
        print(
            f"  at P(relevant) < {t:.2f}: relevant removed {e.relevant_share:.1%}, "
            f"irrelevant removed {e.irrelevant_share:.1%}"
        )
    queries = len(report.per_query)
    for label, flagged in (
        ('"nothing called"', report.not_carried),
        ('"nothing close"', report.no_close_match),
    ):
        print(
            f"answers saying {label}: {len(flagged.queries)} of {queries} queries, "
            f"{flagged.relevant_shown} of them showing a judged-relevant product"
        )
        for query, word in flagged.queries[:FLAGGED_SHOWN]:
            print(f"  {query!r}" + (f" ({word})" if word else ""))


def _ask_the_service(
    index: str,
    learned_model: str,
    queries: list[EvalQuery],
    qrels: dict[str, dict[int, float]],
    recommend: RecommendReport,
) -> HttpReport:
    """The judged queries `recommend` answered, asked of the real service on `index`."""
    judged = [q for q in queries if q.qid in recommend.answers]
    started = time.perf_counter()
    with served(index, learned_model) as url:
        asked = ask_all(url, judged, recommend.k)
    report = compare(judged, asked, recommend.answers, qrels, recommend.k)
    report.seconds = time.perf_counter() - started
    return report


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    settings = get_settings()
    configure_logging(settings.log_level)
    if args.fold is not None and not 0 <= args.fold < args.folds:
        print("error: --fold F needs --folds K with 0 <= F < K", file=sys.stderr)
        return 2
    model_dir = str(args.model) if args.model else settings.learned_model
    try:
        ranker = ranker_for(model_dir)
        model = load_learned_model(model_dir) if model_dir else None
    except LearnedModelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if model is not None and model.encoder_dir is not None:
        settings = settings.model_copy(update={"embedding_model": str(model.encoder_dir)})
    products_path, queries_path, qrels_path = args.products, args.queries, args.qrels
    if args.dataset is not None:
        products_path = args.dataset / PRODUCTS_FILE
        queries_path = args.dataset / QUERIES_FILE
        qrels_path = args.dataset / QRELS_FILE
    try:
        queries, qrels = load_queries(queries_path), load_qrels(qrels_path)
        queries = _held_out(queries, args.folds, args.fold)
        products = load_products(products_path)
        # The constraint set is labelled over the demo catalog only.
        cases = load_constraint_cases(args.constraints) if args.dataset is None else []
    except (OSError, ValueError, KeyError) as e:
        print(f"error: cannot read eval files: {e}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    # A fine-tuned encoder goes by its weights' id (the vector cache's key), not its folder.
    engine = (model and learned_embedder(model, settings)) or embedder_for(settings)
    embedder = CachedEmbedder.wrap(engine, args.cache_dir)
    # Queries embedded as the service embeds them (its answers over --http are these).
    asks = RememberedQueries(query_encoder_for(settings, engine))
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
            rankings = _rankings(settings, asks, store, ranker, comparison_fusion(args, settings))
            report = evaluate(queries, qrels, rankings, k=args.k, depth=args.depth)
            categories = CategoryVocabulary(store, refresh_seconds=3600).get()
            speller = (
                read_speller(store, embedder.tokenizer().get_vocab())
                if settings.query_spelling
                else None
            )
            recommend = evaluate_recommend(
                queries,
                qrels,
                rankings["service"],
                categories,
                k=args.k,
                depth=args.depth,
                speller=speller,
            )
            constraint_lines = (
                report_constraints(
                    cases, queries, qrels, store, Retriever(asks, store, settings), args.k
                )
                if cases
                else []
            )
            if args.http:
                seal_chunk_index(
                    store, settings, embedder, str(products_path), learned_model=model_dir or ""
                )
        finally:
            embedder.save()
            store.close()
        over_http = None
        if args.http:
            try:
                over_http = _ask_the_service(folder, model_dir or "", queries, qrels, recommend)
            except RuntimeError as e:
                print(f"error: {e}", file=sys.stderr)
                return 1
    hybrid = settings.retrieval_mode == "hybrid"
    fused = f" ({_fusion_label(rankings['service'].fusion)})" if hybrid else ""
    print(
        f"model {embedder.model_id}, {len(products)} products (indexed in {indexed:.1f}s), "
        f"service = {settings.retrieval_mode}{fused}"
        + f", threshold {settings.similarity_threshold}, depth {args.depth}"
        + (f", ranker {model_dir}" if ranker is not None else "")
        + (f", fold {args.fold} of {args.folds}" if args.fold is not None else "")
    )
    _print(report, args.per_query)
    _print_recommend(recommend, rankings["service"])
    if over_http is not None:
        print_http(over_http)
    if constraint_lines:
        print("\n".join(constraint_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
