"""A learned model's fine-tuned encoder as an `Embedder` (app.learned reads the folder;
this module loads what it names, so app.learned needs nothing of app.embedding)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from app.embedding.model import Embedder
from app.learned import ONNX_DIR, LearnedModel

if TYPE_CHECKING:
    from app.core.config import Settings


def learned_embedder(model: LearnedModel, settings: Settings) -> Embedder | None:
    """The folder's fine-tuned encoder (`encoder_embedder`), or None: no fine-tuned encoder
    in the folder, the packaged model serves."""
    if model.encoder_dir is None:
        return None
    return encoder_embedder(model.encoder_dir, model.encoder_id, settings)


def encoder_embedder(encoder_dir: Path, encoder_id: str, settings: Settings) -> Embedder:
    """A fine-tuned encoder with the document engine EMBEDDING_* choose; its ONNX exports
    are read from `encoder_dir/onnx`, where training put them: nothing is exported at start."""
    from sentence_transformers import SentenceTransformer

    from app.embedding.choice import choose_encoder

    device = settings.embedding_device
    model = SentenceTransformer(str(encoder_dir), device=device)
    pick = choose_encoder(
        model,
        encoder_id,
        settings.embedding_encoder,
        device,
        str(encoder_dir / ONNX_DIR),
        settings.embedding_threads,
        settings.embedding_intra_op_threads,
        settings.embedding_batch_size,
    )
    return Embedder(model, pick.model_id, settings.embedding_batch_size, pick.onnx, pick.name)
