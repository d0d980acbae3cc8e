"""Retrieval: the shopper's query → distinct products with their best matching chunks."""

from app.retrieval.retriever import Query, Retriever, chunk_body
from app.retrieval.types import RetrievedProduct

__all__ = ["Query", "RetrievedProduct", "Retriever", "chunk_body"]
