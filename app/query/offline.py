"""The offline parser: constraints heard by rule, no model (the default)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from app.query.category import CategoryMatcher
from app.query.negation import NegationReader
from app.query.phrasebook import Phrasebook, alternation, load_phrasebook
from app.query.price import PriceParser, price_constraints
from app.query.spelling import Speller
from app.query.types import Constraint, ParsedQuery

# Left dangling at the edges once a budget phrase is cut out ("headphones with", "for").
_EDGE_JUNK = re.compile(r"^(?:[\s,;:.!?-]|(?:and|or|but|with|for|at|of|in)\b)+", re.I)
# "yoga mat that is not purple" searched "yoga mat that is" once the negation was cut.
_EDGE_JUNK_END = re.compile(
    r"(?:[\s,;:-]|\b(?:and|or|but|with|for|at|of|in|a|an|(?:that|which)\s+(?:is|are))\b)+$",
    re.I,
)


class OfflineQueryParser:
    def __init__(self, book: Phrasebook | None = None) -> None:
        self.book = book or load_phrasebook()
        self.prices = PriceParser(self.book)
        self.categories = CategoryMatcher(self.book)
        self.negations = NegationReader(self.book)
        self._soft = re.compile(
            rf"(?<![\w-])(?:{alternation(self.book.soft_cheap)})(?![\w-])", re.I
        )
        self._popular = re.compile(
            rf"(?<![\w-])(?:{alternation(self.book.soft_popular)})(?![\w-])", re.I
        )

    def parse(
        self,
        query: str,
        categories: Iterable[str] = (),
        speller: Speller | None = None,
        brands: Collection[str] = (),
    ) -> ParsedQuery:
        """Split `query` into a search text and the constraints it states.

        Args:
            query: the shopper's words.
            categories: the catalog's categories (a category is only heard if it is one).
            speller: mends the search text's misspelt words (app.query.spelling); its
                words also tell a negation from a product named by one (app.query.negation).
            brands: the catalog's brands, excluded when a negation names one.
        """
        matches = self.prices.find(query)
        constraints = price_constraints(query, matches)
        cut = [piece for m in matches for piece in m.pieces]
        soft = [
            m for m in self._soft.finditer(query) if not any(s <= m.start() < e for s, e in cut)
        ]
        if soft:
            constraints.append(Constraint("price_preference", "low", soft[0].group(0)))
            cut += [(m.start(), m.end()) for m in soft]
        popular = [
            m for m in self._popular.finditer(query) if not any(s <= m.start() < e for s, e in cut)
        ]
        if popular:
            constraints.append(Constraint("popularity_preference", "high", popular[0].group(0)))
            cut += [(m.start(), m.end()) for m in popular]
        excluded, negated = self.negations.find(query, cut, speller, brands)
        constraints += excluded
        cut += negated
        # A category named inside a negation ("not kitchen stuff") is not wanted.
        blanked = _blanked(query, negated)
        category = self.categories.find(blanked, categories, speller, said=cut)
        if category is not None:
            constraints.append(category)
        text = search_text(query, cut)
        if speller is not None:
            text = speller.correct(text)
        return ParsedQuery(query, text, tuple(constraints), "offline")


def _blanked(query: str, spans: list[tuple[int, int]]) -> str:
    """`query` with the spans' characters turned into spaces (offsets unchanged)."""
    for start, end in spans:
        query = query[:start] + " " * (end - start) + query[end:]
    return query


def search_text(query: str, cut: list[tuple[int, int]]) -> str:
    """`query` without the constraint phrases; the query itself if nothing would remain."""
    kept, last = [], 0
    for start, end in sorted(cut):
        if start >= last:
            kept.append(query[last:start])
            last = end
    kept.append(query[last:])
    text = re.sub(r"\s+([,;:.!?])", r"\1", " ".join(" ".join(kept).split()))
    text = re.sub(r"([,;:])(?:[,;:])+", r"\1", text)  # "a kettle, no plastic, for tea"
    text = _EDGE_JUNK_END.sub("", _EDGE_JUNK.sub("", text))
    return text if re.search(r"\w", text) else query
