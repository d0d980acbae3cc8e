"""The manifest of a trained model folder: what was trained, from what, and how it scored.

Held-out figures are condensed nDCG@10 per fold (app.learn.heldout). Per fold, `base` is
today's service (the packaged encoder; `service` = the settings' fusion, `dense` = the
encoder alone) and `learned_encoder` the fine-tuned encoder, both on the folds the
fine-tune was measured on (folds it never trained on; every fold with `--no-encoder`). The
summary compares the two on exactly those folds' queries.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

from app.learn.heldout import DEPTH, K, Scores
from app.learn.judgments import Folds, Judgments
from app.learned import MANIFEST, MANIFEST_FORMAT

METRIC = {
    "catalog": f"condensed nDCG@{K} over the top {DEPTH}, threshold 0, of the whole judged "
    "catalog (app.eval's index); service = the settings' fusion through the service's "
    "retriever, dense = the encoder alone, ranked exactly (a product by its best chunk's "
    "cosine)",
    "judged": f"condensed nDCG@{K} of the dense ranking: each query's judged products by "
    "their best chunk's cosine (the whole catalog's dense ranking condensed, no top-100 cut); "
    "no fusion measured",
}
HONESTY = "a fold's learned figure only from an encoder that never trained on its queries"


def peak_rss_mb() -> float | None:
    """This process's peak resident memory (VmHWM), or None off Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _mean(scores: dict[str, float], qids: set[str]) -> float:
    return round(statistics.fmean(v for q, v in scores.items() if q in qids), 4)


def _paired_se(base: dict[str, float], learned: dict[str, float], qids: set[str]) -> float | None:
    """The standard error of the mean per-query gain: how far the gain could move on
    another draw of as many queries (None under two queries)."""
    gains = [learned[q] - base[q] for q in qids if q in base and q in learned]
    if len(gains) < 2:
        return None
    return round(statistics.stdev(gains) / math.sqrt(len(gains)), 4)


def heldout_section(
    measure: str, folds: Folds, base: Scores, learned: dict[int, Scores]
) -> dict[str, Any]:
    """Per fold: today's service and (where measured) the fine-tuned encoder; a summary."""
    rows = []
    for fold in range(folds.k):
        row: dict[str, Any] = {"fold": fold, "queries": len(folds.qids(fold))}
        if means := base.fold_means(folds, fold):
            row["base"] = means
        if fold in learned:
            row["learned_encoder"] = learned[fold].fold_means(folds, fold)
        rows.append(row)
    measured = sorted(learned)
    qids = set().union(*(folds.qids(f) for f in measured)) if measured else set()
    summary: dict[str, Any] = {"folds": measured, "queries": len(qids)}
    for mode in base.per_query:
        summary[f"base_{mode}"] = _mean(base.per_query[mode], qids) if qids else None
        if qids:
            merged = {q: v for f in measured for q, v in learned[f].per_query[mode].items()}
            summary[f"learned_{mode}"] = _mean(merged, qids)
            summary[f"gain_{mode}"] = round(summary[f"learned_{mode}"] - summary[f"base_{mode}"], 4)
            summary[f"gain_{mode}_se"] = _paired_se(base.per_query[mode], merged, qids)
    if not qids:
        summary["base_all_folds"] = {
            mode: _mean(scores, set(folds.of)) for mode, scores in base.per_query.items()
        }
    return {
        "measure": measure,
        "metric": METRIC[measure],
        "held_out": HONESTY,
        "folds": rows,
        "summary": summary,
    }


def build_manifest(
    *,
    measure: str,
    judgments: Judgments,
    folds: Folds,
    base_model: str,
    base_scores: Scores,
    learned_scores: dict[int, Scores],
    encoder: dict[str, Any],
    ranker: dict[str, Any] | None,
    run: dict[str, Any],
) -> dict[str, Any]:
    judged = sum(len(g) for g in judgments.qrels.values())
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "base_model": base_model,
        "data": {
            "judgments": str(judgments.root),
            "fingerprint": judgments.fingerprint,
            "products": len(judgments.products),
            "queries": len(judgments.queries),
            "judgments_count": judged,
            "top_grade": judgments.top_grade,
        },
        "folds": {
            "k": folds.k,
            "by": "sha256(qid) mod k (app.eval.folds.fold_of)",
            "queries": [len(folds.qids(f)) for f in range(folds.k)],
        },
        "heldout": heldout_section(measure, folds, base_scores, learned_scores),
        "run": run,
    }
    if encoder:
        manifest["encoder"] = encoder
    if ranker is not None:
        manifest["ranker"] = ranker
    return manifest


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    """Write folder/manifest.json atomically."""
    path = folder / MANIFEST
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".json.tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    return path
