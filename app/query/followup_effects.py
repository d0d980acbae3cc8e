"""What each follow-up rule does: the EFFECTS of followup_rules.json's rules, and the
reading of one query they write to (app/query/followup.py applies them in order).

An effect gets the grammar (its phrasebook and the "points back" words), the reading so
far, the compiled rule and the rule's match (None for the rules that match by themselves):
it marks the query a follow-up cue, takes words out of the search, adds filters, or says
which shown products the turn is about.
"""

from __future__ import annotations

import logging
import math
import re
import statistics
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from app.core.errors import RecommenderError
from app.core.words import PLURAL_FROM, plain_forms
from app.query.brands import BrandFinder, Span, overlaps
from app.query.category import word_forms
from app.query.followup_rules import Effect, Rule
from app.query.kind import KindReader, lacks
from app.query.phrasebook import Phrasebook
from app.query.spelling import MIN_COUNT, Speller
from app.query.turn import ConversationState, ShownProduct
from app.query.types import Constraint, ParsedQuery

# The reader's logger: one name for everything a follow-up's reading says.
logger = logging.getLogger("app.query.followup")

Match = re.Match[str]
_EDGES = re.compile(r"^[\s,;:.!?-]+|[\s,;:.!?-]+$")
_WORD = re.compile(r"[a-z]+")
_NEXT_WORD = re.compile(r"\s+([a-z]+)")
# "The first two": how many shown products from the one named.
_COUNTS = {"two": 2, "three": 3}
# "Which one …?" is asked of at most this many of the products shown, in their order.
MAX_ABOUT = 10
# A follow-up of at most this many words of quality refines ("black", "machine washable").
MAX_ATTRIBUTE_WORDS = 2


class FollowUpError(RecommenderError):
    """The follow-up refers to something the last turn did not show (e.g. a 7th of 5)."""


@dataclass(slots=True)
class Reading:
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
    more: bool = False
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


@dataclass(frozen=True, slots=True)
class Compiled:
    rule: Rule
    patterns: tuple[re.Pattern[str], ...]
    brands: BrandFinder | None


class Grammar(Protocol):
    """What an effect reads of the reader (app/query/followup.py's FollowUpReader)."""

    @property
    def book(self) -> Phrasebook: ...

    @property
    def refers_back(self) -> re.Pattern[str]: ...

    @property
    def kinds(self) -> KindReader: ...


def quality(book: Phrasebook, speller: Speller, word: str) -> bool:
    """Whether `word` names a quality, not a thing: the catalog's names use it and no
    kind of product is called by it ("black", "wireless"), or it ends like a quality
    ("washable")."""
    if word in book.attribute_words or word in book.followup_kept_openers:
        return True  # a colour, material or size; a comparison ("bigger", "lighter")
    if speller.kind(word):
        return False
    if speller.weight(word) >= MIN_COUNT:
        return True
    return len(word) >= 6 and word.endswith(tuple(book.attribute_endings))


def pointed_at(book: Phrasebook, ref: Match, shown: tuple[ShownProduct, ...]) -> ShownProduct:
    """The shown product an ordinal match names ("the second", "#2", "the last").

    Raises:
        FollowUpError: the last turn did not show that many.
    """
    word, num, hashed = ref.group("word"), ref.group("num"), ref.group("hash")
    if word is not None and word.lower() == "last":
        index = len(shown)
    elif word is not None:
        index = book.ordinal_words[" ".join(word.lower().split())]
    else:
        index = int(num or hashed)
    if not 1 <= index <= len(shown):
        raise FollowUpError(
            f"{ref.group(0)!r}: the last answer showed {len(shown)} product"
            f"{'' if len(shown) == 1 else 's'}"
        )
    return shown[index - 1]


def names_a_product(book: Phrasebook, r: Reading, ref: Match) -> bool:
    """Whether an ordinal match is the start of a product's name ("what about the first aid
    kit?", "a top loader"): the ordinal and the word after it are one of the phrasebook's
    `ordinal_compounds`, or a pair of words the catalog's names use."""
    word = ref.group("word")
    following = _NEXT_WORD.match(r.query.lower(), ref.end()) if word is not None else None
    if word is None or ref.group(0).lower().split()[-1] != word.lower() or following is None:
        return False  # "#2", "the second one", "the second?"
    pair = f"{word.lower()} {following.group(1)}"
    names = r.speller.counts if r.speller is not None else {}
    return pair in book.ordinal_compounds or names.get(pair, 0) > 0


