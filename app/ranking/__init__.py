"""The learned ranker: per-candidate features, LightGBM's trees run by ONNX Runtime, a
calibrated P(relevant).

`Ranker.load(folder)` / `ranker_for(LEARNED_MODEL)` give what the Retriever re-orders its
candidates with; `app.learn.ranker` trains one with the same `feature_matrix`.
"""

from app.ranking.calibration import Calibration, fit_isotonic
from app.ranking.features import FEATURES, feature_matrix
from app.ranking.model import RankedHit, Ranker, ranker_for

__all__ = [
    "FEATURES",
    "Calibration",
    "RankedHit",
    "Ranker",
    "feature_matrix",
    "fit_isotonic",
    "ranker_for",
]
