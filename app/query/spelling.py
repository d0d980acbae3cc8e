"""Shoppers' misspellings mended against the catalog's own words.

A fifth of real shop queries carry a word no product name contains ("cieling fan", "wall
pannels", "tsnkless water heater", "marble counter topsealer"): BM25 finds nothing for it
and the dense branch only sometimes guesses. A word the catalog never uses is replaced by:
- the most frequent catalog word one edit away (a letter dropped, added, changed, or two
  swapped: "cieling" -> "ceiling"), or else
- two catalog words it runs together ("topsealer" -> "top sealer"), or else
- in words of TWO_EDITS_FROM letters or more, the catalog word two edits away
  ("miricale" -> "miracle"), the most frequent among equals;
and two typed words the names write as one more often than as two are joined ("de walt"
-> "dewalt", "deck over" -> "deckover").

Only words the catalog lacks are touched, so a correct query is never changed; words with
digits (model numbers, sizes), short words and words the encoder knows whole are left
alone, and a candidate must be a word the catalog uses at least MIN_COUNT times, so one
typo in a title is not a target. The words come from the product names in the store
(`CatalogWords`), never from a list in code: a shop's brands and jargon are words here.
"""

from __future__ import annotations

import itertools
import logging
import re
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping

from app.core.words import plain_forms
from app.query.store_view import StoreView
from app.store import StoreError, VectorStore
from app.store.base import GROUP_FIELD, NAME_FIELD

logger = logging.getLogger(__name__)

_WORD = re.compile(r"[a-z]+")
# A typed word: letters only, not part of a token with digits or dots ("36in", "peb2060").
_TYPED = re.compile(r"(?<![\w.])[A-Za-z]+(?![\w.])")

# Shorter words are too often a unit, an abbreviation or a different word one edit away.
MIN_LENGTH = 4
# A correction must be a word at least this many names use (a typo in one title is not).
MIN_COUNT = 3
# Each half of a run-together word: this long at least ("a"+"ttic" is not a split).
MIN_PART = 3
# Two edits away ("miricale" -> "miracle") only from words this long: a shorter word is
# two edits from too many others ("vynal": "vinyl", "final", "canal").
TWO_EDITS_FROM = 7
MAX_EDITS = 2
# A word names a kind of product when at least this share of the names using it end with it.
KIND_SHARE = 0.5


def catalog_word_counts(texts: Iterable[str]) -> Counter[str]:
    """How many of `texts` use each lowercase word, and each pair of adjacent words (keyed
    "a b"; a word has no space, so the two never collide), once per text."""
    counts: Counter[str] = Counter()
    for text in texts:
        words = _WORD.findall(text.lower())
        counts.update(set(words))
        counts.update({f"{a} {b}" for a, b in itertools.pairwise(words)})
    return counts


def name_ends(texts: Iterable[str]) -> Counter[str]:
    """How many of `texts` end with each lowercase word: the kinds of product a shop's
    names end with ("tent", "bag", "headphones"), read by `Speller.kind`."""
    return Counter(words[-1] for text in texts if (words := _WORD.findall(text.lower())))


def _deletions(word: str, depth: int) -> set[str]:
    """`word` with up to `depth` letters left out, anywhere."""
    found, frontier = {word}, {word}
    for _ in range(depth):
        frontier = {w[:i] + w[i + 1 :] for w in frontier for i in range(len(w))}
        found |= frontier
    return found


