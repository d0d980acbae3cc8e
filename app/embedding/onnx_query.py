"""Query embeddings through ONNX Runtime: a fraction of torch's time per query.

The query encoder runs the very file the documents are embedded with when they run on
ONNX (int8 or fp32), so queries and documents stay in one vector space; with torch
documents it runs an fp32 export, equal to torch to 1e-5. With OpenVINO bf16 documents (the
fp32 space) it runs the int8 export when there is one, else their fp32 file: a query is a
few tokens, so reading the weights is its cost, and int8's are a quarter of fp32's; ranking
was unchanged on both dev sets (BENCHMARKS.md, "Queries under bf16 documents"). Either way
it is checked on a probe text against the document encoder at start-up and falls back to it
on a mismatch.

Its session is set for a server: one intra-op thread and no spinning. A query is a few
tokens: a second thread buys little, and spinning workers burn CPU that the sync and other
requests need (BENCHMARKS.md, "Query encoder CPU").
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from app.embedding.model import Embedder
from app.embedding.onnx_encoder import OnnxEncoder, open_session
from app.embedding.onnx_export import export_fp32, exportable, int8_path

logger = logging.getLogger(__name__)

_PROBE = "waterproof headphones for swimming laps, good value"
# Same vectors to float32 noise; a real mismatch (wrong pooling, extra layers) is >1e-2.
_TOLERANCE = 1e-4
# Against bf16 documents, an int8 (or fp32) query: int8's own bound (app.embedding.choice).
_BF16_MIN_COSINE = 0.99
QUERY_THREADS = 1


def build_onnx_query_encoder(embedder: Embedder, cache_dir: str) -> OnnxEncoder | None:
    """An ONNX encoder equal to `embedder` on a probe text, or None (use `embedder`)."""
    try:
        if embedder.onnx is not None:
            path = embedder.onnx.model_path
            if embedder.encoder == "openvino-bf16" and int8_path(path).is_file():
                path = int8_path(path)
        elif (
            embedder.encoder != "torch-cpu"
            or embedder.model is None
            or not exportable(embedder.model)
        ):
            logger.info("query encoder: the document encoder (%s)", embedder.encoder)
            return None
        else:
            path = export_fp32(embedder.model, embedder.model_id, Path(cache_dir))
        session = open_session(path, QUERY_THREADS, spinning=False)
        max_len = embedder.max_seq_tokens + 2
        encoder = OnnxEncoder(session, embedder.tokenizer(), max_len, 1, path)
        mine, theirs = encoder.embed([_PROBE]), embedder.embed([_PROBE])
        if embedder.encoder == "openvino-bf16":
            cosine = float(np.sum(mine * theirs))
            if cosine < _BF16_MIN_COSINE:
                logger.warning("query encoder: %s (ONNX cosine %.4f)", embedder.encoder, cosine)
                return None
            check = f"probe cosine {cosine:.4f}"
        else:
            diff = float(np.abs(mine - theirs).max())
            if diff > _TOLERANCE:
                logger.warning("query encoder: %s (ONNX differs by %.2g)", embedder.encoder, diff)
                return None
            check = f"max diff {diff:.1g}"
        logger.info(
            "query encoder: ONNX Runtime (%s, %d thread, no spinning, %s)",
            path.name,
            QUERY_THREADS,
            check,
        )
        return encoder
    except Exception as e:  # an optional speed-up must never stop the service
        logger.warning("query encoder: %s (ONNX unavailable: %s)", embedder.encoder, e)
        return None
