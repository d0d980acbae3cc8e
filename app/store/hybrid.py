"""What both engines share for hybrid search: the BM25 side of a chunk and how branches fuse.

Every chunk carries two vectors, written in the same upsert: the dense one (the default,
unnamed vector) and a sparse BM25 one named `bm25`. The sparse vector holds the chunk's
BM25 term-frequency weights (k1, b over a fixed average length); the engine multiplies in
the IDF at query time (the `Idf` modifier), so document vectors never go stale as the
catalog grows. Tokenisation is qdrant-edge's `Bm25` (word tokens, lowercase, English
stopwords, Snowball stemming, hashed to u32 term ids), used for BOTH engines so a Qdrant
server and the embedded shard index the same terms.

A hybrid query runs both branches in one batch of engine requests (the shopper's filter in
each) and fuses them per product by relevance (app.store.relevance: cosine plus a bounded
BM25 share, on the cosine scale), the only fusion the service runs. The engine's own RRF
and DBSF (`FusionSpec.method`) stay for comparison in `python -m app.eval` and bench/;
dense-only and sparse-only are RETRIEVAL_MODE's other choices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import qdrant_edge as qe

SPARSE_VECTOR = "bm25"
# Written with every chunk (its `sparse_format` payload field, app.sync.chunking): changing
# the tokenisation or the weights below needs a new name, and the next cycle rewrites every
# stored sparse vector in place (no dense vector is re-embedded: its key is model + text).
SPARSE_FORMAT = "bm25-v2-title"

RetrievalMode = Literal["hybrid", "dense", "sparse"]
FusionMethod = Literal["relevance", "rrf", "dbsf"]
# Tuned on both judged dev sets together (titles and long descriptions): BENCHMARKS.md.
DEFAULT_LEXICAL_WEIGHT = 0.4

# k1 and b are the textbook values. avg_len is what b normalises a chunk's length by:
# chunks are product titles (~10 tokens) up to MAX_CHUNK_TOKENS of description; qdrant's
# default (256) would switch length normalisation off for every title-only product.
_BM25_K1 = 1.2
_BM25_B = 0.75
_BM25_AVG_LEN = 32.0

# Measurements written as digits + unit: `3/4 in.`, `6 ft.`, `2-gal.`, `12"`. The stopword
# list drops "in" (inches) and the stemmer never maps `ft`/`feet`/`foot` together, so
# shoppers typing `6 foot` miss titles saying `6 ft.`. Both sides are rewritten to one
# spelled-out unit before tokenising, which any catalog with measurements shares.
_UNITS: dict[str, str] = {
    "in": "inch",
    "inch": "inch",
    "inches": "inch",
    '"': "inch",
    "''": "inch",
    "ft": "foot",
    "feet": "foot",
    "foot": "foot",
    "'": "foot",
    "lb": "pound",
    "lbs": "pound",
    "pound": "pound",
    "pounds": "pound",
    "gal": "gallon",
    "gallon": "gallon",
    "gallons": "gallon",
    "oz": "ounce",
    "ounce": "ounce",
    "ounces": "ounce",
    "qt": "quart",
    "quart": "quart",
    "sq": "square",
    "cu": "cubic",
    "v": "volt",
    "volt": "volt",
    "volts": "volt",
    "w": "watt",
    "watt": "watt",
    "watts": "watt",
    "mm": "millimeter",
    "cm": "centimeter",
}
_UNIT_RE = re.compile(
    r"(?<=\d)\s*-?\s*(" + "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True)) + r")\.?"
    r"(?![a-z])",
    re.IGNORECASE,
)
# A token of digits alone, as the tokeniser splits "2-person" or "3/4".
_DIGITS_RE = re.compile(r"(?<![^\W_])\d+(?![^\W_])")
# `2x4`, `2 x 4`: the dimension separator glued to digits would make one token `2x4`.
_TIMES_RE = re.compile(r"(?<=\d)\s*[x×*]\s*(?=\d)", re.IGNORECASE)


def normalize_text(text: str) -> str:
    """Spell out units after numbers and split `2x4` into `2 x 4` (BM25 side only)."""
    text = _TIMES_RE.sub(" x ", text)
    return _UNIT_RE.sub(lambda m: " " + _UNITS[m.group(1).lower()], text)


@dataclass(frozen=True, slots=True)
class SparseVec:
    """A sparse vector as both engines take it: parallel term ids and weights."""

    indices: list[int]
    values: list[float]
    # A query's terms written in digits alone ("3" of "3 burner stove"): on their own they
    # are no lexical match (app.store.core, relevance fusion). Empty for a document.
    numbers: frozenset[int] = frozenset()

    def without(self, terms: frozenset[int]) -> SparseVec:
        """The vector with `terms` left out."""
        kept = [(i, v) for i, v in zip(self.indices, self.values, strict=True) if i not in terms]
        return SparseVec([i for i, _ in kept], [v for _, v in kept], self.numbers - terms)

    @property
    def words(self) -> frozenset[int]:
        """The terms that are not numbers."""
        return frozenset(self.indices) - self.numbers


@lru_cache(maxsize=1)
def _bm25() -> qe.Bm25:
    return qe.Bm25(qe.Bm25Config(k=_BM25_K1, b=_BM25_B, avg_len=_BM25_AVG_LEN))


def document_sparse(text: str, title: str | None = None) -> SparseVec:
    """BM25 term weights of a chunk's text plus those of its product's title, so a title
    word weighs twice a description word (fields weighted apart in one vector: a shopper's
    words in the title say what the product is, in a long description they may be an
    aside). Empty (but present) when no term survives."""
    weights: dict[int, float] = {}
    for part in (text, title or ""):
        v = _bm25().embed_document(normalize_text(part))
        for index, value in zip(v.indices, v.values, strict=True):
            weights[index] = weights.get(index, 0.0) + value
    return SparseVec(list(weights), list(weights.values()))


@lru_cache(maxsize=65_536)
def document_terms(text: str) -> frozenset[int]:
    """The term ids a document text is indexed under (the query side's ids for the same
    words): which of a query's terms a field holds. Cached: titles repeat across queries."""
    return frozenset(_bm25().embed_document(normalize_text(text)).indices)


