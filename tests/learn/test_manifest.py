"""The held-out summary's spread and the warning `python -m app.learn` prints when a model
ranks below today's service (no training: scores are given), and the service that serves
such a model saying so in /sync/status."""

from __future__ import annotations

import json
import shutil
import statistics
import time
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from app.learn.heldout import Scores
from app.learn.judgments import Folds
from app.learn.manifest import heldout_section
from app.learned import MANIFEST, MANIFEST_FORMAT, load_learned_model, verdict
from tests.fixtures.tables.make_tables import HERE
from tests.live_server import ServerThread

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


def _model_folder(folder: Path, gains: list[float]) -> Path:
    """A learned model of a manifest alone (the packaged encoder, no ranker)."""
    folder.mkdir()
    manifest = {"format": MANIFEST_FORMAT, "heldout": {"summary": _summary(gains)}}
    (folder / MANIFEST).write_text(json.dumps(manifest))
    return folder


def test_a_model_folder_says_what_its_manifest_warns_of(tmp_path: Path) -> None:
    """The service logs this at start for LEARNED_MODEL (app/api/services.py)."""
    for name, gains in (("worse", [-0.1] * 8), ("better", [0.1] * 8)):
        warning = load_learned_model(_model_folder(tmp_path / name, gains)).heldout_warning
        assert (warning is not None) == (name == "worse"), warning


def test_sync_status_shows_why_the_learned_model_may_not_help(tmp_path: Path) -> None:
    """A real uvicorn over the committed `cow_aged` table, LEARNED_MODEL a worse model: the
    operator who reads /sync/status, not only the start-up log, learns of it."""
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    model = _model_folder(tmp_path / "worse", [-0.1] * 8)
    settings = Settings(
        hudi_table_path=str(table),
        qdrant_path=str(tmp_path / "edge"),
        learned_model=str(model),
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        sync_lock_dir=str(tmp_path / "locks"),
        data_dir=str(tmp_path / "data"),
        openai_api_key=None,
        api_key=None,
    )
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        deadline = time.monotonic() + 120
        while c.get("/ready").status_code != 200:
            assert time.monotonic() < deadline, c.get("/sync/status").text
            time.sleep(0.2)
        status = c.get("/sync/status").json()
    warning = status["model"]["heldout_warning"]
    assert warning == load_learned_model(model).heldout_warning
    assert "ranks below today's service on 8 held-out queries" in warning


def test_a_manifest_without_the_standard_error_is_warned_of_without_a_judgement_of_noise() -> None:
    summary = {**_summary([-0.1] * 8), "gain_service_se": None}
    warning = verdict(summary)
    assert warning is not None and "gain -0.1000)" in warning
    assert "standard error" not in warning
