"""The relevance cut a learned ranker serves: the P(relevant) below which a candidate is no
match, chosen on out-of-fold probabilities (app.learn.ranker), never on a held-out fold.

The trade-off is measured on what a shopper is shown: per query, the judged products of the
ranker's top K among the candidates the service re-orders (`ShownTop`). The threshold is the
highest of CUT_CHOICES whose cut loses at most CUT_RELEVANT_BUDGET of the judged-relevant
products there; `nested_cut` then judges that choice on folds it was not made on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

# Cut thresholds the manifest reports the trade-off of (out-of-fold, top 10).
CUT_GRID = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7)
# The share of judged-relevant products in the top 10 the chosen cut may lose out of fold:
# under the 2% the issue allows, since a held-out fold varies around the cross-validation.
CUT_RELEVANT_BUDGET = 0.015
# Thresholds the choice is made among.
CUT_CHOICES = tuple(round(0.01 * i, 2) for i in range(1, 96))


@dataclass(frozen=True, slots=True)
class ShownTop:
    """A query's top K as the service shows it: judged grades and P(relevant), in order."""

    grades: npt.NDArray[np.float64]
    probability: npt.NDArray[np.float64]


def shown_top(
    order_scores: npt.NDArray[np.float64],
    shown_grades: npt.NDArray[np.float64],
    p: Any,
    k: int,
) -> ShownTop:
    """The judged products of the ranker's top `k` among a query's shown candidates
    (`shown_grades`: NaN where unjudged; `p`: their P(relevant))."""
    top = np.argsort(-order_scores, kind="stable")[:k]
    judged = top[~np.isnan(shown_grades[top])]
    return ShownTop(shown_grades[judged], np.asarray(p)[judged])


def cut_at(tops: Sequence[ShownTop], relevant: float, t: float) -> dict[str, float]:
    """The share of the judged-relevant and judged-irrelevant products in the tops that a
    cut at P(relevant) < t removes."""
    grades = np.concatenate([s.grades for s in tops]) if tops else np.zeros(0)
    removed = np.concatenate([s.probability for s in tops]) < t if tops else np.zeros(0, bool)
    rel = grades >= relevant
    return {
        "min_probability": t,
        "relevant": int(rel.sum()),
        "irrelevant": int((~rel).sum()),
        "relevant_removed": float((removed & rel).sum() / max(int(rel.sum()), 1)),
        "irrelevant_removed": float((removed & ~rel).sum() / max(int((~rel).sum()), 1)),
    }


def choose_cut(tops: Sequence[ShownTop], relevant: float) -> dict[str, float]:
    """The highest CUT_CHOICES threshold whose out-of-fold cut loses at most
    CUT_RELEVANT_BUDGET of the judged-relevant products (the lowest choice if none does)."""
    best = cut_at(tops, relevant, CUT_CHOICES[0])
    for t in CUT_CHOICES[1:]:
        effect = cut_at(tops, relevant, t)
        if effect["relevant_removed"] > CUT_RELEVANT_BUDGET:
            break
        best = effect
    return best


def nested_cut(
    fold_of_top: Sequence[int], tops: Sequence[ShownTop], folds: Sequence[int], relevant: float
) -> dict[str, Any]:
    """The cut judged on folds its threshold was not chosen on: for each fold, the threshold
    `choose_cut` picks from the other folds' out-of-fold tops, applied to this fold's
    (`fold_of_top`: each top's query's fold)."""
    per_fold: list[dict[str, Any]] = []
    kept: list[ShownTop] = []
    for f in folds:
        mine = [t for q, t in zip(fold_of_top, tops, strict=True) if q == f]
        others = [t for q, t in zip(fold_of_top, tops, strict=True) if q != f]
        if not mine or not others:
            continue
        t = choose_cut(others, relevant)["min_probability"]
        per_fold.append({"fold": f, **cut_at(mine, relevant, t)})
        # Each fold's tops with the probabilities cut at its own threshold, pooled below.
        kept += [ShownTop(x.grades, x.probability - t) for x in mine]
    pooled = {k: v for k, v in cut_at(kept, relevant, 0.0).items() if k != "min_probability"}
    return {"per_fold": per_fold, "pooled": pooled}
