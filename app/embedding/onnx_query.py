"""Query embeddings through ONNX Runtime: a fraction of torch's time per query.

The query encoder runs the file the document engine's pick names (`Embedder.query_file`,
app.embedding.choice): the very file the documents are embedded with when they run on ONNX
Runtime (int8 or fp32), so queries and documents stay in one vector space; the int8 export
under OpenVINO bf16 documents when there is one; with torch documents an fp32 export, equal
to torch to 1e-5. It is checked on a probe text against the document engine at start-up (to
`Embedder.query_min_cosine`, else to float32 noise) and falls back to it on a mismatch.

Its session is set for a server: one intra-op thread and no spinning. A query is a few
tokens: a second thread buys little, and spinning workers burn CPU that the sync and other
requests need (`bench/query_cpu.py`; its figures are in git history of BENCHMARKS.md).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from app.core.config import Settings
from app.embedding.model import Embedder
from app.embedding.onnx_encoder import OnnxEncoder, open_session
from app.embedding.onnx_export import export_fp32, exportable

logger = logging.getLogger(__name__)

_PROBE = "waterproof headphones for swimming laps, good value"
# Same vectors to float32 noise; a real mismatch (wrong pooling, extra layers) is >1e-2.
_TOLERANCE = 1e-4
QUERY_THREADS = 1


def build_onnx_query_encoder(embedder: Embedder, cache_dir: str) -> OnnxEncoder | None:
    """An ONNX encoder equal to `embedder` on a probe text, or None (use `embedder`)."""
    try:
        if embedder.onnx is not None:
            path = embedder.query_file or embedder.onnx.model_path
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
        if embedder.query_min_cosine is not None:
            cosine = float(np.sum(mine * theirs))
            if cosine < embedder.query_min_cosine:
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


def query_encoder_for(settings: Settings, embedder: Embedder) -> OnnxEncoder | Embedder:
    """What embeds a query beside `embedder`'s documents: the service's and the eval's, so
    the eval's answers are the service's (QUERY_ENCODER=torch: the document encoder)."""
    if settings.query_encoder == "onnx":
        encoder = build_onnx_query_encoder(embedder, settings.model_cache_dir)
        if encoder is not None:
            return encoder
    return embedder
