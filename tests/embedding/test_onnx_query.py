"""The ONNX query encoder gives the document encoder's own vectors (one vector space)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.core.config import DEFAULT_DATA_DIR
from app.embedding import Embedder, load_embedder
from app.embedding.onnx_export import int8_path
from app.embedding.onnx_query import build_onnx_query_encoder

QUERIES = [
    "wireless headphones for swimming",
    "a gift for a ten year old who likes science",
    "x",
    "espresso machine under 300 with a milk frother " * 20,  # past 256 tokens: truncated
]


def test_onnx_query_vectors_equal_torch_documents() -> None:
    # The fp32 export ./scripts/bootstrap.sh cached in data/models (made here if missing).
    embedder = load_embedder(encoder="torch")
    encoder = build_onnx_query_encoder(embedder, str(DEFAULT_DATA_DIR / "models"))
    assert encoder is not None, "export failed: the service would fall back to torch"
    np.testing.assert_allclose(encoder.embed(QUERIES), embedder.embed(QUERIES), atol=1e-5)


# slow: exports the model from scratch (torch.onnx, seconds of CPU).
@pytest.mark.slow
def test_onnx_query_export_from_scratch_is_cached_for_the_next_start(tmp_path: Path) -> None:
    embedder = load_embedder(encoder="torch")
    encoder = build_onnx_query_encoder(embedder, str(tmp_path))
    assert encoder is not None, "export failed: the service would fall back to torch"
    np.testing.assert_allclose(encoder.embed(QUERIES), embedder.embed(QUERIES), atol=1e-5)
    assert list(tmp_path.glob("*.onnx")), "export is cached for the next start"
    again = build_onnx_query_encoder(embedder, str(tmp_path))
    assert again is not None


def test_onnx_query_runs_the_documents_file(embedder: Embedder) -> None:
    """Queries run the documents' own file on ONNX Runtime: with int8 documents the int8
    file (their space, not torch's). With OpenVINO bf16 documents (an AMX CPU's `auto`; the
    fp32 space) the int8 export beside their fp32 file when there is one, else that file:
    within int8's cosine of the documents' engine."""
    encoder = build_onnx_query_encoder(embedder, "/nonexistent/unused")
    assert encoder is not None
    assert embedder.onnx is not None
    assert encoder.threads == 1
    if embedder.encoder == "openvino-bf16":
        fp32 = embedder.onnx.model_path
        want = int8_path(fp32) if int8_path(fp32).is_file() else fp32
        assert encoder.model_path == want
        for q in QUERIES:
            assert float(np.sum(encoder.embed([q]) * embedder.embed([q]))) >= 0.99
        return
    assert encoder.model_path == embedder.onnx.model_path
    for q in QUERIES:
        np.testing.assert_allclose(encoder.embed([q]), embedder.embed([q]), atol=1e-5)
