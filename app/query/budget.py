"""Budget words a few words away from their amount, in either order: "$50 budget", "my limit
is 40 bucks", "70 is the max", "with a budget around 200", "budget for a tent is $200".

A rule over a window, not a list of phrasings. A budget word (phrasebook `budget_words`:
"budget", "spend", "limit", ...) claims the nearest amount on either side; a bound word
claims one on its own side ("under" before it, "or less" after it). Between them at most
WINDOW_WORDS words and no clause break. The amount becomes an upper bound when:
- only filler words stand between them (`budget_gap_words`, "is", "my", "around", ...), or
  the word is a budget word and the amount carries a currency ("budget for a tent is $200");
- a bare number is no measure ("2 kg", "10k"), counts nothing ("2 kids"; but "budget 50
  headphones" is money) and, after a bound word, follows no age or size talk ("a kid
  under 10"; "a gift for my son, budget 30" is money).
An amount already heard (app/query/price.py) keeps its bounds, except that "around" with a
budget word is the budget's top ("a budget around 200": at most 200); a budget word next
to it joins its phrase, so neither is left in the search text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import takewhile
from typing import Literal

from app.query.amounts import Amount, AmountScanner, PriceMatch
from app.query.phrasebook import Phrasebook, alternation

# Words allowed between a budget word and its amount ("my budget would only be about 50").
WINDOW_WORDS = 4
# A budget word and an amount in different clauses are not about each other.
_CLAUSE_BREAK = re.compile(r"[,;.!?\n]")
_GAP_WORD = re.compile(r"[\w'~]+")

# Where the amount stands relative to the cue.
Side = Literal["follows", "precedes"]


@dataclass(frozen=True, slots=True)
class Cue:
    start: int
    end: int
    # Start of the words that belong to it ("with a budget", "I can spend").
    lead: int
    money: bool
    sides: tuple[Side, ...]


@dataclass(frozen=True, slots=True)
class Option:
    index: int
    side: Side
    words: int
    filler: bool
    # The text between the cue and the amount's phrase.
    gap: tuple[int, int]


def _words_pattern(phrases: list[str]) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-])(?:{alternation(phrases)})(?![\w-])", re.IGNORECASE)


class BudgetWindow:
    def __init__(self, book: Phrasebook, amounts: AmountScanner) -> None:
        self.amounts = amounts
        self._money = _words_pattern(book.budget_words)
        self._before = _words_pattern(book.upper_bound)
        self._after = _words_pattern(book.upper_bound_after)
        self._lead = re.compile(
            rf"(?:(?<![\w'])(?:{alternation(book.budget_lead_ins)})\s+)+$", re.IGNORECASE
        )
        approx = {w for p in book.approximately for w in _GAP_WORD.findall(p.lower())}
        self._filler = {w.lower() for w in book.budget_gap_words} | approx

    def apply(
        self, text: str, amounts: list[Amount], heard: list[PriceMatch | None]
    ) -> list[PriceMatch | None]:
        """`heard` (what each amount was heard as) with the budget words' claims added."""
        heard = list(heard)
        for cue in self._cues(text):
            if any(_overlaps(cue, m) for m in heard if m is not None):
                continue  # already part of a price phrase
            for option in self._options(text, cue, amounts, heard):
                old = heard[option.index]
                new = self._accept(text, cue, option, amounts[option.index], old)
                if new is not None:
                    heard = [new if m is old and m is not None else m for m in heard]
                    heard[option.index] = new
                    break
        return heard

    def _cues(self, text: str) -> list[Cue]:
        cues = []
        for m in self._money.finditer(text):
            lead = self._lead.search(text[: m.start()])
            start = lead.start() if lead else m.start()
            cues.append(Cue(m.start(), m.end(), start, True, ("follows", "precedes")))
        bounds: tuple[tuple[re.Pattern[str], Side], ...] = (
            (self._before, "follows"),
            (self._after, "precedes"),
        )
        for pattern, side in bounds:
            for m in pattern.finditer(text):
                cues.append(Cue(m.start(), m.end(), m.start(), False, (side,)))
        # Budget words first where cues overlap ("max budget": the budget word leads).
        return sorted(cues, key=lambda c: (c.start, not c.money))

    def _options(
        self, text: str, cue: Cue, amounts: list[Amount], heard: list[PriceMatch | None]
    ) -> list[Option]:
        options = [
            o
            for side in cue.sides
            if (o := self._nearest(text, cue, side, amounts, heard)) is not None
        ]
        # Filler between them over other words, money over bare numbers, near over far,
        # and the amount after the word over the one before it.
        return sorted(
            options,
            key=lambda o: (
                not o.filler,
                amounts[o.index].currency is None,
                o.words,
                o.side != "follows",
            ),
        )

    def _nearest(
        self,
        text: str,
        cue: Cue,
        side: Side,
        amounts: list[Amount],
        heard: list[PriceMatch | None],
    ) -> Option | None:
        """The nearest amount on `side` that can be a price, within the window."""
        order = range(len(amounts)) if side == "follows" else range(len(amounts) - 1, -1, -1)
        for i in order:
            a, m = amounts[i], heard[i]
            lo, hi = (m.start, m.end) if m is not None else (a.start, a.end)
            if (side == "follows" and lo < cue.end) or (side == "precedes" and hi > cue.start):
                continue
            # The cue's lead-ins belong to it: "50 | max budget", "50 is | my limit".
            gap = text[cue.end : lo] if side == "follows" else text[hi : cue.lead]
            words = [w.lower() for w in _GAP_WORD.findall(gap)]
            if _CLAUSE_BREAK.search(gap) or len(words) > WINDOW_WORDS:
                return None
            if m is None and self.amounts.is_measure(text, a):
                continue  # "spend 30 minutes": look further
            filler = all(w in self._filler for w in words)
            gap_span = (cue.end, lo) if side == "follows" else (hi, max(hi, cue.lead))
            return Option(i, side, len(words), filler, gap_span)
        return None

    def _accept(
        self, text: str, cue: Cue, option: Option, a: Amount, old: PriceMatch | None
    ) -> PriceMatch | None:
        if old is not None:
            if not option.filler or not (cue.money or old.kind == "around"):
                return None
            pieces = self._join(text, old.pieces, cue, option)
            if old.kind == "around":
                return _upper(a, pieces)
            start, end = pieces[0][0], pieces[-1][1]
            return PriceMatch(
                old.min_price, old.max_price, old.currency, start, end, old.kind, pieces
            )
        if not option.filler and not (cue.money and a.currency is not None):
            return None
        if a.currency is None:
            budget_before = cue.money and option.side == "follows"
            if self.amounts.counts_something(text, a) and not budget_before:
                return None
            if not cue.money and self.amounts.age_or_size_before(text, min(cue.start, a.start)):
                return None
        return _upper(a, self._join(text, ((a.start, a.end),), cue, option))

    def _join(
        self, text: str, pieces: tuple[tuple[int, int], ...], cue: Cue, option: Option
    ) -> tuple[tuple[int, int], ...]:
        """The phrase's pieces with the cue's and the filler words around them ("my budget |
        for a tent | is $200"): one piece when only filler stands between."""
        lo, hi = option.gap
        words = [(m.start(), m.end(), m.group().lower()) for m in _GAP_WORD.finditer(text, lo, hi)]
        spans = [*pieces, (cue.lead, cue.end)]
        if option.filler:
            spans.append((lo, hi))
        else:
            edge = len(list(takewhile(lambda w: w[2] in self._filler, words)))
            if edge:
                spans.append((lo, words[edge - 1][1]))
            edge = len(list(takewhile(lambda w: w[2] in self._filler, reversed(words))))
            if edge:
                spans.append((words[-edge][0], hi))
        merged: list[tuple[int, int]] = []
        for s, e in sorted(spans):
            if merged and not text[merged[-1][1] : s].strip():
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        return tuple(merged)


def _overlaps(cue: Cue, m: PriceMatch) -> bool:
    return any(s < cue.end and cue.start < e for s, e in m.pieces)


def _upper(a: Amount, pieces: tuple[tuple[int, int], ...]) -> PriceMatch:
    return PriceMatch(None, a.value, a.currency, pieces[0][0], pieces[-1][1], "upper", pieces)
