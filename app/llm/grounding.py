"""Which products a piece of text refers to, so an answer can be held to the retrieved set."""

from __future__ import annotations

import re
from collections.abc import Iterable

# The citation form the prompt asks for: [id:123].
_CITATION = re.compile(r"\[\s*id\s*:\s*(\d+)\s*\]", re.IGNORECASE)
# Looser ways a model (or an injected instruction) names a catalog product: "product 999",
# "item #999", "ID: 999", "product id 999". A bare "#1" is left out on purpose: "my #1 pick"
# is ordinary English and would reject good answers.
_LOOSE_REFERENCE = re.compile(
    r"\b(?:product|item|sku|id)(?:\s+(?:id|no\.?|number))?\s*[:#]?\s*(\d+)\b",
    re.IGNORECASE,
)


def cited_ids(text: str) -> list[int]:
    """Ids cited as `[id:N]`, in order of first appearance, without repeats."""
    return _unique(int(m) for m in _CITATION.findall(text))


def referenced_ids(text: str) -> set[int]:
    """Every product id the text refers to, cited or loosely named."""
    return {int(m) for m in _CITATION.findall(text)} | {
        int(m) for m in _LOOSE_REFERENCE.findall(text)
    }


def unknown_references(text: str, allowed_ids: Iterable[int]) -> set[int]:
    """Ids the text refers to that are not in `allowed_ids` (empty when grounded)."""
    return referenced_ids(text) - set(allowed_ids)


def _unique(ids: Iterable[int]) -> list[int]:
    seen: dict[int, None] = {}
    for i in ids:
        seen.setdefault(i, None)
    return list(seen)
