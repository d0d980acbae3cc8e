"""The offline parser's vocabulary, read from phrasebook.json (data, so it grows without code)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

PHRASEBOOK_PATH = Path(__file__).with_name("phrasebook.json")


def alternation(phrases: list[str] | set[str]) -> str:
    """A regex alternation of literal phrases, longest first (so "less than" beats "less")."""
    ordered = sorted({p.lower() for p in phrases}, key=len, reverse=True)
    # Inner spaces match any run of whitespace: people type "less  than".
    return "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in ordered)


@dataclass(frozen=True)
class Phrasebook:
    currency_symbols: dict[str, str]
    currency_words: dict[str, str]
    currency_display: dict[str, str]
    upper_bound: list[str]
    upper_bound_after: list[str]
    upper_bound_currency_only: list[str]
    budget_words: list[str]
    budget_lead_ins: list[str]
    budget_gap_words: list[str]
    lower_bound: list[str]
    lower_bound_after: list[str]
    approximately: list[str]
    range_joiners: list[str]
    range_openers: list[str]
    around_band: float
    soft_cheap: list[str]
    # "best sellers": what shoppers bought most first (the products' signals).
    soft_popular: list[str]
    number_units_not_price: list[str]
    not_price_context_before: list[str]
    category_kind_words: list[str]
    category_blocking_words_before: list[str]
    determiners: list[str]
    # "the sofa", "your stove" inside a product's text: a thing it is used with, not what
    # it is ("save the sofa from claws"; app/query/kind.py).
    referring_determiners: list[str]
    function_words: list[str]
    # Never the kind of product asked for ("need", "something"; with `names_someone` and
    # `gift_words`, "dad", "gift": `not_kind`): app/query/kind.py.
    not_kind_words: list[str]
    # Whom and when, also no kind: words that still say what to search for ("something for
    # a baby"); with a gift word, the shelves when that search finds nothing close ("gift
    # ideas for my dad"; app/query/category.py, app/query/shelves.py).
    names_someone: list[str]
    gift_words: list[str]
    # "a 10 year old", "3-year-olds": whom it is for (`person_ages`); each unit's worth in years.
    age_units: dict[str, float]
    # Who is that old, by the most years each word covers (first fits): what the encoder
    # reads ("for a 3-year-old" found dog beds named "Quill 3", "for a child" toys).
    age_words: dict[str, float]
    # "looking for a stove": a "for" after these still comes before the kind asked for.
    kind_openers: list[str]
    number_words: dict[str, float]
    # Counts spelled out: "for two players instead" (app/query/followup.py), "a tent for
    # four people" (app/query/capacity.py).
    count_words: dict[str, int]
    # "for 4 people": a product named "2-Person …" holds too few (app/query/capacity.py).
    capacity_units: dict[str, str]
    # "only 2 person tents": room for that many and no other (app/query/capacity.py).
    room_exact_words: list[str]
    # "over ear headphones only": names that use those words (app/query/restriction.py).
    restricting_words: list[str]
    # "bigger" after "a tent for 2 people": room for one more (app/query/followup.py).
    roomier_words: list[str]
    # Why or for whom, not what: left out of the word match ("a gift for a runner" matched
    # the pens that arrive "in a gift box"); the meaning keeps them (app/query/ordering.py).
    unsearched_words: list[str]
    # "not", "without": what follows is not wanted (app/query/negation.py; follow-ups too).
    negations: list[str]
    # "no dig edging", "salt free ice melt": a catalog that names products by an absence.
    absence_before: list[str]
    absence_after: list[str]
    # "not too loud": a degree, not a thing to rule out (searched as typed).
    negation_degrees: list[str]
    # Follow-ups (app/query/followup.py): phrases that refine the conversation's last turn.
    followup_similar: list[str]
    # Before a shown product named by its place: a question about it ("is the second one …").
    followup_about: list[str]
    # The whole query asks for more of the same: "show me more", "anything else?".
    followup_more: list[str]
    # A question about all the products shown: "which one has the longest battery?".
    followup_about_all: list[str]
    # A question about "it", the top pick: "is it heavy?", "does it fold?".
    followup_about_top: list[str]
    followup_cheaper: list[str]
    followup_openers: list[str]
    followup_kept_openers: list[str]
    followup_trailing: list[str]
    followup_fillers: list[str]
    followup_switch: list[str]
    followup_refers_back: list[str]
    # Word endings of a quality ("washable", "waterproof", "cordless"): alone, a refinement.
    attribute_endings: list[str]
    # Colours, materials, sizes: alone, a refinement ("black" after dog beds).
    attribute_words: list[str]
    # Words of which a product is one at a time (its colour, material, season, size): in a
    # follow-up, one replaces another the search has ("what about black?" after "a red
    # kettle" searched "a red kettle black"; app/query/followup.py).
    alternatives: list[list[str]]
    # "The first aid kit" names a product, not the first one shown (the catalog's names
    # using the pair count too: app/query/followup_effects.py).
    ordinal_compounds: list[str]
    ordinal_words: dict[str, int]

    def not_kind(self) -> list[str]:
        """Every word that never names the kind of product asked for."""
        return [*self.not_kind_words, *self.names_someone, *self.gift_words]

    def count(self) -> str:
        """A count, as a regex group: digits or one of `count_words` ("4", "four")."""
        return rf"(\d+|{alternation(list(self.count_words))})"

    @cached_property
    def _age(self) -> re.Pattern[str]:
        # A count (group 1), one of `age_units` (group 2) and "old": "8 years old", "3-year-olds".
        units = alternation(list(self.age_units))
        return re.compile(rf"(?<![\w.-]){self.count()}[\s-]*({units})[\s-]*olds?(?![\w-])", re.I)

    @cached_property
    def _age_ends(self) -> re.Pattern[str]:
        ends = alternation([*self.function_words, *self.names_someone])
        return re.compile(rf"\s*(?:$|[^\w\s-]|(?:{ends})(?![\w-]))", re.I)

    @cached_property
    def _for_whom(self) -> re.Pattern[str]:
        # "for a 30 year old runner", "for my 8 year old": the age that follows is a person's.
        return re.compile(rf"\bfor\s+(?:(?:{alternation(self.determiners)})\s+)?$", re.I)

    def person_ages(self, text: str) -> list[re.Match[str]]:
        """The ages in `text` that are a person's ("a 10 year old", "my 8 year old son", "for
        a 30 year old runner"): whom a product is for, no word of it. An age is a person's
        where it ends (the text, a sign, a function word or a person) or after "for": "a 12
        year old whisky" is the whisky's, a word of its name."""
        return [
            m
            for m in self._age.finditer(text)
            if self._age_ends.match(text, m.end()) or self._for_whom.search(text[: m.start()])
        ]

    def without_ages(self, text: str, said: Callable[[re.Match[str]], str]) -> str:
        """`text` with each person's age replaced by `said(match)`."""
        pieces, at = [], 0
        for m in self.person_ages(text):
            pieces += [text[at : m.start()], said(m)]
            at = m.end()
        return "".join(pieces) + text[at:]

    def aged(self, count: str, unit: str) -> str:
        """Who is `count` `unit` old ("10", "year": "child"), by `age_words`."""
        years = self.count_value(count) * self.age_units[unit.lower()]
        # Older than every word covers: nothing ("my 40 year old wife" is my wife).
        return next((word for word, most in self.age_words.items() if years <= most), "")

    def count_value(self, word: str) -> int:
        """What a count `count` matched is worth ("4", "Four": 4)."""
        return int(word) if word.isdigit() else self.count_words[word.lower()]

    def currency_of(self, token: str) -> str | None:
        t = token.lower().strip()
        return self.currency_symbols.get(t) or self.currency_words.get(t)


@lru_cache
def load_phrasebook(path: Path = PHRASEBOOK_PATH) -> Phrasebook:
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw.pop("_about", None)
    return Phrasebook(**raw)
