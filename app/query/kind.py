"""Whether the shop carries the kind of product a query asks for: "a camping stove" in a
shop that sells tents, headlamps and kettles, and no stove.

The relevance scores cannot tell. "camping" matches the tents' names word for word, so the
best match scores like a close one (RELEVANCE_CLOSE_MATCH), and the answer would offer a
tent as the top pick for a stove. What a query asks for is its head: the last word before
its first function word or comma ("a camping stove for two": "stove"). The head is never
one of the phrasebook's `not_kind()` words ("I need a stove", "what to get my dad"),
`category_kind_words` ("camping gear"), or a quality ("vanities glass topped": "glass";
`attribute_endings`, "-ed" and "-ly"). The shop does not carry it when all of these hold:
- no product name uses the word in any plain form (the catalog's words, app.query.spelling);
- it is a word, not a typo: the encoder knows it whole, or a word it knows whole plus
  "-er" ("grinder", "blender"; not "reffridge"), or two of those joined ("dishwasher";
  not two the catalog's names use: "flatbraces"), and no catalog word is one edit away
  ("low voltage steal");
- it is in no category's name;
- no product shown mentions it, as a word of its own, in its name or in the text it
  matched by (a "Trail Cooker" whose description says "stove" is one; "car-camping" is
  camping, "dishwasher-safe" parts are no dishwasher; "the sofa" a cat tree saves from
  claws is a thing it is used with, not what it is).
A kind joined to the head by "and" or "or" is judged the same way ("a kettle and a
toaster": "toaster"), and so is the one after a verb that opens the query and an article
("compare the kettles", "pick a stove for me": "stove", never "pick").
The answer names the head with the word before it when that word names which ("camping
stove", "coffee maker": 'nothing called "maker"' read oddly), not when it only qualifies
(a colour, material, size or quality: "a quiet blender" names "blender").
A sort of a kind the shop carries is judged the same way by the word right before the head
("a hand mixer" where every mixer is a stand mixer, "sony headphones", "a purple kettle"):
the answer names both words. That word is not judged when it says how or how much
("enhancing", "quicker", a quality) or when the head is one of several ("wine and beverage
refrigerator").
The products shown do not change: the answer says what the shop lacks and offers them as
the nearest it has. A follow-up that opens with such a word ("got any stoves?" after
tents) is a new question (app/query/followup_effects.py, `new_kind`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import NamedTuple

from app.core.words import CLAUSE_BREAK, plain_forms, split_words
from app.query.phrasebook import Phrasebook
from app.query.spelling import Speller
from app.retrieval.types import RetrievedProduct

# A quality, not a kind, ends this way: "topped", "partially" (not "bed" or "shed").
_PARTICIPLE_OR_ADVERB = re.compile(r"^\w{3,}(?:ed|ly)$")
# Before any kind is named, these start a purpose or a recipient ("something to cook on",
# "a gift for a hiker"): the query names no kind, unless a search verb came first
# ("looking for a stove": the phrasebook's `kind_openers`).
_PURPOSE = {"to", "for"}
# A head joined to another names one of several things ("wine and beverage refrigerator").
_JOINS = frozenset({"and", "or"})
# A word with its hyphenated parts ("dishwasher-safe" is one).
_WHOLE_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
# A word followed by its object is a verb, not a kind: "I will take it" named "take".
_VERB_OBJECT = re.compile(r"([^\W_]+)\s+(?:it|them|me|us|him|her)(?![\w-])", re.I)
# Tools are named by what they do: the tokenizer splits "grinder" into "grind" + "##er".
_AGENT_ENDINGS = ("er", "r")
# The shortest word a compound is read from ("dish" + "washer"; not "a" + "pple").
_MIN_PART = 3


def _a_word(word: str, dictionary: Collection[str], parts: int = 2) -> bool:
    """A dictionary word, one named by what it does ("grinder"), or two of those joined
    ("dishwasher", "toothbrush": the tokenizer has neither whole)."""
    if word in dictionary or any(
        word.endswith(e) and word[: -len(e)] in dictionary for e in _AGENT_ENDINGS
    ):
        return True
    return parts > 1 and any(
        word[:i] in dictionary and _a_word(word[i:], dictionary, parts - 1)
        for i in range(_MIN_PART, len(word) - _MIN_PART + 1)
    )


def _run_together(word: str, speller: Speller) -> bool:
    """Whether `word` is two words the catalog's names use, written as one."""
    return any(
        speller.weight(word[:i]) > 0 and speller.weight(word[i:]) > 0
        for i in range(_MIN_PART, len(word) - _MIN_PART + 1)
    )


