"""Turn a product row into self-contained chunks, sized in the embedding model's tokens.

Each chunk starts with the product's name so it stands on its own in retrieval; only the
description is split. Price is deliberately *not* in the chunk text:
a price-only update must not change any chunk, so it embeds nothing.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from semantic_text_splitter import TextSplitter

from app.core.catalog import Product, payload_fields
from app.store import hybrid
from app.store.base import COUNT_FIELD

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Fixed namespace so point ids are stable across processes and machines.
_POINT_NAMESPACE = uuid.UUID("6f1c1f0e-8a55-4f3a-9a63-3d0f1c2b7e11")
# Bump when the chunk text's composition changes: every id changes, so a full resync.
CHUNK_FORMAT = "v2-name-header"
# Bump when what a content key hashes changes (k2: model and text, not the BM25 format).
KEY_FORMAT = "k2-model-text"
# The payload field naming the BM25 format a chunk's sparse vector was written in: a chunk
# kept across a format change has its sparse vector rewritten in place, not re-embedded.
SPARSE_FIELD = "sparse_format"
# Bump when the chunk payload gains or changes a field: the next cycle is a full one, which
# re-embeds nothing (ids are content keys) and writes the new fields into every chunk.
# p2: `chunk_count`, so a search knows a product's group is complete without asking;
# p3: the shoppers' signals (impressions ... ctr), written by spark_jobs.product_signals.
PAYLOAD_FORMAT = "p3-signals"
# Smallest room left for description text once the header is counted.
_MIN_BODY_TOKENS = 32


@dataclass(frozen=True, slots=True)
class ProductChunk:
    point_id: str
    product_id: int
    chunk_index: int
    chunk_hash: str
    text: str
    # How many chunks the product has: a search that holds all of them (or as many as it
    # shows per product) does not ask the engine for more (app.store.grouping).
    chunk_count: int = 1

    @property
    def position(self) -> dict[str, int]:
        """The payload fields that depend on the product's other chunks."""
        return {"chunk_index": self.chunk_index, COUNT_FIELD: self.chunk_count}

    def payload(self, product: Product) -> dict[str, Any]:
        return {
            "product_id": product.id,
            "chunk_hash": self.chunk_hash,
            "text": self.text,
            **self.position,
            **payload_fields(product),
            **sparse_marker(),
        }


class ProductChunker:
    """Splits descriptions with semantic-text-splitter, measured by the model's tokenizer."""

    def __init__(
        self, tokenizer: Tokenizer, model_id: str, max_tokens: int, overlap_tokens: int
    ) -> None:
        self._tokenizer = tokenizer
        self._model_id = model_id
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self._splitters: dict[int, TextSplitter] = {}

    @property
    def signature(self) -> str:
        """What, besides text, decides a chunk's content: changing it needs a full resync.

        The model id names the vector space, encoder included (`all-MiniLM-L6-v2+int8` for
        the int8 ONNX engine, app.embedding.choice), so switching encoders re-embeds; the
        sparse format and the payload format change no id: the full cycle they cause
        rewrites sparse vectors or payloads in place and embeds nothing.
        """
        parts = (
            CHUNK_FORMAT,
            KEY_FORMAT,
            self._model_id,
            hybrid.SPARSE_FORMAT,
            self.max_tokens,
            self.overlap_tokens,
            PAYLOAD_FORMAT,
        )
        return "|".join(map(str, parts))

    def _splitter(self, capacity: int) -> TextSplitter:
        # The header length varies per product; splitters are cheap but not free to build.
        splitter = self._splitters.get(capacity)
        if splitter is None:
            overlap = min(self.overlap_tokens, capacity // 2)
            splitter = TextSplitter.from_huggingface_tokenizer(
                self._tokenizer, capacity, overlap=overlap
            )
            self._splitters[capacity] = splitter
        return splitter

    def header(self, product: Product) -> str:
        # The name alone: measured with `python -m app.eval`, adding brand and/or category
        # to every chunk lowered nDCG@10 on the labelled set (0.942-0.949 vs 0.952); they
        # stay in the payload for filters and display.
        return product.name

    def chunk(self, product: Product) -> list[ProductChunk]:
        header = self.header(product)
        header_tokens = len(self._tokenizer.encode(header, add_special_tokens=False).ids)
        capacity = max(self.max_tokens - header_tokens - 1, _MIN_BODY_TOKENS)
        description = (product.description or "").strip()
        pieces = self._pieces(description, capacity) if description else []
        texts = [f"{header}\n{piece}" for piece in pieces] or [header]
        # A description that repeats itself can yield identical chunks: one point each.
        unique = list(dict.fromkeys(texts))
        return [self._make(product.id, i, len(unique), text) for i, text in enumerate(unique)]

    def _pieces(self, description: str, capacity: int) -> list[str]:
        # Most descriptions fit in one chunk, and the splitter returns such a text whole
        # (tests/sync/test_chunking.py): one tokenisation tells, where the splitter measures
        # many candidate pieces (5x the time; a tenth of a bootstrap's CPU, issue 11).
        if len(self._tokenizer.encode(description, add_special_tokens=False).ids) <= capacity:
            return [description]
        return self._splitter(capacity).chunks(description)

    def _make(self, product_id: int, index: int, count: int, text: str) -> ProductChunk:
        digest = chunk_hash(self._model_id, text)
        # Keyed by content (and product): an unchanged chunk keeps its id and is never
        # re-embedded; an edited one gets a new id and the old id is deleted.
        point_id = str(uuid.uuid5(_POINT_NAMESPACE, f"{product_id}:{digest}"))
        return ProductChunk(point_id, product_id, index, digest, text, count)


def chunk_hash(model_id: str, text: str) -> str:
    """A chunk's content key: its text in one vector space (the model id names the encoder).

    What the dense vector depends on, and nothing else: equal keys mean interchangeable
    vectors, which is what lets the sync load a vector the Spark job made
    (app/sync/chunk_vectors.py). The sparse vector depends on the BM25 format only, kept
    in the payload (`SPARSE_FIELD`): a format change rewrites it without touching the key.
    """
    key = f"{model_id}\x1f{text}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def sparse_marker() -> dict[str, str]:
    """The payload field that says which BM25 format a chunk's sparse vector is in."""
    return {SPARSE_FIELD: hybrid.SPARSE_FORMAT}
