"""Train the learned ranker on a judged set: LightGBM lambdarank over the retriever's own
candidates, k-fold by query, calibrated on out-of-fold scores.

    python -m app.learn.ranker --judgments DIR --out MODEL_DIR [--encoder ENC] [--folds 5]
                               [--holdout F] [--depth N]

Per judged query, the search runs as the service runs it: query understanding (the offline
rules), then `Retriever.candidates` at CANDIDATE_DEPTH, then `feature_matrix`: the same code
the service calls, so nothing differs between training and serving. Only judged candidates
are rows (condensed nDCG compares rankings on what was judged; an unjudged product is not a
negative). Labels are the grades; the lambdarank gain of each is 2^grade - 1, the metric's.

Two boosters on the same rows: the order (lambdarank, gain 2^grade - 1) and the
probability (binary: grade >= relevant), because a lambdarank score only orders one query's
candidates and the cut needs a probability that means the same for every query.

The order starts from the fusion: each candidate's starting score is PRIOR_SCALE x its fused
score and the trees learn corrections to it, as many rounds of them as cross-validation
chooses among ROUND_CHOICES. A set too small to teach an order (CrowdFlower's 98 queries,
where a ranker trained from scratch lost to the fusion out of fold: BENCHMARKS.md,
"Learning") then keeps the fusion's order instead of an overfitted one.

Folds: a query's fold is a hash of its qid (`app.eval.folds`). Each fold's models are
trained on the other folds and score its own; the manifest reports each fold's held-out
nDCG@10 of the ranker next to today's fusion on the same queries. The calibration
(isotonic, classifier output -> P(relevant)) is fitted on those out-of-fold outputs, never
on outputs for queries a model saw, and so is the cut's threshold (cut.json; app.learn.cut):
the highest P(relevant) below which the out-of-fold cut loses at most CUT_RELEVANT_BUDGET of
the judged-relevant products in the top 10 of what the service would show (the ranker's
order of the first RANKER_CANDIDATES fused candidates). The saved models are then trained on
every query (or every query outside `--holdout F`, so `python -m app.eval --model
MODEL_DIR --fold F` scores them on queries they never saw).

Relevant means a grade of at least half the set's top grade: Home Depot's grade is the mean
rating - 1 on 1-3, so >= 1 is "raters leaned to relevant"; CrowdFlower's is the median on
1-4 - 1, so >= 2 (1.5 rounded up on an integer scale) is "good" or "perfect", and "somewhat
relevant" is not what a shopper asked for.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from app.core.config import Settings, get_settings
from app.core.logging import configure_logging
from app.embedding import embedder_for
from app.embedding.learned import encoder_embedder
from app.eval.data import (
    PRODUCTS_FILE,
    QRELS_FILE,
    QUERIES_FILE,
    load_products,
    load_qrels,
    load_queries,
)
from app.eval.folds import fold_of
from app.eval.index import build_chunk_index, open_chunk_index
from app.eval.ndcg import condensed_ndcg_at_k
from app.eval.parallel import each_query
from app.eval.vector_cache import DEFAULT_CACHE_DIR, CachedEmbedder
from app.learn.cut import (
    CUT_GRID,
    CUT_RELEVANT_BUDGET,
    choose_cut,
    cut_at,
    nested_cut,
    shown_top,
)
from app.learn.encoder import weights_id
from app.learn.tree_onnx import convert_file
from app.learned import MANIFEST, MANIFEST_FORMAT
from app.query import OfflineQueryParser, plan_filters
from app.query.category import CategoryVocabulary
from app.query.ordering import search_query
from app.query.spelling import Speller, read_speller
from app.ranking.calibration import Calibration, fit_isotonic
from app.ranking.features import FEATURES, FUSED, feature_matrix
from app.ranking.model import (
    BOOSTER_FILES,
    CALIBRATION_FILE,
    CUT_FILE,
    FEATURES_FILE,
    ORDER_FILE,
    prior,
)
from app.ranking.trees import TreeModel
from app.retrieval import Retriever
from app.store.base import ProductHit
from app.sync.progress import Progress

logger = logging.getLogger(__name__)

# Candidates per query the ranker learns from: a little past the RANKER_CANDIDATES the
# service re-orders and cuts, so its rows look like what it serves; 100 (app.eval's depth)
# cost twice the time for the same /recommend (BENCHMARKS.md, "Learning"). The per-fold nDCG
# it reports is over these candidates, not app.eval's top 100.
CANDIDATE_DEPTH = 30
K = 10
# Small trees, slow learning, few rounds: ~20 features and a few thousand queries at most.
# The rounds the order is trained with are chosen out of fold among these; 1 is the fusion
# all but unchanged (LightGBM cannot train 0).
ROUND_CHOICES = (1, 25, 50, 100, 200, 300)
ROUNDS = ROUND_CHOICES[-1]
# The fused scores of a query's top candidates lie ~0.01-0.1 apart: x 20 the pairwise margins
# lambdarank starts from are ~0.2-2, an order the trees can correct but do not start without.
PRIOR_SCALE = 20.0
PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [K],
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_data_in_leaf": 20,
    "feature_fraction": 0.9,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    # One thread: two OpenMP threads spin-wait on a busy 2-core machine, slowing the fit and
    # its neighbours many times over (docs/troubleshooting.md).
    "num_threads": 1,
    "deterministic": True,
    "force_row_wise": True,
    "verbosity": -1,
}
CLASSIFIER_PARAMS: dict[str, Any] = {
    **{k: v for k, v in PARAMS.items() if k not in ("objective", "metric", "eval_at")},
    "objective": "binary",
    "metric": "binary_logloss",
}


@dataclass(frozen=True, slots=True)
class QueryRows:
    """One query's judged candidates: features, grades, and their place in the fusion."""

    qid: str
    fold: int
    features: npt.NDArray[np.float64]
    grades: npt.NDArray[np.float64]
    product_ids: list[int]
    judged: dict[int, float]  # every judgment of the query (the nDCG's ideal)
    # The first `serving` fused candidates, judged or not (what the service re-orders and
    # cuts), and their grades (NaN: unjudged).
    shown: npt.NDArray[np.float64]
    shown_grades: npt.NDArray[np.float64]


