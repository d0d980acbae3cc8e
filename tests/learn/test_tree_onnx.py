"""LightGBM models trained here, converted to ONNX and run as the service runs them: the
same scores bit for bit (NaN both where a split learnt a side for it and where it did not,
one-leaf trees, a binary model's sigmoid); what cannot be converted exactly is refused;
a ranker folder without its ONNX files is refused with the command that makes them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import numpy.typing as npt
import pytest

from app.learn.tree_onnx import UnsupportedModelError, convert_file, lightgbm_text_to_onnx
from app.learn.tree_onnx import main as convert_main
from app.learned import LearnedModelError
from app.ranking.features import FEATURES
from app.ranking.model import Ranker
from app.ranking.trees import TreeModel

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 6
BASE = {"num_leaves": 15, "learning_rate": 0.1, "min_data_in_leaf": 5, "verbosity": -1,
        "num_threads": 1, "deterministic": True, "seed": 3}  # fmt: skip


def _data(rows: int, seed: int) -> npt.NDArray[np.float64]:
    """Column 0 is NaN in a fifth of the rows (its splits learn a side for NaN); column 1
    is often exactly 0.0; the rest are plain."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, WIDTH))
    x[rng.random(rows) < 0.2, 0] = np.nan
    x[rng.random(rows) < 0.3, 1] = 0.0
    return x


def _label(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return (np.nan_to_num(x[:, 0], nan=1.0) + x[:, 1] * x[:, 2] > 0.2).astype(np.float64)


def _served(booster: Any, tmp_path: Path, name: str) -> TreeModel:
    booster.save_model(str(tmp_path / f"{name}.txt"))
    convert_file(tmp_path / f"{name}.txt", tmp_path / f"{name}.onnx")
    return TreeModel(tmp_path / f"{name}.onnx")


def _queries(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Unseen rows, NaN in every column (the splits of columns 1-5 learnt no NaN side)."""
    x = x.copy()
    x[::3, 3] = np.nan
    x[::4, 1:] = np.nan
    return x


def test_a_binary_model_serves_lightgbms_probabilities_exactly(tmp_path: Path) -> None:
    x = _data(2_000, seed=1)
    booster = lgb.train({**BASE, "objective": "binary"}, lgb.Dataset(x, _label(x)), 60)
    served = _served(booster, tmp_path, "classifier")
    queries = _queries(_data(500, seed=2))
    assert served.num_features == WIDTH
    assert np.array_equal(served.predict(queries), booster.predict(queries))
    assert served.predict(np.zeros((0, WIDTH))).shape == (0,)


def test_a_lambdarank_model_serves_lightgbms_raw_scores_exactly(tmp_path: Path) -> None:
    x = _data(2_000, seed=4)
    grades = np.clip(np.round(_label(x) * 2 + np.nan_to_num(x[:, 3])), 0, 3)
    data = lgb.Dataset(x, grades, group=[20] * 100)
    booster = lgb.train({**BASE, "objective": "lambdarank"}, data, 80)
    served = _served(booster, tmp_path, "model")
    queries = _queries(_data(500, seed=5))
    assert np.array_equal(served.predict(queries), booster.predict(queries))


def test_one_leaf_trees_are_served_as_their_leaf(tmp_path: Path) -> None:
    """Constant labels: LightGBM grows trees of one leaf, which ONNX cannot root at a leaf."""
    x = _data(200, seed=6)
    booster = lgb.train({**BASE, "objective": "regression"}, lgb.Dataset(x, np.full(200, 0.7)), 3)
    text = booster.model_to_string()
    assert "num_leaves=1" in text
    served = _served(booster, tmp_path, "flat")
    assert np.array_equal(served.predict(_queries(x)), booster.predict(_queries(x)))


@pytest.mark.parametrize(
    ("params", "dataset_args"),
    [
        ({"zero_as_missing": True}, {}),
        ({"min_data_per_group": 5, "cat_smooth": 1}, {"categorical_feature": [4]}),
        ({"linear_tree": True}, {}),
    ],
    ids=["zero-as-missing", "categorical", "linear"],
)
def test_what_cannot_be_served_exactly_is_refused(
    params: dict[str, Any], dataset_args: dict[str, Any]
) -> None:
    x = _data(1_000, seed=7)
    x[:, 4] = np.abs(np.round(x[:, 4] * 3))  # small non-negative integers: categories
    x[:, 0] = np.nan_to_num(x[:, 0])  # linear trees take no NaN
    label = np.isin(x[:, 4], [1, 3]).astype(np.float64)  # a category's signal to split on
    data = lgb.Dataset(x, label, **dataset_args)
    booster = lgb.train({**BASE, "objective": "binary", **params}, data, 10)
    with pytest.raises(UnsupportedModelError):
        lightgbm_text_to_onnx(booster.model_to_string())


def test_a_ranker_trained_before_onnx_serving_is_refused_with_the_command(
    tmp_path: Path,
) -> None:
    """A folder of LightGBM text alone is refused (never served as the plain fusion), and
    the command the error names makes it loadable, with the same scores."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(600, len(FEATURES)))
    grades = (x[:, 0] > 0).astype(np.float64)
    folder = tmp_path / "ranker"
    folder.mkdir()
    ranked = lgb.Dataset(x, grades, group=[20] * 30)
    order = lgb.train({**BASE, "objective": "lambdarank"}, ranked, 20)
    classifier = lgb.train({**BASE, "objective": "binary"}, lgb.Dataset(x, grades), 20)
    order.save_model(str(folder / "model.txt"))
    classifier.save_model(str(folder / "classifier.txt"))
    (folder / "features.json").write_text(json.dumps(list(FEATURES)))
    identity = {"method": "isotonic", "x": [0.0, 1.0], "y": [0.0, 1.0]}
    (folder / "calibration.json").write_text(json.dumps(identity))
    with pytest.raises(LearnedModelError, match=r"python -m app\.learn\.tree_onnx"):
        Ranker.load(folder)
    assert convert_main([str(folder)]) == 0
    ranker = Ranker.load(folder)
    assert np.array_equal(ranker.scores(x), order.predict(x))
    assert np.array_equal(ranker._classifier.predict(x), classifier.predict(x))  # type: ignore[union-attr]
    # The service's process scores with it and never imports LightGBM or SciPy (the API
    # image has neither).
    np.save(tmp_path / "x.npy", x)
    script = (
        "import sys, numpy as np; from app.ranking import Ranker; "
        f"r = Ranker.load({str(folder)!r}); x = np.load({str(tmp_path / 'x.npy')!r}); "
        "print(float(r.scores(x).sum()), float(r.probabilities(x).sum())); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('lightgbm', 'scipy')))"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert ran.stdout.splitlines()[-1] == "[]"
    # A classifier's text without its ONNX file is refused too.
    (folder / "classifier.onnx").unlink()
    with pytest.raises(LearnedModelError, match=r"classifier\.txt has no classifier\.onnx"):
        Ranker.load(folder)
