"""What a shopper does not want: "headphones for running, not over-ear", "a tent, not a
backpacking one", "not Keylight Audio headphones".

After a negation (the phrasebook's `negations`), the words up to a comma, a function word
("for", "under", "and"; unless the names pair it with the next: "not over ear") or a price
phrase are not wanted: a product whose name uses them
is not shown (`exclude_words`, a filter inside the vector search: app/store), and they
are not searched for, where they would attract exactly what the shopper ruled out. When
those words start with one of the catalog's brands, the brand is excluded instead and the
words after it are searched ("not Keylight Audio headphones": headphones, no Keylight).

A shop's names can use a negation themselves ("No-Dig Edging", "Salt-Free Ice Melt",
"Vanity without Top"): when at least MIN_COUNT names put the words after one of
`absence_before` or before one of `absence_after`, the shopper is asking for that product,
and the words stay in the search as typed. Without the catalog's words (the speller not
read yet, or QUERY_SPELLING=false) a bare "no" is not read as a negation, for the same
reason; "not", "without" and the others still are.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from app.core.words import CLAUSE_BREAK, plain_forms, split_words
from app.query.brands import Span, overlaps
from app.query.capacity import RoomReader
from app.query.phrasebook import Phrasebook, alternation
from app.query.spelling import MIN_COUNT, Speller
from app.query.types import Constraint

# Longer runs after a negation are a sentence, not a thing to rule out: left as typed.
MAX_WORDS = 4
_TOKEN = re.compile(r"[^\W_][\w'-]*")


@dataclass(frozen=True, slots=True)
class _Clause:
    words: list[re.Match[str]]  # what is not wanted, as typed
    end: int  # where the clause ends, trailing fillers included ("one")


class NegationReader:
    def __init__(self, book: Phrasebook) -> None:
        self.book = book
        self._cue = re.compile(rf"(?<![\w-])(?:{alternation(book.negations)})(?![\w-])", re.I)
        self._stop = {*book.function_words, *(n for n in book.negations if " " not in n)}
        self._determiners = set(book.determiners)
        self._trailing = set(book.followup_trailing)
        self._degrees = set(book.negation_degrees)
        self._rooms = RoomReader(book)
        self._keys: tuple[Collection[str], dict[str, str]] | None = None

    def find(
        self,
        query: str,
        taken: Sequence[Span],
        speller: Speller | None = None,
        brands: Collection[str] = (),
    ) -> tuple[list[Constraint], list[Span]]:
        """The exclusions `query` states outside `taken` (its price phrases), and the spans
        to leave out of the search text.

        Args:
            speller: the catalog's words (its counts tell a product named by an absence
                from a negation) and their mending of the excluded words.
            brands: the catalog's brands.
        """
        found: list[Constraint] = []
        spans: list[Span] = []
        counts = speller.counts if speller is not None and speller.counts else None
        keys = self._keys_of(brands)
        for cue in self._cue.finditer(query):
            if overlaps([*taken, *spans], cue.start(), cue.end()):
                continue
            clause = self._clause(query, cue, taken, counts)
            if clause is None:
                continue
            words = [w.group(0) for w in clause.words]
            brand = _brand_at_start(words, keys)
            if brand is not None:
                n, name = brand
                end = clause.words[n - 1].end()
                found.append(Constraint("exclude_brand", name, query[cue.start() : end]))
                spans.append((cue.start(), end))
                continue
            plain = split_words(" ".join(words))
            if counts is None and cue.group(0).lower() == "no":
                continue
            if counts is not None and self._named_by_absence(plain, counts):
                continue
            phrase = query[clause.words[0].start() : clause.words[-1].end()]
            if speller is not None:
                phrase = speller.correct(phrase)
            found.append(Constraint("exclude_words", phrase, query[cue.start() : clause.end]))
            spans.append((cue.start(), clause.end))
        return found, spans

    def _keys_of(self, brands: Collection[str]) -> dict[str, str]:
        """The brands by their lowercase words (cached per vocabulary: a shop may have
        thousands, and every query is read against them)."""
        if self._keys is None or self._keys[0] is not brands:
            self._keys = (brands, {" ".join(split_words(b)): b for b in brands})
        return self._keys[1]

    def _clause(
        self,
        query: str,
        cue: re.Match[str],
        taken: Sequence[Span],
        counts: Mapping[str, int] | None = None,
    ) -> _Clause | None:
        """The words the negation rules out, if they are a short run of words that starts
        with a letter and no degree ("no. 30 wheel", "no 2 pencils" and "not too loud" rule
        nothing out), or with a room ("not the 4 person ones"). A function word may open
        it where the catalog's names use it with the next word ("not over ear": "over
        ear", as in "Over-Ear Headphones"; it had ruled nothing out)."""
        words: list[re.Match[str]] = []
        last = cue.end()
        tokens = list(_TOKEN.finditer(query, cue.end()))
        for at, token in enumerate(tokens):
            low = token.group(0).lower()
            if CLAUSE_BREAK.search(query[last : token.start()]) or overlaps(taken, *token.span()):
                break
            if not words and low in self._determiners:
                last = token.end()
                continue
            if low in self._stop and not (not words and self._compound(tokens, at, counts)):
                break
            if len(words) > MAX_WORDS:
                break
            words.append(token)
            last = token.end()
        while words and words[-1].group(0).lower() in self._trailing:
            words.pop()  # "not a backpacking one": "one" goes with the clause, unsearched
        if not words or len(words) > MAX_WORDS:
            return None
        if not words[0].group(0)[0].isalpha() and not self._room(words):
            return None
        if words[0].group(0).lower() in self._degrees:
            return None  # "not too loud" names no product part: searched as typed
        return _Clause(words, last)

    def _compound(
        self, tokens: list[re.Match[str]], at: int, counts: Mapping[str, int] | None
    ) -> bool:
        """Whether the function word at `at` and the word after it are a pair the catalog's
        names use ("over ear", "in ear"); without the names' words, never."""
        if counts is None or at + 1 >= len(tokens):
            return False
        pair = f"{tokens[at].group(0).lower()} {tokens[at + 1].group(0).lower()}"
        return counts.get(pair, 0) >= MIN_COUNT

    def _room(self, words: list[re.Match[str]]) -> bool:
        """Whether `words` open with a room ("4 person", "2-person": app/query/capacity.py)."""
        said = " ".join(w.group(0) for w in words)
        room = self._rooms.asked(said)
        return room is not None and said.startswith(room.text)

    def _named_by_absence(self, words: list[str], counts: Mapping[str, int]) -> bool:
        """Whether the catalog's names use these words after "no"/"without" or before
        "free": then they name a product ("no dig edging"), not something to rule out."""
        first, last = plain_forms(words[0]), plain_forms(words[-1])
        uses = [[f"{a} {f}" for f in first] for a in self.book.absence_before]
        uses += [[f"{f} {a}" for f in last] for a in self.book.absence_after]
        # "without top" and "without tops" are one use (as the speller counts words).
        return any(sum(counts.get(p, 0) for p in forms) >= MIN_COUNT for forms in uses)


def _brand_at_start(words: list[str], keys: Mapping[str, str]) -> tuple[int, str] | None:
    """(how many of `words`, the brand) when they start with a brand of the catalog,
    longest first ("Brumm Audio" over "Brumm")."""
    for n in range(min(5, len(words)), 0, -1):
        name = keys.get(" ".join(split_words(" ".join(words[:n]))))
        if name is not None:
            return n, name
    return None
