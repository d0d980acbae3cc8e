"""Retrieval: the shopper's query → distinct products with their best matching chunks."""

from app.retrieval.retriever import Retriever, chunk_body

__all__ = ["Retriever", "chunk_body"]
