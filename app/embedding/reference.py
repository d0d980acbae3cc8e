"""sentence-transformers' side of the model: its tokenizer, its token limit and its own
torch vectors, the reference every ONNX engine is checked against (app.embedding.choice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from app.embedding.onnx_encoder import Vectors

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer


def max_seq_tokens(model: SentenceTransformer) -> int:
    """Longest input the model reads, excluding the [CLS]/[SEP] special tokens."""
    return int(model.max_seq_length or 256) - 2


def plain_tokenizer(model: SentenceTransformer) -> Tokenizer:
    """A copy of the model's fast tokenizer with truncation and padding switched off.

    The packaged tokenizer.json has truncation and padding at 128 switched on: measuring
    chunk sizes with it would cap every chunk at 128 tokens and silently drop text.
    """
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(model.tokenizer.backend_tokenizer.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok


def embed_torch(model: SentenceTransformer, texts: list[str], batch_size: int) -> Vectors:
    """sentence-transformers' own unit-length vectors."""
    out = model.encode(
        texts,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(out, dtype=np.float32)
