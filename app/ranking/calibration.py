"""Ranker score -> P(relevant): isotonic regression, fitted on out-of-fold scores.

Isotonic (pool adjacent violators) rather than Platt: a lambdarank score is a ranking
margin, not a log-odds, and nothing says its relation to relevance is a sigmoid; isotonic
only assumes "a higher score is not less likely relevant". Stored as the fitted step
function's knots (calibration.json) and read back by linear interpolation between them,
clamped at both ends: monotone and inside [0, 1] by construction.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Calibration:
    """Knots of a non-decreasing map from ranker score to probability."""

    x: tuple[float, ...]
    y: tuple[float, ...]

    def __call__(self, scores: Floats) -> Floats:
        return np.interp(scores, self.x, self.y)

    def to_json(self) -> dict[str, Any]:
        return {"method": "isotonic", "x": list(self.x), "y": list(self.y)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        """Raises ValueError on anything but isotonic knots, non-decreasing, y in [0, 1]."""
        if data.get("method") != "isotonic":
            raise ValueError(f"calibration method {data.get('method')!r} is not 'isotonic'")
        x = tuple(float(v) for v in data["x"])
        y = tuple(float(v) for v in data["y"])
        if not x or len(x) != len(y):
            raise ValueError("calibration needs as many x as y knots, at least one")
        if any(b < a for a, b in itertools.pairwise(x)) or any(
            b < a for a, b in itertools.pairwise(y)
        ):
            raise ValueError("calibration knots must be non-decreasing")
        if y[0] < 0 or y[-1] > 1:
            raise ValueError("calibrated probabilities must lie in [0, 1]")
        return cls(x, y)


def fit_isotonic(scores: Sequence[float] | Floats, labels: Sequence[float] | Floats) -> Calibration:
    """The least-squares non-decreasing fit of `labels` (0/1) on `scores` (PAV).

    Ties in score are pooled first, so equal scores get one probability.
    """
    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(labels, dtype=np.float64)
    if s.size == 0:
        raise ValueError("no scores to calibrate on")
    order = np.argsort(s, kind="mergesort")
    s, t = s[order], t[order]
    uniq, start = np.unique(s, return_index=True)
    sums = np.add.reduceat(t, start)
    counts = np.diff(np.append(start, s.size)).astype(np.float64)
    # Blocks: [sum, count, first x, last x]; merge while a block's mean is below the last's.
    means: list[float] = []
    weights: list[float] = []
    lo: list[float] = []
    hi: list[float] = []
    for x, total, n in zip(uniq, sums, counts, strict=True):
        means.append(total / n)
        weights.append(n)
        lo.append(float(x))
        hi.append(float(x))
        while len(means) > 1 and means[-2] > means[-1]:
            w = weights[-2] + weights[-1]
            m = (means[-2] * weights[-2] + means[-1] * weights[-1]) / w
            means[-2:], weights[-2:] = [m], [w]
            lo[-2:], hi[-2:] = [lo[-2]], [hi[-1]]
    xs: list[float] = []
    ys: list[float] = []
    for m, a, b in zip(means, lo, hi, strict=True):
        xs.append(a)
        ys.append(m)
        if b > a:
            xs.append(b)
            ys.append(m)
    return Calibration(tuple(xs), tuple(float(min(max(v, 0.0), 1.0)) for v in ys))
