"""Retrieval: the shopper's query → distinct products with their best matching chunks."""

from app.retrieval.retriever import Retriever, chunk_body
from app.retrieval.types import RetrievedProduct

__all__ = ["RetrievedProduct", "Retriever", "chunk_body"]
