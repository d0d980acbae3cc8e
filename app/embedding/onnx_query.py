"""Query embeddings through an ONNX Runtime export of the same model: ~4 ms instead of ~20 ms.

Only the encoder is exported; tokenization, mean pooling and normalisation stay here, so
the vectors equal sentence-transformers' own (checked at start-up against a probe text;
any mismatch or unsupported model layout falls back to torch). The export is cached on
disk next to the index, keyed by model, and takes ~2 s the first time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from app.embedding.model import Embedder, Vectors

if TYPE_CHECKING:
    import onnxruntime

logger = logging.getLogger(__name__)

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_PROBE = "waterproof headphones for swimming laps, good value"
# Same vectors to float32 noise; a real mismatch (wrong pooling, extra layers) is >1e-2.
_TOLERANCE = 1e-4


class OnnxQueryEncoder:
    def __init__(self, session: onnxruntime.InferenceSession, embedder: Embedder) -> None:
        self._session = session
        self._tokenizer = embedder.model.tokenizer
        self._max_len = int(embedder.model.max_seq_length or 256)
        self._names = [i.name for i in session.get_inputs()]

    def embed(self, texts: list[str]) -> Vectors:
        feats = self._tokenizer(
            texts, return_tensors="np", padding=True, truncation=True, max_length=self._max_len
        )
        feed = {n: np.asarray(feats[n], dtype=np.int64) for n in self._names}
        hidden = self._session.run(None, feed)[0]
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)


def build_onnx_query_encoder(embedder: Embedder, cache_dir: str) -> OnnxQueryEncoder | None:
    """An ONNX encoder equal to `embedder` on a probe text, or None (use torch)."""
    try:
        if not _supported(embedder):
            logger.info("query encoder: torch (model layout not exportable as plain mean-pool)")
            return None
        import onnxruntime as ort

        path = _export(embedder, Path(cache_dir))
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, min(4, os.cpu_count() or 1))
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        encoder = OnnxQueryEncoder(session, embedder)
        diff = float(np.abs(encoder.embed([_PROBE]) - embedder.embed([_PROBE])).max())
        if diff > _TOLERANCE:
            logger.warning("query encoder: torch (ONNX export differs by %.2g)", diff)
            return None
        logger.info("query encoder: ONNX Runtime (%s, max diff %.1g)", path.name, diff)
        return encoder
    except Exception as e:  # an optional speed-up must never stop the service
        logger.warning("query encoder: torch (ONNX unavailable: %s)", e)
        return None


def _supported(embedder: Embedder) -> bool:
    """Transformer -> mean Pooling -> (Normalize): the layout this module reproduces."""
    modules = list(embedder.model)
    names = [type(m).__name__ for m in modules]
    if names[:2] != ["Transformer", "Pooling"] or any(n not in ("Normalize",) for n in names[2:]):
        return False
    # sentence-transformers 6 names it `pooling_mode` ("mean"); the start-up probe
    # comparison catches any other difference anyway.
    return getattr(modules[1], "pooling_mode", None) == "mean"


def _export(embedder: Embedder, cache_dir: Path) -> Path:
    import torch

    key = hashlib.sha256(f"{embedder.model_id}|{torch.__version__}".encode()).hexdigest()[:12]
    path = cache_dir / f"{embedder.model_id}-{key}.onnx"
    if path.is_file():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    encoder: Any = embedder.model[0].auto_model

    class _Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    sample = embedder.model.tokenizer(["hello world"], return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}
    fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".onnx.tmp")
    os.close(fd)
    with torch.inference_mode():
        # The TorchScript exporter (dynamo=False): the dynamo one needs onnxscript.
        torch.onnx.export(
            _Hidden().eval(),
            tuple(sample[n] for n in _INPUTS),
            tmp,
            input_names=list(_INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    os.replace(tmp, path)  # atomic: a concurrent starter never loads half a file
    return path
