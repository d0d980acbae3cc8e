"""The learned ranker's cut (app.learn.cut): the threshold chosen within the budget of
judged-relevant products lost, and judged on folds it was not chosen on."""

from __future__ import annotations

import numpy as np
import pytest

from app.learn.cut import CUT_RELEVANT_BUDGET, ShownTop, choose_cut, cut_at, nested_cut, shown_top

RELEVANT = 1.0


def _top(grades: list[float], probability: list[float]) -> ShownTop:
    return ShownTop(np.array(grades), np.array(probability))


def test_the_shown_top_is_the_judged_part_of_the_rankers_first_k() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.7])
    grades = np.array([2.0, np.nan, 0.0, 1.0])  # the best-scored candidate is unjudged
    top = shown_top(scores, grades, [0.8, 0.99, 0.2, 0.6], k=3)
    assert top.grades.tolist() == [1.0, 0.0]  # scores 0.7 then 0.5; 0.1 is past k
    assert top.probability.tolist() == [0.6, 0.2]


def test_cut_at_counts_what_falls_below_the_threshold() -> None:
    tops = [_top([2, 0, 1], [0.9, 0.1, 0.3]), _top([0, 2], [0.4, 0.2])]
    effect = cut_at(tops, RELEVANT, 0.35)
    assert (effect["relevant"], effect["irrelevant"]) == (3, 2)
    assert effect["relevant_removed"] == pytest.approx(2 / 3)
    assert effect["irrelevant_removed"] == pytest.approx(1 / 2)


def test_the_chosen_cut_is_the_highest_within_the_relevant_budget() -> None:
    # 100 relevant at P 0.50..0.985, 20 irrelevant at P 0.10..0.29: a cut at 0.50 removes
    # every irrelevant and no relevant; 0.51 already loses three relevant (3% > 1.5%).
    relevant_p = [0.50 + 0.0049 * i for i in range(100)]
    irrelevant_p = [0.10 + 0.01 * i for i in range(20)]
    tops = [_top([2.0] * 100 + [0.0] * 20, relevant_p + irrelevant_p)]
    chosen = choose_cut(tops, RELEVANT)
    assert chosen["min_probability"] == 0.5
    assert chosen["relevant_removed"] <= CUT_RELEVANT_BUDGET
    assert chosen["irrelevant_removed"] == 1.0
    assert cut_at(tops, RELEVANT, chosen["min_probability"] + 0.01)["relevant_removed"] > (
        CUT_RELEVANT_BUDGET
    )


def test_the_nested_cut_never_chooses_a_folds_threshold_on_that_fold() -> None:
    # Fold 0 would want a high threshold (its relevant are all confident), fold 1 a low
    # one: each fold is cut at what the *other* fold allows.
    fold0 = [_top([2.0] * 50 + [0.0] * 10, [0.9] * 50 + [0.5] * 10)]
    fold1 = [_top([2.0] * 50 + [0.0] * 10, [0.3] * 50 + [0.2] * 10)]
    result = nested_cut([0, 1], fold0 + fold1, [0, 1], RELEVANT)
    by_fold = {r["fold"]: r for r in result["per_fold"]}
    assert by_fold[1]["min_probability"] == choose_cut(fold0, RELEVANT)["min_probability"]
    assert by_fold[0]["min_probability"] == choose_cut(fold1, RELEVANT)["min_probability"]
    # Fold 1 cut at fold 0's high threshold loses all its relevant: the nested figure
    # shows it, where choosing on fold 1 itself would have hidden it.
    assert by_fold[1]["relevant_removed"] == 1.0
    pooled = result["pooled"]
    assert pooled["relevant"] == 100 and pooled["relevant_removed"] == pytest.approx(0.5)