def collect(
    retriever: Retriever,
    queries: Sequence[tuple[str, str]],
    qrels: dict[str, dict[int, float]],
    categories: Sequence[str],
    folds: int,
    serving: int = 30,
    speller: Speller | None = None,
    depth: int = CANDIDATE_DEPTH,
) -> list[QueryRows]:
    """Candidates and features per judged query, through the service's own search path
    (`serving`: RANKER_CANDIDATES, the candidates the service re-orders per request;
    `speller`: the service's, QUERY_SPELLING; `depth`: candidates searched, >= `serving`)."""
    parser = OfflineQueryParser()
    out = []
    progress = Progress(logger, "ranker candidates", len(queries))

    def searched(text: str) -> tuple[list[ProductHit], npt.NDArray[np.float64]]:
        parsed = parser.parse(text, categories, speller)
        plan = plan_filters(parsed, None)
        flt = None if plan.search_filter.is_empty else plan.search_filter
        query = search_query(parsed.search_text)  # the words the service matches, too
        hits = retriever.candidates(query, depth, flt)
        return hits, feature_matrix(query.words, flt, hits)

    found = each_query(searched, [text for _, text in queries])
    for (qid, _), (hits, matrix) in zip(queries, found, strict=True):
        judged = qrels[qid]
        keep = [i for i, h in enumerate(hits) if h.product_id in judged]
        out.append(
            QueryRows(
                qid,
                fold_of(qid, folds),
                matrix[keep],
                np.array([judged[hits[i].product_id] for i in keep], dtype=np.float64),
                [hits[i].product_id for i in keep],
                judged,
                matrix[:serving],
                np.array([judged.get(h.product_id, np.nan) for h in hits[:serving]]),
            )
        )
        progress.advance(1)
    return out


def _stack(rows: Sequence[QueryRows]) -> tuple[Any, Any, list[int]]:
    x = np.vstack([r.features for r in rows]) if rows else np.zeros((0, len(FEATURES)))
    y = np.concatenate([r.grades for r in rows]) if rows else np.zeros(0)
    return x, y, [len(r.grades) for r in rows]


