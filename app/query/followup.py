"""Follow-ups: a query read as a refinement of the conversation's last turn.

The last turn's state (what it searched for, the filters heard in words, the products it
showed) comes back with the request (app/api/conversation.py). A query is a follow-up when
it says so, by rule (phrasebook.json, `followup_*`):
- "more like the second one", "similar to #2", "like the first": search by that product;
- "cheaper", "less expensive", "under that": max_price strictly below the median price
  shown within the last turn's bounds (and lower prices first);
- "not Samsung", "without Acme or Brumm": exclude brands; "only Nike", "Nike ones",
  "what about Nike": only those (brands are the catalog's own, BrandVocabulary);
- a new budget ("under $60") replaces both carried price bounds;
- a category named alone ("only kitchen ones") sets the category filter;
- "in black", "with a hood", "waterproof ones": the words are added to the last search text;
- nothing but constraints ("under $50"): the same search under them.
Anything else is a new question and starts fresh: nothing is carried (a hidden filter
from an unrelated question would silently hide the right products). What is carried keeps
its place below this turn's words and the request's filters (app/query/plan.py).
docs/decisions/conversation-state.md says why each rule is what it is.
"""

from __future__ import annotations

import logging
import re
import statistics
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from app.core.errors import RecommenderError
from app.query.category import word_forms
from app.query.phrasebook import Phrasebook, alternation
from app.query.plan import FilterPlan
from app.query.search import (
    CANDIDATE_FACTOR,
    SearchOutcome,
    constrained_retrieve,
    log_price,
    nudge_by_cost,
)
from app.query.types import Constraint, FilterField, ParsedQuery
from app.retrieval import Retriever

logger = logging.getLogger(__name__)

# Products a follow-up can point at ("the second one") and price ("cheaper"): the first of
# those shown, in order. Also what keeps the state token small (app/api/conversation.py).
MAX_SHOWN = 20
# The carried search text grows with each "in black"; past this it stops growing.
MAX_SEARCH_TEXT = 300
# A carried filter's words are for the chip only: cut to this.
MAX_FILTER_TEXT = 60
# Brands carried at most (included and excluded together).
MAX_BRANDS = 6
PRICE_FIELDS = ("min_price", "max_price")

_TOKEN = re.compile(r"[\w][\w'.+-]*|&")
_SEPARATOR = re.compile(r"^\s*(?:,|/|or|and|nor|,\s*or|,\s*and)\s*$", re.I)
_EDGES = re.compile(r"^[\s,;:.!?-]+|[\s,;:.!?-]+$")


class FollowUpError(RecommenderError):
    """The follow-up refers to something the last turn did not show (e.g. a 7th of 5)."""


@dataclass(frozen=True, slots=True)
class ShownProduct:
    """A product the turn showed, in order; `outside`: outside its price bounds."""

    id: int
    price: float | None
    outside: bool = False


@dataclass(frozen=True, slots=True)
class ConversationState:
    """What one turn understood, handed to the next one as its context.

    `filters`: those heard in words (this turn's or carried), never the request's own
    `filters` (the client owns those and sends them again). `like`: the product the turn
    searched by instead of a text.
    """

    search_text: str
    filters: tuple[Constraint, ...] = ()
    shown: tuple[ShownProduct, ...] = ()
    like: int | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """A query read in its conversation: what to search and which filters come along."""

    parsed: ParsedQuery
    carried: tuple[Constraint, ...] = ()
    like: int | None = None
    follow_up: bool = False


@dataclass(slots=True)
class _Cuts:
    """Spans of the query that a rule took (and so are not words to search for)."""

    spans: list[tuple[int, int]] = field(default_factory=list)

    def add(self, start: int, end: int) -> None:
        self.spans.append((start, end))

    def taken(self, start: int, end: int) -> bool:
        return any(s < end and start < e for s, e in self.spans)

    def rest(self, text: str) -> str:
        kept, last = [], 0
        for start, end in sorted(self.spans):
            if start >= last:
                kept.append(text[last:start])
            last = max(last, end)
        kept.append(text[last:])
        return _EDGES.sub("", " ".join(" ".join(kept).split()))