def lacks(word: str, speller: Speller | None, categories: Iterable[str] = ()) -> bool:
    """Whether `word` is a word (not a typo) that no product name uses and no category is
    called by (see the module). Without the catalog's words, False."""
    if speller is None or not speller.counts or speller.weight(word) > 0:
        return False
    forms = set(plain_forms(word))
    if not any(_a_word(f, speller.dictionary) for f in forms):
        return False  # "ocket", "reffridge": typos too far from a catalog word to mend
    edits = speller.edits_to_nearest(word)
    if edits is not None and edits <= 1:
        return False
    if _run_together(word, speller):
        return False  # "flatbraces": the catalog's "flat braces", written as one
    return not any(forms & set(split_words(c)) for c in categories)


def product_kind(name: str, speller: Speller | None) -> str | None:
    """The kind of product `name` names: its last word when the catalog's names make it a
    kind ("… 4-Person Camping Tent": "tent"; `Speller.kind`), else None ("… in White")."""
    words = split_words(name)
    if speller is None or not words or not speller.kind(words[-1]):
        return None
    return words[-1]


def same_kind_first(
    products: Sequence[RetrievedProduct], kind: str | None
) -> list[RetrievedProduct]:
    """`products` with those whose name ends with `kind` (any plain form) first, each group
    in its order: like a tent, other tents before the headlamps and sleeping bags."""
    if kind is None:
        return list(products)
    forms = set(plain_forms(kind))

    def same(p: RetrievedProduct) -> bool:
        words = split_words(p.name)
        return bool(words) and words[-1] in forms

    return [p for p in products if same(p)] + [p for p in products if not same(p)]


class Named(NamedTuple):
    """What a query names: its head, the word right before it and the function word
    after it ("" for none): ("hand", "mixer", "") for "a hand mixer", ("a", "tent", "for")
    for "a tent for two"."""

    before: str
    head: str
    then: str
    # Every word read up to the head, the head last ("black", "running", "shoes").
    words: tuple[str, ...] = ()


class Lacked(NamedTuple):
    """A kind the shop does not carry, as the answer names it, and whether the query also
    asked for one it does ("a kettle and a toaster": the kettles match; `besides`)."""

    name: str
    besides: bool = False


