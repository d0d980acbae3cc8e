"""The embedding model, shared by the sync (chunks) and retrieval (queries)."""

from app.embedding.model import Embedder, embedder_for, load_embedder, resolve_model_path

__all__ = ["Embedder", "embedder_for", "load_embedder", "resolve_model_path"]
