"""Follow-ups: a query read as a refinement of the conversation's last turn.

The last turn's state (what it searched for, the filters heard in words, the products it
showed) comes back with the request (app/api/conversation.py). Whether a query is a
follow-up, and what it changes, is a grammar: followup_rules.json's rules, read in order,
each a pattern (app/query/followup_rules.py) and one of the EFFECTS below. The rules on
the query run first; then the words the parser read as constraints are taken; then the
rules on what is left. A query that no cue rule matched, with words left to search, is a
new question and starts fresh: nothing is carried (a hidden filter from an unrelated
question would silently hide the right products). Otherwise what is left is added to the
last search text, and what is carried keeps its place below this turn's words and the
request's filters (app/query/plan.py). docs/decisions/conversation-state.md says why each
rule is what it is. The turn and its state are app/query/turn.py's; retrieval is the
caller's (app/query/search.py `search_turn`).
"""

from __future__ import annotations

import logging
import re
import statistics
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from app.core.errors import RecommenderError
from app.core.words import plain_forms
from app.query.brands import BrandFinder, Span, overlaps
from app.query.category import word_forms
from app.query.followup_rules import ON_REST, Effect, Rule, compile_rule, load_rules
from app.query.phrasebook import Phrasebook, alternation
from app.query.spelling import MIN_COUNT, Speller
from app.query.turn import MAX_SEARCH_TEXT, ConversationState, ShownProduct, Turn, carried_filters
from app.query.types import Constraint, ParsedQuery

logger = logging.getLogger(__name__)

Match = re.Match[str]
_EDGES = re.compile(r"^[\s,;:.!?-]+|[\s,;:.!?-]+$")
_WORD = re.compile(r"[a-z]+")
# "The first two": how many shown products from the one named.
_COUNTS = {"two": 2, "three": 3}
# "Which one …?" is asked of at most this many of the products shown, in their order.
MAX_ABOUT = 10
# A follow-up of at most this many words of quality refines ("black", "machine washable").
MAX_ATTRIBUTE_WORDS = 2


class FollowUpError(RecommenderError):
    """The follow-up refers to something the last turn did not show (e.g. a 7th of 5)."""


@dataclass(slots=True)
class _Reading:
    """One query as the rules read it: what they took, and what they made of it."""

    query: str
    parsed: ParsedQuery
    state: ConversationState
    brands: Collection[str]
    categories: Collection[str]
    speller: Speller | None = None
    cuts: list[Span] = field(default_factory=list)
    cue: bool = False
    kept: bool = False
    switch: bool = False
    like: int | None = None
    pointed: bool = False
    about: tuple[int, ...] = ()
    about_ranked: bool = False
    own: list[Constraint] = field(default_factory=list)
    brand_spans: list[Span] = field(default_factory=list)
    words: str = ""

    def take(self, match: Match) -> None:
        """The match is a follow-up cue, and not words to search for."""
        self.cuts.append(match.span())
        self.cue = True

    def rest(self) -> str:
        """The query without what the rules took, spaces and edge punctuation tidied."""
        kept, last = [], 0
        for start, end in sorted(self.cuts):
            if start >= last:
                kept.append(self.query[last:start])
            last = max(last, end)
        kept.append(self.query[last:])
        return _EDGES.sub("", " ".join(" ".join(kept).split()))


# Positions whose effect runs on every query and does its own matching.
_MATCHED_BY_EFFECT = frozenset({"catalog_brands", "rest_edges", "rest"})


@dataclass(frozen=True, slots=True)
class _Compiled:
    rule: Rule
    patterns: tuple[re.Pattern[str], ...]
    brands: BrandFinder | None