class KindReader:
    def __init__(self, book: Phrasebook) -> None:
        self._stop = set(book.function_words)
        self._determiners = set(book.determiners)
        self._referring = frozenset(book.referring_determiners)
        self._skip = {*book.not_kind(), *book.determiners, *book.category_kind_words}
        self._seeking = {"", *book.kind_openers}
        # "taller", "lighter": a comparison, never the thing asked for.
        self._comparing = {w for w in book.followup_kept_openers if " " not in w}
        self._units = set(book.number_units_not_price)
        self._attributes = set(book.attribute_words)
        self._counts = set(book.count_words)
        # A few letters before the ending: "adhesive" is a quality here, "drive" is not.
        self._attribute = re.compile(rf"^\w{{4,}}(?:{'|'.join(book.attribute_endings)})$")

    def head(self, text: str, opening: bool = False) -> str | None:
        """The word `text` asks for, lowercase ("I need a camping stove for two": "stove"),
        or None when it names none (only numbers, or only words that are never a kind).
        `opening`: only a head the text opens with, determiners and `not_kind()` words
        aside ("got any stoves?"; not "any in canvas", which qualifies)."""
        named = self.named(text, opening)
        return named.head if named else None

    def named(self, text: str, opening: bool = False) -> Named | None:
        """The head as `head` reads it, with the words either side of it."""
        words: list[str] = []
        before = ""  # the word read just before the last one kept, whatever it was
        skipped = ""
        then = ""
        for clause in CLAUSE_BREAK.split(text):
            previous = ""
            number_at: int | None = None  # where the clause's last number is in `words`
            for word in split_words(clause):
                if word in self._stop:
                    if words:
                        then = word
                        break
                    if word in _PURPOSE and skipped not in self._seeking:
                        return None  # "something to cook on", "a gift for a hiker"
                    if opening and word not in self._determiners:
                        return None
                    previous = word
                    continue  # "I need a …", "looking for …": nothing named yet
                if (
                    word in self._units
                    and number_at is not None
                    and len(words) - number_at <= 2
                    and words[-1] == previous
                ):
                    # A measure ("30 minutes", "25 cubic feet"): not what is asked for,
                    # and its number ends what is (no head: nothing is judged).
                    del words[number_at + 1 :]
                    number_at = None
                    skipped = previous = word
                    continue
                if word in self._skip or word in self._comparing or self.is_quality(word):
                    skipped = word
                else:
                    number_at = len(words) if word.isdigit() else number_at
                    words.append(word)
                    before = previous
                previous = word
            if words:
                break
        if not words or not words[-1].isalpha():
            return None
        if any(m.group(1).lower() == words[-1] for m in _VERB_OBJECT.finditer(text)):
            return None  # a verb: "I will take it"
        return Named(before, words[-1], then, tuple(words))

    def names_which(self, word: str) -> bool:
        """Whether `word`, right before a head, names which of it (not a determiner, a
        function word, a count, a comparison, a colour, material or size, or a quality)."""
        return (
            word.isalpha()
            and word not in self._counts
            and word not in self._skip
            and word not in self._stop
            and word not in self._comparing
            and word not in self._attributes
            and not self.is_quality(word)
        )

    def is_quality(self, word: str) -> bool:
        """A quality by its ending (`attribute_endings`, "-ed", "-ly"), not a kind."""
        return bool(self._attribute.match(word) or _PARTICIPLE_OR_ADVERB.match(word))

    def not_carried(
        self,
        text: str,
        speller: Speller | None,
        shown: Sequence[RetrievedProduct],
        categories: Iterable[str] = (),
    ) -> str | None:
        """The head of `text` (or the word before it and the head) when the shop carries
        nothing of that kind (see the module), else None; with no product `shown`, the
        names alone judge. Without the catalog's words (not read yet, or
        QUERY_SPELLING=false) nothing is judged."""
        lacked = self.lacking(text, speller, shown, categories)
        return lacked.name if lacked is not None else None

    def _unsaid(
        self,
        speller: Speller | None,
        shown: Sequence[RetrievedProduct],
        categories: Iterable[str],
    ) -> Callable[[str], bool]:
        """Whether a word is one no name uses and no product shown mentions (the module's
        tests, the catalog's words, the products and the categories bound)."""
        categories = tuple(categories)
        return lambda word: (
            lacks(word, speller, categories) and not _mentioned(word, shown, self._referring)
        )

    def lacking(
        self,
        text: str,
        speller: Speller | None,
        shown: Sequence[RetrievedProduct],
        categories: Iterable[str] = (),
    ) -> Lacked | None:
        """`not_carried`, with whether the query also asked for a kind the shop carries."""
        named = self.named(text)
        if named is None:
            return None
        before, head, then, words = named
        if then in self._determiners and len(words) == 1 and before not in self._determiners:
            # A verb opens it ("pick a tent for me", "help me choose a kettle"): what comes
            # after the article is asked for ('nothing called "pick"' was said).
            asked = _after(text, head, then)
            return self.lacking(asked, speller, shown, categories) if asked else None
        unsaid = self._unsaid(speller, shown, categories)
        if unsaid(head):
            # With the word that names it ("coffee maker", not "maker"), unless that word
            # only qualifies it ("quiet blender": a blender that is not quiet is no more).
            return Lacked(f"{before} {head}" if self.names_which(before) else head)
        # The kind is carried, but not this sort of it: "a hand mixer" where every mixer is
        # a stand mixer, "sony headphones" where no product says Sony. Not judged: a head
        # that is one of several ("wine and beverage refrigerator"), or a word before it
        # that says how it is or compares ("enhancing sealers", "quicker").
        if (
            then not in _JOINS
            and (self.names_which(before) or before in self._attributes)  # "a purple kettle"
            and not before.endswith("ing")
            and unsaid(before)
        ):
            return Lacked(f"{before} {head}")
        # A colour or material further before it: "black running shoes" where no name
        # says black ("I only want black running shoes" offered every pair, unsaid).
        for at, word in enumerate(words[:-2]):
            if then not in _JOINS and word in self._attributes and unsaid(word):
                return Lacked(" ".join(words[at:]))
        # "running shoes in black", "headphones in white": a colour said after the kind.
        colour = (split_words(_after(text, head, then) or "") or [""])[0] if then == "in" else ""
        if colour in self._attributes and unsaid(colour):
            kind = f"{before} {head}" if self.names_which(before) else head
            return Lacked(f"{colour} {kind}")
        joined = _after(text, head, then) if then in _JOINS else None
        if joined:
            # "a kettle and a toaster": the kind after the join is asked for too, beside
            # this one, which the shop carries.
            lacked = self.lacking(joined, speller, shown, categories)
            return lacked._replace(besides=True) if lacked is not None else None
        return None


def _after(text: str, head: str, then: str) -> str | None:
    """What `text` says after its `head` and the word `then` that follows it."""
    found = re.search(rf"\b{re.escape(head)}\s+{re.escape(then)}\s+(.+)", text, re.I | re.S)
    return found.group(1) if found else None


def _mentioned(word: str, shown: Sequence[RetrievedProduct], referring: Collection[str]) -> bool:
    """Whether a product shown uses `word` (any plain form) in its name or matched text, as
    a word of its own or the last of a hyphenated one, its head: "car-camping" is camping,
    "dishwasher-safe parts" are no dishwasher. In the text, not after a `referring` word
    written in lower case: "the sofa" inside a sentence is what the product is used with
    (a cat tree's "save the sofa from claws"), "The stove" opening one is the product."""
    forms = set(plain_forms(word))
    for p in shown:
        if forms & {w.rsplit("-", 1)[-1] for w in _WHOLE_WORD.findall(p.name.lower())}:
            return True
        for text in p.matched_content:
            previous = ""
            for w in _WHOLE_WORD.findall(text):
                if w.rsplit("-", 1)[-1].lower() in forms and previous not in referring:
                    return True
                previous = w
    return False
