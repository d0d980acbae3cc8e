"""A learned model's fine-tuned encoder as an `Embedder` (app.learned reads the folder;
this module loads what it names, so app.learned needs nothing of app.embedding).

`wanted_embedder(settings)` is the encoder the settings ask the sync and the service for:
LEARNED_MODEL's fine-tuned one when the folder has one, else EMBEDDING_MODEL's.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from app.embedding.exported import serving_embedder
from app.embedding.model import Embedder
from app.learned import ONNX_DIR, LearnedModel, load_learned_model

if TYPE_CHECKING:
    from app.core.config import Settings
    from app.embedding.choice import EncoderChoice


def learned_embedder(model: LearnedModel, settings: Settings) -> Embedder | None:
    """The folder's fine-tuned encoder (`encoder_embedder`), or None: no fine-tuned encoder
    in the folder, the packaged model serves."""
    if model.encoder_dir is None:
        return None
    return encoder_embedder(model.encoder_dir, model.encoder_id, settings)


def wanted_embedder(settings: Settings) -> Embedder:
    """LEARNED_MODEL's fine-tuned encoder when it has one, else EMBEDDING_MODEL's as
    `serving_embedder` serves it (its export without torch when there is one); each loaded
    once per process (the API and its sync share it).

    Raises:
        LearnedModelError: LEARNED_MODEL names a folder that is not a learned model.
    """
    if settings.learned_model:
        found = learned_embedder(load_learned_model(settings.learned_model), settings)
        if found is not None:
            return found
    return serving_embedder(settings)


def encoder_embedder(encoder_dir: Path, encoder_id: str, settings: Settings) -> Embedder:
    """A fine-tuned encoder with the document engine EMBEDDING_* choose; its ONNX exports
    are read from `encoder_dir/onnx`, where training put them: nothing is exported at start.
    Loaded once per process per folder, id (its weights) and engine settings."""
    return _load_encoder(
        str(encoder_dir),
        encoder_id,
        settings.embedding_device,
        settings.embedding_encoder,
        settings.embedding_threads,
        settings.embedding_intra_op_threads,
        settings.embedding_batch_size,
    )


@lru_cache(maxsize=4)
def _load_encoder(
    encoder_dir: str,
    encoder_id: str,
    device: str,
    choice: EncoderChoice,
    threads: int,
    intra_op_threads: int,
    batch_size: int,
) -> Embedder:
    from sentence_transformers import SentenceTransformer

    from app.embedding.choice import choose_encoder

    model = SentenceTransformer(encoder_dir, device=device)
    pick = choose_encoder(
        model,
        encoder_id,
        choice,
        device,
        str(Path(encoder_dir) / ONNX_DIR),
        threads,
        intra_op_threads,
        batch_size,
    )
    return Embedder(model, pick.model_id, batch_size, pick.onnx, pick.name)
