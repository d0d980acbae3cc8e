"""A second real encoder for model-switch tests, laid out as `python -m app.learn` writes one.

Fine-tuning is not needed to test serving: any sentence-transformers folder whose vectors
differ from the packaged MiniLM's will do, as long as it is a real model the service loads
the same way (tokenizer, ONNX export, int8 check). This one is the packaged MiniLM with the
last layer's output projection moved by seeded noise: another vector space (cosines and
rankings change), same layout and size. Its id and ONNX exports are made by app.learn's own
functions (`weights_id`, `export_onnx`), so the service loads it exactly as a trained one.
Nothing here reads a judged set: no dev data, nothing trained on it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.learned import MANIFEST, MANIFEST_FORMAT, ONNX_DIR

NOISE = 0.05
SEED = 33


def make_second_encoder(root: Path) -> Path:
    """Write MODEL_DIR (manifest.json + encoder/) under `root`; returns MODEL_DIR."""
    import torch
    from sentence_transformers import SentenceTransformer

    from app.embedding import resolve_model_path

    model = SentenceTransformer(resolve_model_path(""), device="cpu")
    weight = model[0].auto_model.encoder.layer[-1].output.dense.weight
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        weight.add_(torch.randn(weight.shape, generator=generator) * NOISE)
    from app.learn.encoder import export_onnx, weights_id

    encoder = root / "encoder"
    model.save(str(encoder))
    encoder_id = weights_id(encoder)
    exports = export_onnx(model, encoder_id, encoder / ONNX_DIR)
    manifest = {
        "format": MANIFEST_FORMAT,
        "base_model": "all-MiniLM-L6-v2",
        "encoder": {
            "id": encoder_id,
            "onnx": {name: str(path.relative_to(encoder)) for name, path in exports.items()},
        },
        "training": {"kind": "test fixture", "noise": NOISE, "seed": SEED},
    }
    (root / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return root


# Imported by the test modules that need them (named apart from the fixtures, as
# qdrant_server).
@pytest.fixture(scope="session", name="second_encoder")
def second_encoder_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A learned model folder whose encoder is not the packaged one (see the docstring)."""
    return make_second_encoder(tmp_path_factory.mktemp("learned"))


@pytest.fixture(scope="session", name="model_cache")
def model_cache_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A MODEL_CACHE_DIR for tests that export a second encoder (nothing is written under
    the checkout's data/), holding links to the packaged model's exports already made."""
    from app.core.config import Settings

    cache = tmp_path_factory.mktemp("models")
    made = Path(Settings().model_cache_dir)
    for export in made.glob("all-MiniLM-L6-v2*.onnx") if made.is_dir() else []:
        try:
            (cache / export.name).hardlink_to(export)
        except OSError:
            shutil.copy2(export, cache / export.name)
    return cache
