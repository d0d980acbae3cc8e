"""The ONNX query encoder gives the model's own vectors (so it can stand in for it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from app.embedding.onnx_query import build_onnx_query_encoder


def test_onnx_vectors_equal_sentence_transformers(embedder: Any, tmp_path: Path) -> None:
    encoder = build_onnx_query_encoder(embedder, str(tmp_path))
    assert encoder is not None, "export failed: the service would fall back to torch"
    queries = [
        "wireless headphones for swimming",
        "a gift for a ten year old who likes science",
        "x",
        "espresso machine under 300 with a milk frother " * 20,  # past 256 tokens: truncated
    ]
    np.testing.assert_allclose(encoder.embed(queries), embedder.embed(queries), atol=1e-5)
    assert list(tmp_path.glob("*.onnx")), "export is cached for the next start"
    again = build_onnx_query_encoder(embedder, str(tmp_path))
    assert again is not None