def _phrases(words: Iterable[str]) -> str:
    return alternation(list(words))


class FollowUpReader:
    """Reads a query against the last turn's state (the rules in the module docstring)."""

    def __init__(self, book: Phrasebook) -> None:
        self.book = book
        ordinal = (
            rf"(?:the\s+)?(?:(?P<word>{_phrases(book.ordinal_words)}|last)"
            r"|(?P<num>\d{1,2})(?:st|nd|rd|th)|(?:#\s*|number\s+|no\.?\s*)(?P<hash>\d{1,2}))"
        )
        self._similar = re.compile(
            rf"(?<![\w-])(?:{_phrases(book.followup_similar)})\s+{ordinal}"
            r"(?:\s+(?:one|ones|product|item|option|pick|result))?(?![\w-])",
            re.I,
        )
        self._cheaper = re.compile(
            rf"(?<![\w-])(?:{_phrases(book.followup_cheaper)})(?![\w-])", re.I
        )
        self._exclude_end = re.compile(
            rf"(?<![\w-])(?:{_phrases(book.followup_exclude)})\s*$", re.I
        )
        self._negated = re.compile(rf"^\s*(?:{_phrases(book.followup_exclude)})(?![\w-])", re.I)
        self._opener = re.compile(
            rf"^\s*(?:{_phrases(book.followup_openers)})(?![\w-])[\s,]*", re.I
        )
        self._kept_opener = re.compile(
            rf"^\s*(?:{_phrases(book.followup_kept_openers)})(?![\w-])", re.I
        )
        self._trailing = re.compile(
            rf"(?<![\w-])(?:{_phrases(book.followup_trailing)})[\s?!.]*$", re.I
        )
        fillers = _phrases(book.followup_fillers)
        self._fillers = re.compile(rf"^(?:(?:{fillers})(?![\w-])[\s,]*)+", re.I)
        self._fillers_end = re.compile(rf"(?:[\s,]*(?<![\w-])(?:{fillers}))+[\s?!.]*$", re.I)
        self._brand_keys: tuple[frozenset[str], dict[str, str]] | None = None

    def read(
        self,
        parsed: ParsedQuery,
        state: ConversationState | None,
        brands: Collection[str] = (),
        categories: Collection[str] = (),
    ) -> Turn:
        """This turn's search: `parsed` alone without a state or for a new question.

        Raises:
            FollowUpError: it points at a product the last turn did not show.
        """
        if state is None:
            return Turn(parsed)
        query = parsed.query
        cuts = _Cuts()
        cue = False
        like = state.like
        ref = self._similar.search(query)
        if ref is not None:
            like = self._pointed_at(ref, state).id
            cuts.add(*ref.span())
            cue = True
        own: list[Constraint] = []
        cheaper = self._cheaper.search(query)
        if cheaper is not None:
            cuts.add(*cheaper.span())
            cue = True
        named = _Cuts(list(cuts.spans))
        brand_cs = self._brands(query, brands, named)
        cue = cue or bool(brand_cs)
        # The constraints the parser heard are not words to search for; a category heard
        # inside a brand's name ("Brumm Audio") is the brand's.
        heard = []
        for c in parsed.constraints:
            at = query.lower().find(c.text.lower()) if c.text else -1
            if at >= 0 and c.field == "category" and brand_cs and named.taken(at, at + len(c.text)):
                continue
            heard.append(c)
            if at >= 0:
                cuts.add(at, at + len(c.text))
        cuts.spans += named.spans
        parsed = ParsedQuery(query, parsed.search_text, tuple(heard), parsed.parser)
        if cheaper is not None:
            own += self._cheaper_constraints(cheaper.group(0), parsed, state)
        negated = self._negated.match(query)
        if negated is not None and not brand_cs:
            # "not Samsung" for no brand of the catalog, "without a hood": a negation is
            # never searched for (its words would attract what it excludes).
            logger.info("follow-up %r: the negated words name no brand; ignored", query)
            cuts.add(0, len(query))
            cue = True
        opener = self._opener.match(query)
        if opener is not None and opener.end() > 0:
            cuts.add(0, opener.end())
            cue = True
        trailing = self._trailing.search(query)
        if trailing is not None:
            cuts.add(*trailing.span())
        cue = cue or trailing is not None or self._kept_opener.match(query) is not None
        words = self._fillers.sub("", self._fillers_end.sub("", cuts.rest(query)))
        category = self._category(words, categories)
        if category is not None:
            words = ""
        if not cue and words:
            return Turn(parsed)  # a new question (nothing but constraints is a follow-up)
        own += brand_cs
        if category is not None:
            own.append(category)
        if words and ref is None:
            like = None  # new words: a text search again
        text = state.search_text
        if words and words.lower() not in text.lower():
            # Past MAX_SEARCH_TEXT the text stops growing (it travels in the token).
            text = f"{text} {words}"[:MAX_SEARCH_TEXT].strip()
        turn_parsed = ParsedQuery(query, text, (*parsed.constraints, *own), parsed.parser)
        carried = _carried(state.filters, turn_parsed)
        logger.info("follow-up %r: search %r, like %s, %d carried", query, text, like, len(carried))
        return Turn(turn_parsed, carried, like, follow_up=True)

    def _pointed_at(self, ref: re.Match[str], state: ConversationState) -> ShownProduct:
        word, num, hashed = ref.group("word"), ref.group("num"), ref.group("hash")
        shown = state.shown
        if word is not None and word.lower() == "last":
            index = len(shown)
        elif word is not None:
            index = self.book.ordinal_words[" ".join(word.lower().split())]
        else:
            index = int(num or hashed)
        if not 1 <= index <= len(shown):
            raise FollowUpError(
                f"{ref.group(0)!r}: the last answer showed {len(shown)} product"
                f"{'' if len(shown) == 1 else 's'}"
            )
        return shown[index - 1]

    def _cheaper_constraints(
        self, text: str, parsed: ParsedQuery, state: ConversationState
    ) -> list[Constraint]:
        """Below the median shown price (within the last bounds); lower prices first."""
        out = (
            [] if parsed.get("price_preference") else [Constraint("price_preference", "low", text)]
        )
        if parsed.get("max_price") is not None:
            return out  # a budget stated in the same words wins
        prices = [p.price for p in state.shown if p.price is not None and not p.outside]
        carried = next((c for c in state.filters if c.field == "max_price"), None)
        if not prices:
            return out  # nothing fitted: the carried bound (if any) stays as it was
        # Strictly below the median: the cheaper half of what was shown stays in view to
        # compare, with whatever else is that cheap (prices are in cents).
        cap = round(statistics.median(prices) - 0.01, 2)
        if carried is not None:
            cap = min(cap, float(carried.value))
        return [Constraint("max_price", max(cap, 0.0), text), *out]

    def _brands(self, query: str, brands: Collection[str], cuts: _Cuts) -> list[Constraint]:
        """The catalog's brands named in the query: after a negation excluded (a list such
        as "no Acme or Brumm" shares it), otherwise wanted."""
        if not brands:
            return []
        keys = self._keys(brands)
        tokens = [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(query)]
        found: list[Constraint] = []
        i, last_end = 0, 0
        last_field: FilterField = "brand"
        while i < len(tokens):
            hit = None
            for n in range(min(5, len(tokens) - i), 0, -1):
                name = keys.get(" ".join(t for t, _, _ in tokens[i : i + n]))
                if name is not None:
                    hit = (name, tokens[i][1], tokens[i + n - 1][2], n)
                    break
            if hit is None or cuts.taken(hit[1], hit[2]):
                i += 1
                continue
            name, start, end, n = hit
            gap = query[last_end:start]
            if found and _SEPARATOR.match(gap):
                what: FilterField = last_field  # "no Acme or Brumm": the list shares its negation
                cuts.add(last_end, start)
            else:
                negation = self._exclude_end.search(gap)
                what = "brand" if negation is None else "exclude_brand"
                if negation is not None:
                    cuts.add(last_end + negation.start(), start)
            found.append(Constraint(what, name, query[start:end]))
            cuts.add(start, end)
            last_end, last_field = end, what
            i += n
        return found[:MAX_BRANDS]

    def _keys(self, brands: Collection[str]) -> dict[str, str]:
        """Lower-cased token runs -> the catalog's spelling (cached per vocabulary)."""
        frozen = brands if isinstance(brands, frozenset) else frozenset(brands)
        if self._brand_keys is None or self._brand_keys[0] is not frozen:
            keys = {" ".join(m.group(0).lower() for m in _TOKEN.finditer(b)): b for b in frozen}
            self._brand_keys = (frozen, {k: v for k, v in keys.items() if k})
        return self._brand_keys[1]

    def _category(self, words: str, categories: Collection[str]) -> Constraint | None:
        """The category named by what is left, when that is all that is left."""
        plain = words.lower().strip()
        for name in categories:
            if plain in word_forms(name):
                return Constraint("category", name, words)
        return None


