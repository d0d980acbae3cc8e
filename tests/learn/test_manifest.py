"""The held-out summary's spread and the warning `python -m app.learn` prints when a model
ranks below today's service (no training: scores are given; a real worse fine-tune and the
service's /sync/status: tests/learn/test_learn_encoder.py)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from app.learn.heldout import Scores
from app.learn.judgments import Folds
from app.learn.manifest import heldout_section
from app.learned import MANIFEST, MANIFEST_FORMAT, load_learned_model, verdict

QIDS = [f"q{i}" for i in range(8)]
FOLDS = Folds(2, {q: 0 for q in QIDS})
BASE = [0.9, 0.8, 0.7, 0.6, 0.9, 0.8, 0.7, 0.6]


def _summary(gains: list[float]) -> dict[str, object]:
    base = Scores({"service": dict(zip(QIDS, BASE, strict=True))})
    learned = Scores({"service": {q: b + g for q, b, g in zip(QIDS, BASE, gains, strict=True)}})
    summary: dict[str, object] = heldout_section("catalog", FOLDS, base, {0: learned})["summary"]
    return summary


def test_the_gain_comes_with_its_standard_error_over_the_queries() -> None:
    gains = [0.1, -0.05, 0.0, 0.2, 0.05, -0.1, 0.0, 0.1]
    summary = _summary(gains)
    assert summary["gain_service"] == pytest.approx(statistics.fmean(gains), abs=1e-4)
    se = statistics.stdev(gains) / len(gains) ** 0.5
    assert summary["gain_service_se"] == pytest.approx(se, abs=1e-4)


def test_a_model_at_or_above_todays_service_gets_no_warning() -> None:
    assert verdict(_summary([0.02] * 8)) is None
    assert verdict(_summary([0.0] * 8)) is None


def test_a_model_below_within_its_noise_is_called_indistinguishable() -> None:
    warning = verdict(_summary([0.1, -0.2, 0.1, -0.2, 0.1, -0.2, 0.1, -0.1]))
    assert warning is not None
    assert "ranks below today's service on 8 held-out queries" in warning
    assert "gain -0.0375 ± 0.0532" in warning
    assert "cannot tell the two apart" in warning


def test_a_model_clearly_below_is_called_worse() -> None:
    warning = verdict(_summary([-0.1, -0.12, -0.09, -0.11, -0.1, -0.1, -0.08, -0.1]))
    assert warning is not None and "beyond twice its standard error" in warning
    assert "is not expected to improve the ranking" in warning


def test_a_model_folder_says_what_its_manifest_warns_of(tmp_path: Path) -> None:
    """The service logs this at start for LEARNED_MODEL (app/api/services.py)."""
    for name, gains in (("worse", [-0.1] * 8), ("better", [0.1] * 8)):
        folder = tmp_path / name
        folder.mkdir()
        manifest = {"format": MANIFEST_FORMAT, "heldout": {"summary": _summary(gains)}}
        (folder / MANIFEST).write_text(json.dumps(manifest))
        warning = load_learned_model(folder).heldout_warning
        assert (warning is not None) == (name == "worse"), warning


def test_a_manifest_without_the_standard_error_is_warned_of_without_a_judgement_of_noise() -> None:
    summary = {**_summary([-0.1] * 8), "gain_service_se": None}
    warning = verdict(summary)
    assert warning is not None and "gain -0.1000)" in warning
    assert "standard error" not in warning