def distance(a: str, b: str) -> int:
    """Edits from `a` to `b`: a letter left out, added, changed, or two neighbours swapped
    (optimal string alignment)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[-1]


class Speller:
    """Mends the words of a query that the catalog does not use (see the module).

    Candidates are found by symmetric deletion (a word and a typo of it share a string
    with at most two letters left out of each), so a lookup is a few dozen dict reads
    whatever the catalog's size; the index is built once per read of the catalog's words.

    Args:
        counts: how many product names use each word (`catalog_word_counts`).
        dictionary: words known to be words though the catalog lacks them (the encoder's
            whole-word vocabulary): "could", "show" or "lease" are not typos of "cold",
            "snow" or "ease".
        ends: how many names end with each word (`name_ends`), for `kind`.
    """

    def __init__(
        self,
        counts: Mapping[str, int],
        dictionary: Collection[str] = (),
        ends: Mapping[str, int] | None = None,
    ) -> None:
        self.counts = counts
        self.dictionary = dictionary
        self.ends = ends or {}
        self._index: dict[str, list[str]] = {}
        for word in counts:
            if len(word) >= MIN_LENGTH and " " not in word and self.weight(word) >= MIN_COUNT:
                for variant in _deletions(word, MAX_EDITS):
                    self._index.setdefault(variant, []).append(word)

    def weight(self, word: str) -> int:
        """How many names use `word` in any of its forms ("guards" counts "guard" too)."""
        return sum(self.counts.get(f, 0) for f in plain_forms(word))

    def kind(self, word: str) -> bool:
        """Whether `word` (any case, any plain form) names a kind of product the shop sells:
        at least MIN_COUNT names end with it, and at least KIND_SHARE of the names using it
        ("sleeping bag" ends names; "black" and "white" mostly stand inside them)."""
        ends = sum(self.ends.get(f, 0) for f in plain_forms(word.lower()))
        return ends >= MIN_COUNT and ends >= KIND_SHARE * self.weight(word.lower())

    def word(self, word: str) -> str:
        """`word` mended, or itself: lowercase letters only in, catalog words out."""
        if len(word) < MIN_LENGTH or word in self.dictionary or self.weight(word) > 0:
            return word
        near = self._near(word)
        if near and near[0][0] == 1:
            return near[0][2]
        # A word run together before a second edit: "headlag" is "head lag", not "headlamp".
        splits = [
            (word[:i], word[i:])
            for i in range(MIN_PART, len(word) - MIN_PART + 1)
            if self.counts.get(word[:i], 0) >= MIN_COUNT
            and self.counts.get(word[i:], 0) >= MIN_COUNT
        ]
        if splits:
            a, b = max(splits, key=lambda s: min(self.counts[s[0]], self.counts[s[1]]))
            return f"{a} {b}"
        if near and len(word) >= TWO_EDITS_FROM:
            return near[0][2]
        return word

    def edits_to_nearest(self, word: str) -> int | None:
        """Edits from `word` to the nearest catalog word a typo may be of (at most
        MAX_EDITS; None: none that near)."""
        near = self._near(word)
        return near[0][0] if near else None

    def _near(self, word: str) -> list[tuple[int, int, str]]:
        """(edits, -weight, word) of the catalog words at most MAX_EDITS away, best first."""
        near = []
        for candidate in {c for v in _deletions(word, MAX_EDITS) for c in self._index.get(v, ())}:
            # Typists rarely get the first letter wrong ("thower" is "thrower", not
            # "shower"), though a stray one goes before it ("estone": "stone").
            if candidate[0] != word[0] and candidate[0] != word[1]:
                continue
            edits = distance(word, candidate)
            if edits <= MAX_EDITS:
                near.append((edits, -self.weight(candidate), candidate))
        return sorted(near)

    def correct(self, text: str) -> str:
        """`text` with its mended words (case and everything else kept as typed)."""
        if not self.counts:
            return text

        def mend(m: re.Match[str]) -> str:
            typed = m.group(0)
            fixed = self.word(typed.lower())
            return typed if fixed == typed.lower() else fixed

        return self._joined(_TYPED.sub(mend, text))

    def _joined(self, text: str) -> str:
        """Two typed words the catalog writes as one, joined: "de walt" -> "dewalt", "deck
        over" -> "deckover", where more names use the one word than the two."""
        parts = re.split(r"(\s+)", text)  # words at even places, the spaces between them
        out = [parts[0]]
        for space, word in zip(parts[1::2], parts[2::2], strict=True):
            last = out[-1]
            joined = (last + word).lower()
            if (
                last.isalpha()
                and word.isalpha()
                and last.isascii()
                and word.isascii()
                and self.counts.get(joined, 0) >= MIN_COUNT
                and self.counts[joined] > self.counts.get(f"{last.lower()} {word.lower()}", 0)
            ):
                out[-1] = joined
            else:
                out += [space, word]
        return "".join(out)


def dictionary_words(vocabulary: Iterable[str]) -> frozenset[str]:
    """The whole words of a tokenizer's vocabulary (`Tokenizer.get_vocab()`): WordPiece's
    "##" pieces are not words; SentencePiece's and byte-level BPE's word-start marks go."""
    words = (t.lstrip("\u2581\u0120") for t in vocabulary if not t.startswith("##"))
    return frozenset(w for w in words if len(w) >= MIN_LENGTH and w.isascii() and w.isalpha())


# A read scrolls every product name and indexes its words (seconds, in a background
# thread; BENCHMARKS.md), and a shop's words change slowly: a new word waits this long.
WORDS_REFRESH_SECONDS = 600.0


class CatalogWords(StoreView[Speller]):
    """A `Speller` over the words of the product names in the store, re-read every
    `refresh_seconds` (app.query.store_view). Names, not descriptions: the words shoppers
    type are the ones titles use, and one read stays a scroll of one short field."""

    def __init__(
        self,
        store: VectorStore,
        dictionary: Collection[str] = (),
        refresh_seconds: float = WORDS_REFRESH_SECONDS,
    ) -> None:
        super().__init__(store, refresh_seconds)
        self.dictionary = dictionary

    def _empty(self) -> Speller:
        return Speller({}, self.dictionary)

    def _read(self) -> Speller | None:
        started = time.perf_counter()
        names: dict[int, str] = {}
        try:
            for chunk in self.store.iter_chunks(fields=[GROUP_FIELD, NAME_FIELD]):
                name = chunk.payload.get(NAME_FIELD)
                if isinstance(name, str):
                    names.setdefault(chunk.product_id, name)  # once per product, not chunk
        except StoreError as e:
            logger.warning("could not read the catalog's words (keeping the last): %s", e)
            return None
        if not names:
            # A service starts before its sync's first batch lands: no words is no answer,
            # read again soon (store_view's retry), not after a whole refresh interval.
            logger.debug("no product names in the store yet")
            return None
        speller = Speller(
            catalog_word_counts(names.values()), self.dictionary, name_ends(names.values())
        )
        logger.info(
            "catalog words and word pairs: %d from %d product names in %.1fs",
            len(speller.counts),
            len(names),
            time.perf_counter() - started,
        )
        return speller


def read_speller(store: VectorStore, vocabulary: Iterable[str]) -> Speller:
    """The service's speller for `store`, read now and once (the eval and the ranker's
    training search as the service does): `vocabulary` is the encoder's tokenizer's."""
    return CatalogWords(store, dictionary_words(vocabulary)).get()
