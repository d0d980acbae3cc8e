"""The catalog's own categories, and whether the shopper's words name one of them.

Categories come from the data (the payloads the sync wrote), never from a list in code.
A category is heard only when the words clearly name it, because a wrong category is a
hard filter that hides the right product:
- "kitchen gadgets", "outdoor gear": the name followed by a kind-of-goods word;
- "books for a 10 year old", "toys under $20": the name standing as the thing wanted;
- not "office chair", "outdoor speaker", "pet hair" (the name describes another noun);
- not "cat toys", "pool toys" (a word the catalog's names use, before the name, says which
  of them: a cat's toys may be filed under pets, and a filter on toys showed RC cars);
- not "for the kitchen", "work from home" (a place or use, and the product may be
  filed elsewhere);
- not when two categories are named ("home or office"): ambiguous, so neither.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from typing import Literal

from app.query.phrasebook import Phrasebook
from app.query.spelling import Speller
from app.query.store_view import StoreView
from app.query.types import Constraint
from app.store import StoreError

logger = logging.getLogger(__name__)

_WORD = re.compile(r"[\w][\w'-]*")
Asked = Literal["a product", "nothing", "a gift"]


def word_forms(category: str) -> set[str]:
    """Singular and plural of a one-word category name ("toys" ↔ "toy")."""
    c = category.lower()
    forms = {c}
    if c.endswith("s") and len(c) > 3:
        forms.add(c[:-1])
    else:
        forms.add(c + "s")
    return forms


class CategoryMatcher:
    def __init__(self, book: Phrasebook) -> None:
        self.kinds = {w.lower() for w in book.category_kind_words}
        self.blocking = {w.lower() for w in book.category_blocking_words_before}
        self.determiners = {w.lower() for w in book.determiners}
        self.function = {w.lower() for w in book.function_words}
        self.attributes = {w.lower() for w in book.attribute_words}
        # Words that leave a query naming only its category ("show me", "some", "stuff").
        self.skipped = {
            *self.kinds,
            *self.determiners,
            *self.function,
            *(w.lower() for w in book.not_kind()),
        }
        self.someone = {w.lower() for w in book.names_someone}
        self.gift = {w.lower() for w in book.gift_words}
        self.book = book

    def browses(self, text: str, category: str | None) -> bool:
        """Whether `text` names nothing but `category` ("toys", "show me books", "outdoor
        gear"; not "toys for a 5 year old"): a shopper browsing it, whose words no product
        needs to repeat. A brand that shares the kind word ("Ridgeback Gear") is no better
        a match for "outdoor gear" than the rest of the category."""
        if not category:
            return False
        names = {f for w in _WORD.findall(category.lower()) for f in word_forms(w)}
        words = [m.group(0).lower() for m in _WORD.finditer(text)]
        rest = [w for w in words if w not in self.skipped]
        return bool(rest) and all(w in names for w in rest)

    def asks_for(self, text: str, said: Iterable[str]) -> Asked:
        """What `text` asks for once the constraint phrases `said` are taken out: "nothing"
        when every word left says nothing of a product, nor whom it is for ("best sellers",
        "anything under 50", "show me everything"); "a gift" when they name only a gift and
        whom it is for ("gift ideas for my dad"); else "a product" ("something for a baby"
        is searched by its meaning; text with no word at all, "🎧", is not judged)."""
        # An age says whom it is for: "a present for my 8 year old son" is a gift.
        unaged = self.book.without_ages(text, lambda _: " ")
        aged = unaged != text
        words = self._left(unaged, said)
        if words is None:
            return "a product"
        if not (aged or self.someone.intersection(words)):
            return "nothing"
        return "a gift" if self.gift.intersection(words) else "a product"

    def _left(self, text: str, said: Iterable[str]) -> set[str] | None:
        """The words of `text` without the phrases `said` when none names a product, else
        None. A number no constraint took is searched: a model number ("4338 81 15")."""
        if not _WORD.search(text):
            return None
        for phrase in said:
            if phrase:
                text = re.sub(re.escape(phrase), " ", text, flags=re.IGNORECASE)
        words = {m.group(0).lower() for m in _WORD.finditer(text)}
        return words if words <= self.skipped else None

    def find(
        self,
        text: str,
        categories: Iterable[str],
        speller: Speller | None = None,
        said: Sequence[tuple[int, int]] = (),
    ) -> Constraint | None:
        """The one category `text` clearly names, or None. `speller`: the catalog's words,
        which tell a word that says which of the category ("cat toys") from one that does
        not ("kids toys"? no name says "kids"); without them, no such word is judged.
        `said`: the spans of the other constraints' words ("best sellers", "under 30")."""
        by_form: dict[str, str] = {}
        for name in categories:
            for form in word_forms(name):
                by_form.setdefault(form, name)
        words = [(m.group(0).lower(), m.start(), m.end()) for m in _WORD.finditer(text)]
        unsaid = [w for w, start, _ in words if not any(s <= start < e for s, e in said)]
        heard: dict[str, Constraint] = {}
        for i, (word, start, end) in enumerate(words):
            cat = by_form.get(word)
            if cat is None:
                continue
            prev = next((w for w, _, _ in reversed(words[:i]) if w not in self.determiners), None)
            nxt = words[i + 1] if i + 1 < len(words) else None
            if nxt is not None and nxt[0] in self.kinds:
                heard.setdefault(cat, Constraint("category", cat, text[start : nxt[2]]))
            elif self._blocked(prev, unsaid, word) or self._says_which(prev, speller):
                continue
            elif nxt is None or nxt[0] in self.function or nxt[0][0].isdigit():
                heard.setdefault(cat, Constraint("category", cat, text[start:end]))
        if len(heard) != 1:
            return None
        return next(iter(heard.values()))

    def _blocked(self, prev: str | None, unsaid: list[str], name: str) -> bool:
        """Whether the word before a category's name makes it something else ("a rug for the
        kitchen"): "in" does not when every other word outside the other constraints names
        nothing ("best sellers in audio" browses audio; "a speaker in kitchen" does not)."""
        if prev not in self.blocking:
            return False
        return prev != "in" or any(w not in self.skipped and w != name for w in unsaid)

    def _says_which(self, word: str | None, speller: Speller | None) -> bool:
        """Whether `word`, right before a category's name standing alone, is one the
        catalog's names use that no attribute or function word is ("cat" in "cat toys")."""
        if word is None or speller is None or not word.isalpha():
            return False
        if word in self.function or word in self.attributes or word in self.skipped:
            return False
        return speller.weight(word) > 0


# Far above any catalog's category count; a larger vocabulary keeps the most frequent.
MAX_CATEGORIES = 10_000


class Frequent(frozenset[str]):
    """A catalog's values of a field (its categories, its brands), `most_first`: the same
    by how many chunks hold each, the most first."""

    most_first: tuple[str, ...]

    def __new__(cls, most_first: Sequence[str] = ()) -> Frequent:
        values = super().__new__(cls, most_first)
        values.most_first = tuple(most_first)
        return values


class CategoryVocabulary(StoreView[frozenset[str]]):
    """The distinct categories in the store, re-read every `refresh_seconds` (`FIELD`: a
    subclass reads another indexed keyword field the same way, e.g. BrandVocabulary).

    Read with the store's facet over the indexed `category` field (`keyword_counts`): the
    engine counts from its payload index without reading a point (milliseconds, where the
    scroll it replaces read every chunk). How it is kept and refreshed: app.query.store_view.
    """

    FIELD = "category"

    def _empty(self) -> frozenset[str]:
        return Frequent()

    def _read(self) -> frozenset[str] | None:
        """The store's categories, or None when the read failed."""
        try:
            counts = self.store.keyword_counts(self.FIELD, limit=MAX_CATEGORIES)
        except StoreError as e:
            logger.warning(
                "could not read the catalog's %s values (keeping the last): %s", self.FIELD, e
            )
            return None
        if len(counts) >= MAX_CATEGORIES:
            logger.warning(
                "over %d %s values: only the most frequent are heard", MAX_CATEGORIES, self.FIELD
            )
        held: dict[str, int] = {}
        for name, n in counts.items():
            if name.strip():
                held[name.strip()] = held.get(name.strip(), 0) + n
        found = Frequent(sorted(held, key=lambda name: (-held[name], name)))
        logger.debug("catalog %s values: %s", self.FIELD, sorted(found))
        return found


class BrandVocabulary(CategoryVocabulary):
    """The distinct brands in the store (what "not Samsung" or "only Nike" can name)."""

    FIELD = "brand"
