"""A learned ranker as the service runs it: load the folder, score candidates, re-order.

The folder (app.learned's `ranker/`): `model.txt` (a LightGBM booster), `features.json`
(the feature names in column order; they must be `app.ranking.features.FEATURES`) and
`calibration.json` (ranker score -> P(relevant), app.ranking.calibration). Candidates are
re-ordered by the booster's score (ties keep the retriever's order) and carry the
calibrated probability, which the relevance cut reads.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from app.learned import LearnedModelError, load_learned_model
from app.ranking.calibration import Calibration
from app.ranking.features import FEATURES, feature_matrix
from app.store.base import ProductHit, SearchFilter

logger = logging.getLogger(__name__)

MODEL_FILE, FEATURES_FILE, CALIBRATION_FILE = "model.txt", "features.json", "calibration.json"


@dataclass(frozen=True, slots=True)
class RankedHit:
    hit: ProductHit
    score: float  # the booster's raw score (orders the list)
    probability: float  # calibrated P(relevant)


class Ranker:
    """A loaded ranker; `rank` is thread-safe (LightGBM predicts without shared state)."""

    def __init__(self, booster: Any, calibration: Calibration, folder: Path) -> None:
        self._booster = booster
        self.calibration = calibration
        self.folder = folder

    @classmethod
    def load(cls, folder: str | Path) -> Ranker:
        """Raises LearnedModelError: missing files, other features, bad calibration."""
        import lightgbm as lgb  # only a service with a ranker pays for the import

        root = Path(folder)
        try:
            names = json.loads((root / FEATURES_FILE).read_text(encoding="utf-8"))
            calibration = Calibration.from_json(
                json.loads((root / CALIBRATION_FILE).read_text(encoding="utf-8"))
            )
            booster = lgb.Booster(model_file=str(root / MODEL_FILE))
        except (OSError, ValueError, KeyError, lgb.basic.LightGBMError) as e:
            raise LearnedModelError(root, f"unreadable ranker: {e}") from e
        if tuple(names) != FEATURES:
            raise LearnedModelError(
                root, f"ranker trained on features {names}, this code computes {list(FEATURES)}"
            )
        if booster.num_feature() != len(FEATURES):
            raise LearnedModelError(root, f"model.txt has {booster.num_feature()} features")
        return cls(booster, calibration, root)

    def scores(self, matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if len(matrix) == 0:
            return np.zeros(0)
        # One thread: a request scores a few dozen rows, where threads only add waits.
        return np.asarray(self._booster.predict(matrix, num_threads=1), dtype=np.float64)

    def rank(
        self, text: str, flt: SearchFilter | None, hits: Sequence[ProductHit]
    ) -> list[RankedHit]:
        """The candidates best first by the ranker, each with its P(relevant)."""
        raw = self.scores(feature_matrix(text, flt, hits))
        probability = self.calibration(raw)
        order = np.argsort(-raw, kind="stable")
        return [RankedHit(hits[i], float(raw[i]), float(probability[i])) for i in order]


def ranker_for(learned_model: str) -> Ranker | None:
    """The ranker of the LEARNED_MODEL folder; None when unset or when it has no ranker.

    Raises:
        LearnedModelError: the folder or its ranker cannot be used.
    """
    if not learned_model:
        return None
    model = load_learned_model(learned_model)
    folder = model.ranker_dir
    if folder is None:
        return None
    ranker = Ranker.load(folder)
    logger.info("learned ranker %s (%s)", folder, model.model_id)
    return ranker
