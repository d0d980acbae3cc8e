"""The ONNX query encoder gives the document encoder's own vectors (one vector space)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from app.embedding import Embedder, load_embedder
from app.embedding.onnx_query import build_onnx_query_encoder

QUERIES = [
    "wireless headphones for swimming",
    "a gift for a ten year old who likes science",
    "x",
    "espresso machine under 300 with a milk frother " * 20,  # past 256 tokens: truncated
]


def test_onnx_query_vectors_equal_torch_documents(tmp_path: Path) -> None:
    embedder = load_embedder(encoder="torch")
    encoder = build_onnx_query_encoder(embedder, str(tmp_path))
    assert encoder is not None, "export failed: the service would fall back to torch"
    np.testing.assert_allclose(encoder.embed(QUERIES), embedder.embed(QUERIES), atol=1e-5)
    assert list(tmp_path.glob("*.onnx")), "export is cached for the next start"
    again = build_onnx_query_encoder(embedder, str(tmp_path))
    assert again is not None


def test_onnx_query_runs_the_int8_documents_model(embedder: Embedder) -> None:
    """With int8 documents, queries run the same int8 file: same space, not torch's."""
    encoder = build_onnx_query_encoder(embedder, "/nonexistent/unused")
    assert encoder is not None
    assert embedder.onnx is not None and encoder.model_path == embedder.onnx.model_path
    assert encoder.threads == 1
    for q in QUERIES:
        np.testing.assert_allclose(encoder.embed([q]), embedder.embed([q]), atol=1e-5)
