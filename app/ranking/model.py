"""A learned ranker as the service runs it: load the folder, score candidates, re-order.

The folder (app.learned's `ranker/`): `model.onnx` (the order: a LightGBM lambdarank
booster, trained as `model.txt` and converted by app.learn.tree_onnx, which ONNX Runtime
runs, so the service needs no LightGBM), `features.json` (the feature names in column
order; they must be `app.ranking.features.FEATURES`), `calibration.json` (score ->
P(relevant), app.ranking.calibration) and, optionally, `classifier.onnx` (from
`classifier.txt`, a LightGBM binary booster whose output the calibration maps; without it
the calibration maps the order's score) and `cut.json` (`min_probability`: the cut's
threshold chosen by cross-validation) and `order.json` (`prior_scale`: the order's score is
the booster's plus this times the fused score, the starting point its trees were trained to
correct; absent: the booster's alone). Candidates are re-ordered by the order's score (ties
keep the retriever's order) and carry the calibrated probability, which the relevance cut
reads.

Why two boosters: a lambdarank score only orders one query's candidates (its scale moves
from query to query), so a probability read off it cannot say "this product is not a
match" across queries; a binary objective on the same rows can.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from app.learned import LearnedModelError, load_learned_model
from app.ranking.calibration import Calibration
from app.ranking.features import FEATURES, FUSED, feature_matrix
from app.ranking.trees import TreeModel
from app.store.base import ProductHit, SearchFilter

logger = logging.getLogger(__name__)

MODEL_FILE, FEATURES_FILE, CALIBRATION_FILE = "model.txt", "features.json", "calibration.json"
CLASSIFIER_FILE, CUT_FILE, ORDER_FILE = "classifier.txt", "cut.json", "order.json"
MODEL_ONNX, CLASSIFIER_ONNX = "model.onnx", "classifier.onnx"
# Each booster as trained (LightGBM's text) and as served (ONNX).
BOOSTER_FILES = ((MODEL_FILE, MODEL_ONNX), (CLASSIFIER_FILE, CLASSIFIER_ONNX))


@dataclass(frozen=True, slots=True)
class RankedHit:
    hit: ProductHit
    score: float  # the booster's raw score (orders the list)
    probability: float  # calibrated P(relevant)


class Ranker:
    """A loaded ranker; `rank` is thread-safe (ONNX Runtime's `run` is)."""

    def __init__(
        self,
        booster: TreeModel,
        calibration: Calibration,
        folder: Path,
        *,
        classifier: TreeModel | None = None,
        min_probability: float | None = None,
        prior_scale: float = 0.0,
    ) -> None:
        self._booster = booster
        self._classifier = classifier
        self.calibration = calibration
        self.folder = folder
        # The cut's cross-validated threshold (cut.json); None: the setting decides.
        self.min_probability = min_probability
        self.prior_scale = prior_scale

    @classmethod
    def load(cls, folder: str | Path) -> Ranker:
        """Raises LearnedModelError: missing files, other features, bad calibration."""
        root = Path(folder)
        for text_file, onnx_file in BOOSTER_FILES:
            if (root / text_file).is_file() and not (root / onnx_file).is_file():
                raise LearnedModelError(
                    root,
                    f"{text_file} has no {onnx_file} beside it (trained before the service "
                    f"ran rankers on ONNX Runtime): run `python -m app.learn.tree_onnx {root}`",
                )
        try:
            names = json.loads((root / FEATURES_FILE).read_text(encoding="utf-8"))
            calibration = Calibration.from_json(
                json.loads((root / CALIBRATION_FILE).read_text(encoding="utf-8"))
            )
            if not (root / MODEL_ONNX).is_file():
                raise ValueError(f"no {MODEL_ONNX}")
            booster = TreeModel(root / MODEL_ONNX)
            classifier = (
                TreeModel(root / CLASSIFIER_ONNX) if (root / CLASSIFIER_ONNX).is_file() else None
            )
            cut = (
                json.loads((root / CUT_FILE).read_text(encoding="utf-8"))
                if (root / CUT_FILE).is_file()
                else {}
            )
            order = (
                json.loads((root / ORDER_FILE).read_text(encoding="utf-8"))
                if (root / ORDER_FILE).is_file()
                else {}
            )
            if order.get("prior_feature", FEATURES[FUSED]) != FEATURES[FUSED]:
                raise ValueError(f"order.json: a prior on {order['prior_feature']!r}")
            prior_scale = float(order.get("prior_scale", 0.0))
            min_probability = cut.get("min_probability")
            if min_probability is not None and not 0 <= float(min_probability) <= 1:
                raise ValueError(f"cut.json: min_probability {min_probability} not in [0, 1]")
        except (OSError, ValueError, KeyError) as e:
            raise LearnedModelError(root, f"unreadable ranker: {e}") from e
        if tuple(names) != FEATURES:
            raise LearnedModelError(
                root, f"ranker trained on features {names}, this code computes {list(FEATURES)}"
            )
        for name, model in ((MODEL_ONNX, booster), (CLASSIFIER_ONNX, classifier)):
            if model is not None and model.num_features != len(FEATURES):
                raise LearnedModelError(root, f"{name} has {model.num_features} features")
        return cls(
            booster,
            calibration,
            root,
            classifier=classifier,
            min_probability=None if min_probability is None else float(min_probability),
            prior_scale=prior_scale,
        )

    def scores(self, matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """The order's raw scores (higher first)."""
        return self._booster.predict(matrix) + prior(matrix, self.prior_scale)

    def probabilities(
        self, matrix: npt.NDArray[np.float64], scores: npt.NDArray[np.float64] | None = None
    ) -> npt.NDArray[np.float64]:
        """Calibrated P(relevant) per row (`scores`: the order's, if already computed)."""
        if self._classifier is not None:
            return self.calibration(self._classifier.predict(matrix))
        return self.calibration(self.scores(matrix) if scores is None else scores)

    def rank(
        self,
        text: str,
        flt: SearchFilter | None,
        hits: Sequence[ProductHit],
        reorder: int | None = None,
    ) -> list[RankedHit]:
        """The candidates best first by the ranker, each with its P(relevant); with
        `reorder`, only the first `reorder` are re-ordered and the rest follow in their
        order (a deeper page than the ranker serves keeps the top it would serve)."""
        matrix = feature_matrix(text, flt, hits)
        raw = self.scores(matrix)
        probability = self.probabilities(matrix, raw)
        n = len(hits) if reorder is None else min(reorder, len(hits))
        order = [*np.argsort(-raw[:n], kind="stable").tolist(), *range(n, len(hits))]
        return [RankedHit(hits[i], float(raw[i]), float(probability[i])) for i in order]


def prior(matrix: npt.NDArray[np.float64], scale: float) -> npt.NDArray[np.float64]:
    """The order's starting scores, which the booster's trees correct: the fused, scaled."""
    return scale * matrix[:, FUSED]


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
