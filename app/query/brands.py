"""The catalog's brands named in a query: wanted ("only Acme"), or excluded after a negation
("not Acme", and "no Acme or Brumm" where a list shares its negation).

Names are matched by the catalog's own spelling in any case, longest first (up to five
tokens), so "Brumm Audio" is the brand and not the audio category.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from app.query.types import Constraint, FilterField

# Brands carried at most (included and excluded together).
MAX_BRANDS = 6

_TOKEN = re.compile(r"[\w][\w'.+-]*|&")
_SEPARATOR = re.compile(r"^\s*(?:,|/|or|and|nor|,\s*or|,\s*and)\s*$", re.I)

Span = tuple[int, int]


def overlaps(spans: Collection[Span], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in spans)


class BrandFinder:
    """Args:
    negation: matches a negation at the end of the text before a brand ("not ", "without ").
    """

    def __init__(self, negation: re.Pattern[str]) -> None:
        self.negation = negation
        self._keys: tuple[frozenset[str], dict[str, str]] | None = None

    def find(
        self, query: str, brands: Collection[str], taken: Collection[Span]
    ) -> tuple[list[Constraint], list[Span]]:
        """The brands named outside `taken`, and the spans they and their negations cover."""
        if not brands:
            return [], []
        keys = self._keys_of(brands)
        tokens = [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(query)]
        found: list[Constraint] = []
        spans: list[Span] = []
        i, last_end = 0, 0
        last_field: FilterField = "brand"
        while i < len(tokens):
            hit = None
            for n in range(min(5, len(tokens) - i), 0, -1):
                name = keys.get(" ".join(t for t, _, _ in tokens[i : i + n]))
                if name is not None:
                    hit = (name, tokens[i][1], tokens[i + n - 1][2], n)
                    break
            if hit is None or overlaps([*taken, *spans], hit[1], hit[2]):
                i += 1
                continue
            name, start, end, n = hit
            gap = query[last_end:start]
            if found and _SEPARATOR.match(gap):
                what: FilterField = last_field  # "no Acme or Brumm": the list shares its negation
                spans.append((last_end, start))
            else:
                negation = self.negation.search(gap)
                what = "brand" if negation is None else "exclude_brand"
                if negation is not None:
                    spans.append((last_end + negation.start(), start))
            found.append(Constraint(what, name, query[start:end]))
            spans.append((start, end))
            last_end, last_field = end, what
            i += n
        return found[:MAX_BRANDS], spans

    def _keys_of(self, brands: Collection[str]) -> dict[str, str]:
        """Lower-cased token runs -> the catalog's spelling (cached per vocabulary)."""
        frozen = brands if isinstance(brands, frozenset) else frozenset(brands)
        if self._keys is None or self._keys[0] is not frozen:
            keys = {" ".join(m.group(0).lower() for m in _TOKEN.finditer(b)): b for b in frozen}
            self._keys = (frozen, {k: v for k, v in keys.items() if k})
        return self._keys[1]