class FollowUpReader:
    """Reads a query against the last turn's state by the grammar's rules.

    Args:
        book: the phrasebook the rules' named phrase lists come from.
        rules: the grammar, in order; followup_rules.json's by default.
    """

    def __init__(self, book: Phrasebook, rules: tuple[Rule, ...] | None = None) -> None:
        self.book = book
        compiled = []
        for rule in load_rules(book) if rules is None else rules:
            patterns = compile_rule(rule, book)
            finder = BrandFinder(patterns[0]) if rule.at == "catalog_brands" else None
            compiled.append(_Compiled(rule, patterns, finder))
        self.refers_back = re.compile(
            rf"(?<![\w-])(?:{alternation(book.followup_refers_back)})(?![\w-])", re.I
        )
        self._on_query = [c for c in compiled if c.rule.at not in ON_REST]
        self._on_rest = [c for c in compiled if c.rule.at in ON_REST]

    def read(
        self,
        parsed: ParsedQuery,
        state: ConversationState | None,
        brands: Collection[str] = (),
        categories: Collection[str] = (),
        speller: Speller | None = None,
    ) -> Turn:
        """This turn's search: `parsed` alone without a state or for a new question.
        `speller`: the catalog's words, which tell the kinds of product it sells.

        Raises:
            FollowUpError: it points at a product the last turn did not show.
        """
        if state is None:
            return Turn(parsed)
        r = _Reading(parsed.query, parsed, state, brands, categories, speller, like=state.like)
        for c in self._on_query:
            self._apply(c, r, r.query)
        _take_heard(r)
        r.words = r.rest()
        for c in self._on_rest:
            self._apply(c, r, r.words)
        if r.about:
            # A question about shown products: asked of them, the conversation unchanged.
            carried = carried_filters(state.filters, r.parsed)
            asked = r.words or state.search_text
            logger.info("follow-up %r: about products %s, asking %r", r.query, r.about, asked)
            turn = ParsedQuery(r.query, state.search_text, r.parsed.constraints, parsed.parser)
            return Turn(
                turn,
                carried,
                follow_up=True,
                about=r.about,
                asked=asked,
                about_ranked=r.about_ranked,
            )
        if not r.cue and r.words:
            return Turn(r.parsed)  # a new question (nothing but constraints is a follow-up)
        if r.switch and r.words:
            # "Actually I need a backpack": a new question in the words after the cue.
            logger.info("follow-up %r: a new need, %r; nothing carried", r.query, r.words)
            return Turn(ParsedQuery(r.query, r.words, r.parsed.constraints, parsed.parser))
        like = r.like if not r.words or r.pointed else None  # new words: a text search again
        text = state.search_text
        if r.words and r.words.lower() not in text.lower():
            # Past MAX_SEARCH_TEXT the text stops growing (it travels in the token).
            text = f"{text} {r.words}"[:MAX_SEARCH_TEXT].strip()
        query = r.query
        turn_parsed = ParsedQuery(query, text, (*r.parsed.constraints, *r.own), parsed.parser)
        carried = carried_filters(state.filters, turn_parsed)
        logger.info("follow-up %r: search %r, like %s, %d carried", query, text, like, len(carried))
        return Turn(turn_parsed, carried, like, follow_up=True)

    def _apply(self, c: _Compiled, r: _Reading, text: str) -> None:
        if c.rule.at in _MATCHED_BY_EFFECT:
            EFFECTS[c.rule.effect](self, r, c, None)
            return
        match = c.patterns[0].search(text)
        if match is not None:
            EFFECTS[c.rule.effect](self, r, c, match)

    def quality(self, speller: Speller, word: str) -> bool:
        """Whether `word` names a quality, not a thing: the catalog's names use it and no
        kind of product is called by it ("black", "wireless"), or it ends like a quality
        ("washable")."""
        if word in self.book.attribute_words or word in self.book.followup_kept_openers:
            return True  # a colour, material or size; a comparison ("bigger", "lighter")
        if speller.kind(word):
            return False
        if speller.weight(word) >= MIN_COUNT:
            return True
        return len(word) >= 6 and word.endswith(tuple(self.book.attribute_endings))

    def pointed_at(self, ref: Match, shown: tuple[ShownProduct, ...]) -> ShownProduct:
        """The shown product an ordinal match names ("the second", "#2", "the last").

        Raises:
            FollowUpError: the last turn did not show that many.
        """
        word, num, hashed = ref.group("word"), ref.group("num"), ref.group("hash")
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


