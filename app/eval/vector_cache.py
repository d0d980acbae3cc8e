"""Dense vectors of eval texts kept on disk, keyed by model and text.

Embedding the 54,667 Home Depot titles takes minutes of CPU; every later eval run only
pays for search. The cache is one `.npz` per model under `data/cache/vectors/` (gitignored):
a text's key is a hash of the model id and the text, so a different model or an edited
text simply misses.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from app.core.config import ROOT
from app.embedding import Embedder
from app.embedding.model import Vectors
from app.retrieval.retriever import QueryEncoder

logger = logging.getLogger(__name__)

# `python -m app.eval --cache-dir` and `bench/retrieval.py --dataset --cache-dir` default.
DEFAULT_CACHE_DIR = ROOT / "data" / "cache" / "vectors"


def text_key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"{model_id}\x1f{text}".encode()).hexdigest()[:32]


@dataclass
class CachedEmbedder(Embedder):
    """An Embedder whose `embed` serves known texts from the cache and embeds the rest.

    Build it with `CachedEmbedder.wrap`; call `save()` to persist what was embedded.
    """

    cache_dir: Path = field(default=DEFAULT_CACHE_DIR)
    _rows: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict, repr=False)
    _new: int = field(default=0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def wrap(cls, embedder: Embedder, cache_dir: Path) -> CachedEmbedder:
        # The wrapped engine's ONNX session too: without it `embed` falls back to torch, so
        # vectors cached under an int8 model id would be torch's, at a fraction of the speed.
        cached = cls(
            embedder.model,
            embedder.model_id,
            embedder.batch_size,
            embedder.onnx,
            embedder.encoder,
            cache_dir=cache_dir,
        )
        if cached.path.exists():
            with np.load(cached.path) as data:
                keys, matrix = data["keys"], data["vectors"]
            cached._rows = {str(k): matrix[i] for i, k in enumerate(keys)}
            logger.info("vector cache %s: %d vectors", cached.path, len(cached._rows))
        return cached

    @property
    def path(self) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.model_id)
        return self.cache_dir / f"{safe}.npz"

    def embed(self, texts: list[str]) -> Vectors:
        keys = [text_key(self.model_id, t) for t in texts]
        todo = sorted({i for i, k in enumerate(keys) if k not in self._rows})
        if todo:
            fresh = super().embed([texts[i] for i in todo])
            with self._lock:  # the eval searches two queries at once (app.eval.parallel)
                for row, i in enumerate(todo):
                    self._rows[keys[i]] = fresh[row]
                self._new += len(todo)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._rows[k] for k in keys]).astype(np.float32, copy=False)

    def save(self) -> None:
        """Write the cache if anything was embedded since it was loaded (atomic rename)."""
        if not self._new:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._rows), dtype="U32")
        matrix = np.stack(list(self._rows.values())).astype(np.float32)
        fd, tmp = tempfile.mkstemp(dir=self.cache_dir, suffix=".npz")
        os.close(fd)
        np.savez(tmp, keys=keys, vectors=matrix)
        os.replace(tmp, self.path)
        logger.info("vector cache %s: saved %d vectors (%d new)", self.path, len(keys), self._new)
        self._new = 0


class RememberedQueries:
    """A query encoder whose vectors are kept for the run: the eval asks each query of
    several rankings. Not on disk: the service's query encoder may differ from the
    document encoder the cache is keyed by (app.embedding.onnx_query)."""

    def __init__(self, encoder: QueryEncoder) -> None:
        self.encoder = encoder
        self._rows: dict[str, npt.NDArray[np.float32]] = {}
        self._lock = threading.Lock()  # two queries at once (app.eval.parallel)

    def embed(self, texts: list[str]) -> Vectors:
        todo = [t for t in dict.fromkeys(texts) if t not in self._rows]
        if todo:
            fresh = self.encoder.embed(todo)
            with self._lock:
                self._rows.update(zip(todo, fresh, strict=True))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._rows[t] for t in texts]).astype(np.float32, copy=False)
