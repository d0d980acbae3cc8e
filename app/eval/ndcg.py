"""Graded ranking metrics: DCG and nDCG@k, plain and condensed (unjudged ids dropped)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def dcg(grades: Sequence[float]) -> float:
    """Discounted cumulative gain with exponential gain: sum (2^g - 1) / log2(rank + 1)."""
    return float(sum((2.0**g - 1.0) / math.log2(rank + 2) for rank, g in enumerate(grades)))


def ndcg_at_k(ranking: Sequence[int], judged: Mapping[int, float], k: int = 10) -> float:
    """nDCG@k of `ranking` (product ids, best first) against graded judgments.

    Unjudged ids count as grade 0. A query with no positive judgment scores 0.0 (there is
    nothing to find, so no ranking is better than another).
    """
    ideal = dcg(sorted((g for g in judged.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg([judged.get(pid, 0.0) for pid in ranking[:k]]) / ideal


def condensed_ndcg_at_k(ranking: Sequence[int], judged: Mapping[int, float], k: int = 10) -> float:
    """nDCG@k after dropping unjudged ids from the ranking (Sakai's "condensed" list).

    For sparse judgments (a few products judged per query out of tens of thousands) plain
    nDCG counts every good-but-unjudged result as a miss; condensing compares rankings on
    what was actually judged.
    """
    return ndcg_at_k([pid for pid in ranking if pid in judged], judged, k)