def query_sparse(text: str) -> SparseVec:
    """The query's terms, weight 1 each (the engine's IDF does the weighting)."""
    normalized = normalize_text(text)
    v = _bm25().embed_query(normalized)
    digits = " ".join(_DIGITS_RE.findall(normalized))
    numbers = frozenset(_bm25().embed_query(digits).indices) if digits else frozenset()
    return SparseVec(list(v.indices), list(v.values), numbers & frozenset(v.indices))


@dataclass(frozen=True, slots=True)
class FusionSpec:
    """How the dense and sparse branches are combined.

    relevance: per product, cosine + lexical_weight x BM25 / the query's best BM25
    (app.store.relevance), fused here after one batch of the two branches; a score on the
    cosine scale that a relevance floor can cut. rrf: reciprocal rank fusion inside the
    engine, sum of weight / (k + rank); k=60 is the value from the original RRF paper.
    dbsf: the engine's distribution-based score fusion (each branch's scores normalised
    by their mean +- 3 sigma, then summed; no weights).
    """

    method: FusionMethod = "relevance"
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    # Relevance only: pseudo-relevance feedback (0 = off), and how many products feed it.
    feedback_weight: float = 0.0
    feedback_products: int = 5
    rrf_k: int = 60
    dense_weight: float = 1.0
    sparse_weight: float = 1.0
    # Relevance only: a product whose best cosine is below this is no match, whatever words
    # it shares (RELEVANCE_MIN_COSINE); None: no such floor.
    min_cosine: float | None = None

    @property
    def feedback(self) -> bool:
        """Whether a relevance search runs pseudo-relevance feedback."""
        return self.feedback_weight > 0

    @property
    def weights(self) -> list[float] | None:
        """RRF branch weights in prefetch order (dense, sparse); None when equal."""
        if self.dense_weight == self.sparse_weight:
            return None
        return [self.dense_weight, self.sparse_weight]


def prefetch_limit(limit: int) -> int:
    """Candidates each branch hands to the fusion for a fused page of `limit` chunks.

    Deeper than the page so a chunk ranked fairly well by both branches can still be
    found; a larger pool costs sparse-branch time (measured in bench/retrieval.py).
    """
    return max(limit * 2, 50)


def relevance_depth(limit: int, chunks_per_product: int) -> int:
    """Chunks the dense branch brings to relevance fusion for a page of `limit` products."""
    return max(limit * chunks_per_product * 2, 32)


def lexical_depth(limit: int) -> int:
    """Chunks the BM25 branch brings: a product far down its list adds little to a cosine,
    and every one the dense branch lacks costs a cosine read (the depth's trade-off:
    docs/decisions/relevance-fusion.md)."""
    return max(limit * 6, 16)