def _search_by_shown(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    assert m is not None
    if names_a_product(grammar.book, r, m):
        return
    r.like = pointed_at(grammar.book, m, r.state.shown).id
    r.pointed = True
    r.take(m)


def _about_shown(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """A question about shown products: "is the second one waterproof?", "compare the first
    two". Searched, it matched nothing ("compare the first two") or other products
    (waterproof e-readers); it is asked of those products instead."""
    assert m is not None
    if r.pointed or names_a_product(grammar.book, r, m):
        return  # "more like the second one" searches by it
    first = pointed_at(grammar.book, m, r.state.shown)
    start = r.state.shown.index(first)
    count = _COUNTS.get(m.group(0).split()[-1].lower(), 1)
    r.about = tuple(p.id for p in r.state.shown[start : start + count])
    r.take(m)


def _more(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """ "Show me more", "anything else?": the same search, past the products shown. As a
    new question, "any others?" searched the word "others"; as a refinement, "more
    options" added "more" and showed the same products again."""
    assert m is not None
    r.more = True
    r.take(m)


def _about_all(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """A question about everything shown ("which one has the longest battery?", "do any of
    them fold?"): asked of the products the last answer offered as matches. Added to the
    search text, its words stayed there for every later turn."""
    assert m is not None
    if r.pointed or r.about:
        return
    r.about = tuple(p.id for p in r.state.shown if not p.outside)[:MAX_ABOUT]
    r.about_ranked = True
    r.take(m)


def _about_top(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """A question about "it", the top pick ("is it heavy?", "does it fold?"): asked of the
    first product the last answer offered as a match. Searched, "is it heavy?" after tents
    offered heavy resistance bands."""
    assert m is not None
    if r.pointed or r.about:
        return
    top = next((p for p in r.state.shown if not p.outside), None)
    if top is None:
        return
    r.about = (top.id,)
    r.take(m)


def cheaper_cap(prices: Sequence[float]) -> float:
    """A round price below the median of `prices` ($10 steps from $100, $5 from $20, else
    $1): "≤ $120", not "≤ $126.48", the median of $107.99 and $144.99 less a cent. Never
    below the dearest of the cheaper half, which stays in view to compare."""
    median = statistics.median(prices)
    step = 10 if median >= 100 else 5 if median >= 20 else 1
    below = math.floor(round((median - 0.01) / step, 6)) * step
    return max([float(below), *(float(p) for p in prices if p < median)])


def _cheaper(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """Lower prices first, and a cap below the median price shown within the last bounds
    (`cheaper_cap`): the cheaper half stays in view to compare, with whatever else is that
    cheap."""
    assert m is not None
    r.take(m)
    text = m.group(0)
    out = [] if r.parsed.get("price_preference") else [Constraint("price_preference", "low", text)]
    prices = [p.price for p in r.state.shown if p.price is not None and not p.outside]
    # A budget stated in the same words wins; when nothing shown fitted, the carried
    # bound (if any) stays as it was.
    if r.parsed.get("max_price") is None and prices:
        cap = cheaper_cap(prices)
        # The lowest cap carried (a budget a narrower one replaced is carried too).
        caps = [float(c.value) for c in r.state.filters if c.field == "max_price"]
        cap = min([cap, *caps])
        out.insert(0, Constraint("max_price", max(cap, 0.0), text))
    r.own += out


def _brands(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """The catalog's brands named outside what earlier rules took: wanted, or excluded."""
    assert c.brands is not None
    found, spans = c.brands.find(r.query, r.brands, r.cuts)
    r.own += found
    r.brand_spans += spans
    r.cuts += spans
    r.cue = r.cue or bool(found)


# After a negation that starts the query, what makes it "no" said to the last answer.
# (a start rule's match ends past the spaces and commas after it: "no, " holds its comma).
_INTERJECTION = re.compile(r"\s*[.!;:]|\s*(?:i|i'm|im|i'd|we|that's|thats)(?![\w-])", re.I)
# After "no, ": a thing named with an article is the new need ("no, a coffee grinder"), unless
# the words point back at what was shown ("no, a black one").
_ARTICLE = re.compile(r"\s*(?:a|an)\s+\w", re.I)


def _ignore_query(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """A negation that named no brand ("without a hood", "not Samsung" for a brand the
    catalog lacks) refines the last turn and is never searched for: its words would attract
    what it rules out. The parser made them an exclusion (app/query/negation.py), unless
    the catalog's names use them after a negation ("no dig" ones): then nothing changes."""
    if m is not None and ("," in m.group(0) or _INTERJECTION.match(r.query, m.end())):
        r.take(m)  # "no, I want a floor lamp": an answer to the last turn, not a negation
        if _ARTICLE.match(r.query, m.end()):
            r.switch = grammar.refers_back.search(r.query, m.end()) is None
    elif m is not None and not r.brand_spans:
        logger.info("follow-up %r: the negated words name no brand; ignored", r.query)
        r.cuts.append((0, len(r.query)))
        r.cue = True


def _switch(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """ "Actually I need …", "never mind, …": the shopper names a new need, searched alone
    with nothing carried, unless the words point back at what was shown ("actually I want
    black ones"): then they refine it."""
    assert m is not None
    r.take(m)
    r.switch = grammar.refers_back.search(r.query, m.end()) is None


def _refine(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    assert m is not None
    r.take(m)


def _keep(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    r.cue = True
    r.kept = True


def _drop(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    for pattern in c.patterns:
        r.words = pattern.sub("", r.words)


def _category(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """What is left, when it is all a category's name ("kitchen ones"), is that category."""
    plain = r.words.lower().strip()
    for name in r.categories:
        if plain in word_forms(name):
            r.own.append(Constraint("category", name, r.words))
            r.words = ""
            return


def _new_kind(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """Words that name a kind of product the last search did not ("show me sleeping bags
    instead", "what about sleeping bags" after tents), or open with a word for a kind the
    shop lacks ("got any stoves?"), are a new question, nothing carried: added to "a tent
    for two", they showed a tent among the sleeping bags. Words that start
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
        if r.speller.kind(w) and not (after and quality(grammar.book, r.speller, after))
    ]
    if kinds and not any(k in searched for k in kinds):
        logger.info("follow-up %r: %s is a new kind of product", r.query, kinds)
        r.switch = True
        return
    # A kind the shop lacks ("got any stoves?" after tents): a new question, which the
    # answer then says the shop has nothing called so. Added, it searched "tents stoves".
    head = grammar.kinds.head(r.words, opening=True)
    if (
        head is not None
        and head not in searched
        and _named_as_a_thing(grammar.book, r, head)
        and not quality(grammar.book, r.speller, head)
        and lacks(head, r.speller, r.categories)
    ):
        logger.info("follow-up %r: %r is a kind of product the shop lacks", r.query, head)
        r.switch = True


def _named_as_a_thing(book: Phrasebook, r: Reading, word: str) -> bool:
    """Whether the query names `word` as a thing: after a determiner ("a drone", "any
    stoves") or as a plural ("stoves?"), and not right before a cue it modifies ("even
    cheaper", "a little cheaper": after "cheaper", "even" was searched alone, budget lost)."""
    at = re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", r.query, re.I)
    if at is None:
        return False
    if any(start >= at.end() and not r.query[at.end() : start].strip() for start, _ in r.cuts):
        return False
    before = _WORD.findall(r.query[: at.start()].lower())
    determined = bool(before) and before[-1] in {*book.determiners, "any"}
    return determined or (word.endswith("s") and len(word) >= PLURAL_FROM)


def _attribute(grammar: Grammar, r: Reading, c: Compiled, m: Match | None) -> None:
    """One or two words ending in a quality and nothing else ("washable?", "black",
    "machine washable") refine: as a new question, "washable?" after dog beds found travel
    pillows. A quality is a colour, material or size (`attribute_words`), a word the names
    use that names no kind of product, or one ending like a quality (`attribute_endings`:
    "washable" need not be in a name)."""
    if r.speller is None or r.cue or r.switch:
        return
    words = _WORD.findall(r.words.lower())
    # The last word decides: "machine washable" is a quality, "espresso machine" a thing.
    if 1 <= len(words) <= MAX_ATTRIBUTE_WORDS and quality(grammar.book, r.speller, words[-1]):
        r.cue = True


def take_heard(r: Reading) -> None:
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
EFFECTS: dict[Effect, Callable[[Grammar, Reading, Compiled, Match | None], None]] = {
    "more": _more,
    "search_by_shown": _search_by_shown,
    "about_shown": _about_shown,
    "about_all": _about_all,
    "about_top": _about_top,
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