def _search_by_shown(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    assert m is not None
    r.like = reader.pointed_at(m, r.state.shown).id
    r.pointed = True
    r.take(m)


def _about_shown(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    """A question about shown products: "is the second one waterproof?", "compare the first
    two". Searched, it matched nothing ("compare the first two") or other products
    (waterproof e-readers); it is asked of those products instead."""
    assert m is not None
    if r.pointed:
        return  # "more like the second one" searches by it
    first = reader.pointed_at(m, r.state.shown)
    start = r.state.shown.index(first)
    count = _COUNTS.get(m.group(0).split()[-1].lower(), 1)
    r.about = tuple(p.id for p in r.state.shown[start : start + count])
    r.take(m)


def _about_all(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    """A question about everything shown ("which one has the longest battery?", "do any of
    them fold?"): asked of the products the last answer offered as matches. Added to the
    search text, its words stayed there for every later turn."""
    assert m is not None
    if r.pointed or r.about:
        return
    r.about = tuple(p.id for p in r.state.shown if not p.outside)[:MAX_ABOUT]
    r.about_ranked = True
    r.take(m)


def _cheaper(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    """Lower prices first, and a cap strictly below the median price shown within the last
    bounds: the cheaper half stays in view to compare, with whatever else is that cheap."""
    assert m is not None
    r.take(m)
    text = m.group(0)
    out = [] if r.parsed.get("price_preference") else [Constraint("price_preference", "low", text)]
    prices = [p.price for p in r.state.shown if p.price is not None and not p.outside]
    # A budget stated in the same words wins; when nothing shown fitted, the carried
    # bound (if any) stays as it was.
    if r.parsed.get("max_price") is None and prices:
        cap = round(statistics.median(prices) - 0.01, 2)  # prices are in cents
        carried = next((c for c in r.state.filters if c.field == "max_price"), None)
        if carried is not None:
            cap = min(cap, float(carried.value))
        out.insert(0, Constraint("max_price", max(cap, 0.0), text))
    r.own += out


def _brands(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    """The catalog's brands named outside what earlier rules took: wanted, or excluded."""
    assert c.brands is not None
    found, spans = c.brands.find(r.query, r.brands, r.cuts)
    r.own += found
    r.brand_spans += spans
    r.cuts += spans
    r.cue = r.cue or bool(found)


def _ignore_query(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    """A negation that named no brand ("without a hood", "not Samsung" for a brand the
    catalog lacks) refines the last turn and is never searched for: its words would attract
    what it rules out. The parser made them an exclusion (app/query/negation.py), unless
    the catalog's names use them after a negation ("no dig" ones): then nothing changes."""
    if m is not None and not r.brand_spans:
        logger.info("follow-up %r: the negated words name no brand; ignored", r.query)
        r.cuts.append((0, len(r.query)))
        r.cue = True


def _switch(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    """ "Actually I need …", "never mind, …": the shopper names a new need, searched alone
    with nothing carried, unless the words point back at what was shown ("actually I want
    black ones"): then they refine it."""
    assert m is not None
    r.take(m)
    r.switch = reader.refers_back.search(r.query, m.end()) is None


def _refine(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    assert m is not None
    r.take(m)


def _keep(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    r.cue = True
    r.kept = True


def _drop(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    for pattern in c.patterns:
        r.words = pattern.sub("", r.words)


def _category(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    """What is left, when it is all a category's name ("kitchen ones"), is that category."""
    plain = r.words.lower().strip()
    for name in r.categories:
        if plain in word_forms(name):
            r.own.append(Constraint("category", name, r.words))
            r.words = ""
            return


def _new_kind(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    """Words that name a kind of product the last search did not ("show me sleeping bags
    instead", "what about sleeping bags" after tents) are a new question, nothing carried:
    added to "a tent for two", they showed a tent among the sleeping bags. Words that start
    with a kept opener ("with a hood"), name the kind searched ("a cheaper tent") or use a
    kind to qualify ("machine washable") refine."""
    if r.speller is None or not r.words or r.kept:
        return
    searched = {f for w in _WORD.findall(r.state.search_text.lower()) for f in plain_forms(w)}
    words = _WORD.findall(r.words.lower())
    # A kind right before a quality qualifies it ("machine washable", "dishwasher safe").
    kinds = [
        w
        for w, after in zip(words, [*words[1:], ""], strict=True)
        if r.speller.kind(w) and not (after and reader.quality(r.speller, after))
    ]
    if kinds and not any(k in searched for k in kinds):
        logger.info("follow-up %r: %s is a new kind of product", r.query, kinds)
        r.switch = True


def _attribute(reader: FollowUpReader, r: _Reading, c: _Compiled, m: Match | None) -> None:
    """One or two words ending in a quality and nothing else ("washable?", "black",
    "machine washable") refine: as a new question, "washable?" after dog beds found travel
    pillows. A quality is a colour, material or size (`attribute_words`), a word the names
    use that names no kind of product, or one ending like a quality (`attribute_endings`:
    "washable" need not be in a name)."""
    if r.speller is None or r.cue or r.switch:
        return
    words = _WORD.findall(r.words.lower())
    # The last word decides: "machine washable" is a quality, "espresso machine" a thing.
    if 1 <= len(words) <= MAX_ATTRIBUTE_WORDS and reader.quality(r.speller, words[-1]):
        r.cue = True


def _take_heard(r: _Reading) -> None:
    """The constraints the parser heard are not words to search for; a category heard
    inside a brand's name ("Brumm Audio") is the brand's, and so are the words of a
    negation that names one ("not Acme": the brand is excluded, by the brand rule)."""
    heard = []
    lowered = r.query.lower()
    for c in r.parsed.constraints:
        at = lowered.find(c.text.lower()) if c.text else -1
        inside = at >= 0 and overlaps(r.brand_spans, at, at + len(c.text))
        if c.field in ("category", "exclude_words") and inside:
            continue
        heard.append(c)
        if at >= 0:
            r.cuts.append((at, at + len(c.text)))
    r.parsed = ParsedQuery(r.query, r.parsed.search_text, tuple(heard), r.parsed.parser)


# What a rule's match does to the turn: a follow-up cue ("refine", "keep", and each that
# finds something), words taken from the search text, filters or the product searched by.
EFFECTS: dict[Effect, Callable[[FollowUpReader, _Reading, _Compiled, Match | None], None]] = {
    "search_by_shown": _search_by_shown,
    "about_shown": _about_shown,
    "about_all": _about_all,
    "cheaper": _cheaper,
    "brands": _brands,
    "ignore_query": _ignore_query,
    "switch": _switch,
    "refine": _refine,
    "keep": _keep,
    "drop": _drop,
    "category": _category,
    "new_kind": _new_kind,
    "attribute": _attribute,
}


__all__ = ["EFFECTS", "FollowUpError", "FollowUpReader"]