def _carried(previous: tuple[Constraint, ...], now: ParsedQuery) -> tuple[Constraint, ...]:
    """The last turn's filters this turn keeps: a new budget replaces both bounds, a new
    category the category, wanted brands the wanted ones; an exclusion stays unless the
    brand is now wanted (and a brand now excluded is no longer wanted)."""
    fields = {c.field for c in now.constraints}
    named = {str(c.value) for c in now.constraints if c.field in ("brand", "exclude_brand")}
    kept = []
    for c in previous:
        if c.field in PRICE_FIELDS and fields & set(PRICE_FIELDS):
            continue
        if c.field in ("category", "price_preference") and c.field in fields:
            continue
        if c.field == "brand" and ("brand" in fields or str(c.value) in named):
            continue
        if c.field == "exclude_brand" and str(c.value) in named:
            continue
        kept.append(c)
    return tuple(kept)


def retrieve_turn(retriever: Retriever, turn: Turn, top_k: int, plan: FilterPlan) -> SearchOutcome:
    """The turn's products: by example when it points at a product, else by its text
    (blocking: call off the event loop).

    Raises:
        StoreError: the vector store failed.
    """
    text = turn.parsed.search_text
    if turn.like is None:
        return constrained_retrieve(retriever, text, top_k, plan)
    wanted = top_k * CANDIDATE_FACTOR if plan.prefer_low_price else top_k
    found = retriever.similar(turn.like, wanted, plan.search_filter)
    if found is None:  # it left the catalog since it was shown
        logger.info("product %d is gone: searching %r instead", turn.like, text)
        return constrained_retrieve(retriever, text, top_k, plan)
    if plan.prefer_low_price:
        found = nudge_by_cost(found, log_price)
    return SearchOutcome(found[:top_k])


def next_state(turn: Turn, plan: FilterPlan, outcome: SearchOutcome) -> ConversationState:
    """What this turn hands to the next one."""
    heard = [
        Constraint(f.field, f.value, (f.text or "")[:MAX_FILTER_TEXT])
        for f in plan.applied
        if f.source != "request"
    ]
    brands = [c for c in heard if c.field in ("brand", "exclude_brand")][:MAX_BRANDS]
    others = [c for c in heard if c.field not in ("brand", "exclude_brand")]
    shown = tuple(
        ShownProduct(p.id, p.price, p.outside_filters) for p in outcome.offered[:MAX_SHOWN]
    )
    return ConversationState(
        turn.parsed.search_text[:MAX_SEARCH_TEXT], (*others, *brands), shown, turn.like
    )


__all__ = [
    "MAX_SHOWN",
    "ConversationState",
    "FollowUpError",
    "FollowUpReader",
    "ShownProduct",
    "Turn",
    "next_state",
    "retrieve_turn",
]