def train_booster(
    rows: Sequence[QueryRows], grade_levels: list[float], seed: int, rounds: int = ROUNDS
) -> Any:
    """A lambdarank booster of corrections to the fusion's order (`order_scores`) on the
    queries' rows (queries with < 2 judged rows teach no order and are left out)."""
    import lightgbm as lgb

    usable = [r for r in rows if len(r.grades) >= 2]
    x, y, groups = _stack(usable)
    labels = np.searchsorted(grade_levels, y)
    params = {
        **PARAMS,
        "seed": seed,
        "label_gain": [2.0**g - 1.0 for g in grade_levels],
        "min_data_in_leaf": min(PARAMS["min_data_in_leaf"], max(len(y) // 50, 2)),
    }
    data = lgb.Dataset(
        x, label=labels, group=groups, init_score=prior(x, PRIOR_SCALE), feature_name=list(FEATURES)
    )
    return lgb.train(params, data, num_boost_round=rounds)


def order_scores(booster: Any, x: npt.NDArray[np.float64], rounds: int) -> Any:
    """The order's scores after `rounds` of the booster's corrections (as Ranker.scores)."""
    if not len(x):
        return np.zeros(0)
    corrections = np.asarray(booster.predict(x, num_iteration=rounds), dtype=np.float64)
    return corrections + prior(x, PRIOR_SCALE)


def train_classifier(rows: Sequence[QueryRows], relevant: float, seed: int) -> Any:
    """A binary booster: P(grade >= relevant) per row, before calibration."""
    import lightgbm as lgb

    x, y, _ = _stack(rows)
    params = {
        **CLASSIFIER_PARAMS,
        "seed": seed,
        "min_data_in_leaf": min(PARAMS["min_data_in_leaf"], max(len(y) // 50, 2)),
    }
    data = lgb.Dataset(x, label=(y >= relevant).astype(np.float64), feature_name=list(FEATURES))
    return lgb.train(params, data, num_boost_round=ROUNDS)


def _predict(booster: Any, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.asarray(booster.predict(x), dtype=np.float64) if len(x) else np.zeros(0)


def _ndcg(order: Sequence[int], rows: QueryRows) -> float:
    """Condensed nDCG@K of the query's judged candidates in `order`, against every
    judgment (a judged product the retrieval missed counts, as in app.eval)."""
    return condensed_ndcg_at_k([rows.product_ids[i] for i in order], rows.judged, K)


def calibration_quality(
    calibration: Calibration, scores: npt.NDArray[np.float64], relevant: npt.NDArray[np.bool_]
) -> dict[str, float]:
    """Brier score, log loss and expected calibration error (10 equal-count bins) of the
    calibrated out-of-fold probabilities, and the base rate for reference."""
    p = np.clip(calibration(scores), 1e-6, 1 - 1e-6)
    t = relevant.astype(np.float64)
    order = np.argsort(p)
    ece = 0.0
    for part in np.array_split(order, 10):
        if len(part):
            ece += len(part) / len(p) * abs(float(p[part].mean() - t[part].mean()))
    base = float(t.mean())
    return {
        "brier": float(np.mean((p - t) ** 2)),
        "brier_base_rate": float(np.mean((base - t) ** 2)),
        "log_loss": float(-np.mean(t * np.log(p) + (1 - t) * np.log(1 - p))),
        "ece": ece,
        "base_rate": base,
    }


def fit(
    rows: Sequence[QueryRows], folds: int, seed: int, top_grade: float, holdout: int | None
) -> tuple[Trained, dict[str, Any]]:
    """Cross-validate, calibrate on out-of-fold scores, train the model to save."""
    relevant = top_grade / 2
    levels = sorted({float(g) for r in rows for g in r.grades})
    outputs: dict[str, npt.NDArray[np.float64]] = {}  # the classifier's, out of fold
    shown: dict[str, npt.NDArray[np.float64]] = {}  # the classifier's, on the shown candidates
    per_fold: list[dict[str, Any]] = []
    used = [f for f in range(folds) if f != holdout]
    boosters: dict[int, Any] = {}
    for f in used:
        started = time.perf_counter()
        train = [r for r in rows if r.fold != f and r.fold != holdout]
        test = [r for r in rows if r.fold == f]
        boosters[f] = booster = train_booster(train, levels, seed)
        classifier = train_classifier(train, relevant, seed)
        fusion = []
        ranker: dict[int, list[float]] = {n: [] for n in ROUND_CHOICES}
        for r in test:
            outputs[r.qid] = _predict(classifier, r.features)
            shown[r.qid] = _predict(classifier, r.shown)
            fusion.append(_ndcg(range(len(r.grades)), r))
            for n in ROUND_CHOICES:
                s = order_scores(booster, r.features, n)
                ranker[n].append(_ndcg(np.argsort(-s, kind="stable").tolist(), r))
        per_fold.append(
            {
                "fold": f,
                "queries": len(test),
                "ndcg_fusion": statistics.fmean(fusion) if fusion else 0.0,
                "ndcg_by_rounds": {n: statistics.fmean(v) if v else 0.0 for n, v in ranker.items()},
            }
        )
        logger.info(
            "fold %d/%d: %d held-out queries, nDCG@%d fusion %.4f, ranker by rounds %s (%.1fs)",
            f + 1,
            folds,
            len(test),
            K,
            per_fold[-1]["ndcg_fusion"],
            " ".join(f"{n}:{v:.4f}" for n, v in per_fold[-1]["ndcg_by_rounds"].items()),
            time.perf_counter() - started,
        )
    rounds = choose_rounds(per_fold)
    for p in per_fold:
        p["ndcg_ranker"] = p["ndcg_by_rounds"][rounds]
    scored = [r for r in rows if r.qid in outputs]
    oof = np.concatenate([outputs[r.qid] for r in scored])
    is_relevant = np.concatenate([r.grades >= relevant for r in scored])
    calibration = fit_isotonic(oof, is_relevant)
    tops = [
        shown_top(
            order_scores(boosters[r.fold], r.shown, rounds),
            r.shown_grades,
            calibration(shown[r.qid]),
            K,
        )
        for r in scored
    ]
    cut = choose_cut(tops, relevant)
    held_out_cut = nested_cut([r.fold for r in scored], tops, used, relevant)
    logger.info(
        "cut out of fold: P(relevant) < %.2f removes %.1f%% of the judged-relevant and %.1f%% "
        "of the judged-irrelevant products in the top %d",
        cut["min_probability"],
        100 * cut["relevant_removed"],
        100 * cut["irrelevant_removed"],
        K,
    )
    kept = [r for r in rows if r.fold != holdout]
    final = train_booster(kept, levels, seed, rounds)
    final_classifier = train_classifier(kept, relevant, seed)
    weights = final.feature_importance(importance_type="gain")
    classifier_weights = final_classifier.feature_importance(importance_type="gain")
    report = {
        "objective": "lambdarank",
        "prior": {"feature": FEATURES[FUSED], "scale": PRIOR_SCALE},
        "rounds": rounds,
        "rounds_out_of_fold": {
            n: statistics.fmean(p["ndcg_by_rounds"][n] for p in per_fold) for n in ROUND_CHOICES
        },
        "params": {k: v for k, v in PARAMS.items() if k != "num_threads"},
        "seed": seed,
        "features": list(FEATURES),
        "feature_gain": {n: round(float(w), 1) for n, w in zip(FEATURES, weights, strict=True)},
        "classifier_feature_gain": {
            n: round(float(w), 1) for n, w in zip(FEATURES, classifier_weights, strict=True)
        },
        "relevant_grade": relevant,
        "folds": folds,
        "holdout_fold": holdout,
        "per_fold": per_fold,
        "ndcg_fusion": statistics.fmean(p["ndcg_fusion"] for p in per_fold),
        "ndcg_ranker": statistics.fmean(p["ndcg_ranker"] for p in per_fold),
        "calibration": {
            "method": "isotonic",
            "of": "classifier",
            **calibration_quality(calibration, oof, is_relevant),
        },
        "cut": {"budget_relevant_removed": CUT_RELEVANT_BUDGET, **cut},
        "cut_held_out": held_out_cut,
        "cut_out_of_fold": [cut_at(tops, relevant, t) for t in CUT_GRID],
        "rows": int(sum(len(r.grades) for r in rows)),
        "queries": len(rows),
    }
    return Trained(final, final_classifier, calibration, cut["min_probability"]), report


def choose_rounds(per_fold: Sequence[dict[str, Any]]) -> int:
    """The ROUND_CHOICES entry with the best mean out-of-fold nDCG among those whose gain
    over the fewest rounds, paired by fold, exceeds its own standard error; else the fewest
    (the fusion's order). A mean alone picks noise on a small set: on CrowdFlower the best
    mean across folds 1-4 lost to one round on the held-out fold."""
    first = ROUND_CHOICES[0]
    mean = {n: statistics.fmean(p["ndcg_by_rounds"][n] for p in per_fold) for n in ROUND_CHOICES}
    trusted = [first]
    for n in ROUND_CHOICES[1:]:
        gains = [p["ndcg_by_rounds"][n] - p["ndcg_by_rounds"][first] for p in per_fold]
        spread = statistics.stdev(gains) / len(gains) ** 0.5 if len(gains) > 1 else math.inf
        if statistics.fmean(gains) > spread:
            trusted.append(n)
    return max(trusted, key=lambda n: (mean[n], -n))


@dataclass(frozen=True, slots=True)
class Trained:
    booster: Any
    classifier: Any
    calibration: Calibration
    min_probability: float


def save_ranker(folder: Path, trained: Trained, check_rows: npt.NDArray[np.float64]) -> None:
    """Write the folder the service loads: each booster as LightGBM's text and as the ONNX
    file it serves, the second checked against LightGBM on `check_rows` (the training rows):
    the service's scores must be the ones cross-validation chose the rounds and cut by."""
    folder.mkdir(parents=True, exist_ok=True)
    for booster, (text_file, onnx_file) in zip(
        (trained.booster, trained.classifier), BOOSTER_FILES, strict=True
    ):
        booster.save_model(str(folder / text_file))
        convert_file(folder / text_file, folder / onnx_file)
        served = TreeModel(folder / onnx_file).predict(check_rows)
        trained_scores = _predict(booster, check_rows)
        if not np.array_equal(served, trained_scores):
            worst = float(np.max(np.abs(served - trained_scores)))
            raise RuntimeError(f"{onnx_file} scores differ from LightGBM's by up to {worst:g}")
    (folder / FEATURES_FILE).write_text(json.dumps(list(FEATURES), indent=1) + "\n")
    (folder / CALIBRATION_FILE).write_text(json.dumps(trained.calibration.to_json()) + "\n")
    order = {"prior_feature": FEATURES[FUSED], "prior_scale": PRIOR_SCALE}
    (folder / ORDER_FILE).write_text(json.dumps(order) + "\n")
    cut = {"min_probability": trained.min_probability, "chosen_by": "out-of-fold cut"}
    (folder / CUT_FILE).write_text(json.dumps(cut) + "\n")


def train_ranker(
    judgments_dir: Path,
    encoder_dir: Path | None,
    out_dir: Path,
    folds: int,
    seed: int,
    settings: Settings,
    *,
    holdout: int | None = None,
    cache_dir: Path = DEFAULT_CACHE_DIR,
    max_queries: int = 0,
    depth: int = CANDIDATE_DEPTH,
    index_dir: Path | None = None,
) -> dict[str, Any]:
    """Train, cross-validate and save a ranker into `out_dir / "ranker"`.

    Args:
        judgments_dir: a folder in the dev-set layout (products.jsonl, queries.jsonl,
            qrels.tsv).
        encoder_dir: the (fine-tuned) encoder the index is built with; None: the
            settings' encoder (the packaged MiniLM by default).
        out_dir: the learned model folder; its `ranker/` is (re)written, nothing else.
        folds: k of the k-fold by query (>= 2).
        seed: LightGBM's seed (training is deterministic given it).
        holdout: a fold left out of all training (for an honest `app.eval --fold`).
        max_queries: train on this many judged queries at most (0: all), a sample by a
            hash of the qid (a budget on a crowded machine).
        cache_dir: the eval's dense vector cache.
        depth: candidates searched per query (at least the settings' RANKER_CANDIDATES).
        index_dir: the catalog already indexed with this encoder (app.learn's held-out
            report leaves it): opened instead of indexed again.

    Returns:
        The manifest's ranker section: per-fold held-out nDCG@10 of the ranker and of
        today's fusion on the same queries, calibration quality, the cut's trade-off.
    """
    if folds < 2:
        raise ValueError(f"folds: need at least 2, got {folds}")
    if depth < settings.ranker_candidates:
        raise ValueError(f"depth {depth} < RANKER_CANDIDATES {settings.ranker_candidates}")
    started = time.perf_counter()
    qrels = load_qrels(judgments_dir / QRELS_FILE)
    queries = [
        (q.qid, q.query) for q in load_queries(judgments_dir / QUERIES_FILE) if qrels.get(q.qid)
    ]
    if holdout is not None:
        # Nothing trains on or is scored on the held-out fold here: not searched at all.
        queries = [q for q in queries if fold_of(q[0], folds) != holdout]
    if max_queries:
        # A sample that does not depend on the file's order: the first by a hash of the qid.
        queries = sorted(queries, key=lambda q: hashlib.sha256(q[0].encode()).hexdigest())
        queries = queries[:max_queries]
    products = load_products(judgments_dir / PRODUCTS_FILE)
    top_grade = max(g for grades in qrels.values() for g in grades.values())
    base = settings.model_copy(update={"learned_model": ""})
    if encoder_dir is not None:
        base = base.model_copy(update={"embedding_model": str(encoder_dir)})
        # By its weights' id and with its own ONNX exports: a folder's name ("encoder") is
        # the same for every fine-tune, and would share one vector cache and one export.
        engine = encoder_embedder(encoder_dir, weights_id(encoder_dir), base)
    else:
        engine = embedder_for(base)
    embedder = CachedEmbedder.wrap(engine, cache_dir)
    with contextlib.ExitStack() as stack:
        if index_dir is not None:
            store = open_chunk_index(base, embedder, str(index_dir))
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="ranker-index-"))
            store = build_chunk_index(products, base, embedder, path=folder)
            embedder.save()
        try:
            categories = sorted(CategoryVocabulary(store, refresh_seconds=3600).get())
            # The fused order the ranker re-orders: today's service, whatever the settings say.
            retriever = Retriever(
                embedder,
                store,
                base.model_copy(update={"retrieval_mode": "hybrid", "fusion": "relevance"}),
            )
            speller = (
                read_speller(store, embedder.tokenizer().get_vocab())
                if base.query_spelling
                else None
            )
            rows = collect(
                retriever,
                queries,
                qrels,
                categories,
                folds,
                serving=base.ranker_candidates,
                speller=speller,
                depth=depth,
            )
        finally:
            embedder.save()
            store.close()
    collected = time.perf_counter() - started
    trained, report = fit(rows, folds, seed, top_grade, holdout)
    save_ranker(out_dir / "ranker", trained, _stack(rows)[0])
    report["encoder"] = str(encoder_dir) if encoder_dir else embedder.model_id
    report["candidate_depth"] = depth
    report["seconds"] = {"candidates": collected, "total": time.perf_counter() - started}
    return report


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m app.learn.ranker", description=__doc__.split("\n")[0]
    )
    p.add_argument("--judgments", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True, help="the learned model folder")
    p.add_argument("--encoder", type=Path, help="a sentence-transformers folder (default: base)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--holdout", type=int, help="a fold no model trains on (see app.eval --fold)")
    p.add_argument(
        "--max-queries", type=int, default=0, help="a sample of the judged queries (0: all)"
    )
    p.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    p.add_argument(
        "--depth", type=int, default=CANDIDATE_DEPTH, help="candidates searched per query"
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Train alone; writes MODEL_DIR/manifest.json with the ranker section when the folder
    has no manifest yet (`python -m app.learn` writes the whole one)."""
    args = _parse(argv)
    settings = get_settings()
    configure_logging(settings.log_level)
    report = train_ranker(
        args.judgments,
        args.encoder,
        args.out,
        args.folds,
        args.seed,
        settings,
        holdout=args.holdout,
        max_queries=args.max_queries,
        cache_dir=args.cache_dir,
        depth=args.depth,
    )
    manifest_path = args.out / MANIFEST
    manifest: dict[str, Any] = {"format": MANIFEST_FORMAT, "judgments": str(args.judgments)}
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["ranker"] = report
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    for f in report["per_fold"]:
        print(
            f"fold {f['fold']}: {f['queries']} queries  nDCG@{K} fusion {f['ndcg_fusion']:.4f}"
            f"  ranker {f['ndcg_ranker']:.4f}"
        )
    print(f"mean: fusion {report['ndcg_fusion']:.4f}  ranker {report['ndcg_ranker']:.4f}")
    print("calibration:", json.dumps(report["calibration"]))
    cut = report["cut"]
    print(
        f"chosen cut P < {cut['min_probability']:.2f}: relevant removed "
        f"{cut['relevant_removed']:.3f}, irrelevant removed {cut['irrelevant_removed']:.3f}"
    )
    held = report["cut_held_out"]["pooled"]
    print(
        f"cut chosen without the fold it is judged on: relevant removed "
        f"{held['relevant_removed']:.3f}, irrelevant removed {held['irrelevant_removed']:.3f}"
    )
    for row in report["cut_out_of_fold"]:
        print(
            f"cut P < {row['min_probability']:.2f}: relevant removed "
            f"{row['relevant_removed']:.3f}, irrelevant removed {row['irrelevant_removed']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
