"""Follow-ups: a query read as a refinement of the conversation's last turn.

The last turn's state (what it searched for, the filters heard in words, the products it
showed) comes back with the request (app/api/conversation.py). Whether a query is a
follow-up, and what it changes, is a grammar: followup_rules.json's rules, read in order,
each a pattern (app/query/followup_rules.py) and an effect (app/query/followup_effects.py).
The rules on the query run first; then the words the parser read as constraints are taken;
then the rules on what is left. A query that no cue rule matched, with words left to search, is a
new question and starts fresh: nothing is carried (a hidden filter from an unrelated
question would silently hide the right products). "Show me more" is the last search
again, past the products shown. Otherwise what is left is added to the last search text,
except where it restates part of it: a count of a unit it already counts replaces that
count ("for two players" after "a board game for four players"), another sort of its kind
the word before the kind ("a hand mixer" after "a stand mixer"), a colour, material,
season or size the one searched ("what about summer?" after "a sleeping bag for winter"),
and "bigger" after room asked for asks room for one more. What is carried keeps its
place below this turn's words and the request's filters (app/query/plan.py).
docs/decisions/conversation-state.md says why each rule is what it is. The turn and its
state are app/query/turn.py's; retrieval is the caller's (app/query/search.py
`search_turn`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from dataclasses import replace

from app.core.words import plain_forms, split_words
from app.query.brands import BrandFinder
from app.query.capacity import RoomReader
from app.query.followup_effects import EFFECTS, Compiled, FollowUpError, Reading, take_heard
from app.query.followup_rules import ON_REST, Rule, compile_rule, load_rules
from app.query.kind import KindReader
from app.query.phrasebook import Phrasebook, alternation
from app.query.restriction import RestrictionReader
from app.query.spelling import Speller
from app.query.turn import MAX_SEARCH_TEXT, MAX_SEEN, ConversationState, Turn, carried_filters
from app.query.types import ParsedQuery

logger = logging.getLogger(__name__)

# Positions whose effect runs on every query and does its own matching.
_MATCHED_BY_EFFECT = frozenset({"catalog_brands", "rest_edges", "rest"})
# Left of a restated count, these say nothing the search text does not ("for", "a").
_RESTATED_FILLERS = frozenset({"a", "an", "the", "for", "of", "in"})
# An indefinite article right before a word, which the word's first letter chooses.
_ARTICLE = re.compile(r"(?<![\w-])an?\s+$", re.I)


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
            compiled.append(Compiled(rule, patterns, finder))
        self.refers_back = re.compile(
            rf"(?<![\w-])(?:{alternation(book.followup_refers_back)})(?![\w-])", re.I
        )
        n = book.count()
        # "two players", "2-person", "4 person": a count and the unit it counts.
        self._count = re.compile(rf"(?<![\w.-]){n}(?:\s*-\s*|\s+)([a-z]+)\b", re.I)
        # "for two": the count "for" gave before ("a tent for four", "for four players").
        self._for_count = re.compile(rf"(?<![\w-])for\s+{n}(?![\w-])", re.I)
        self._restated_fillers = _RESTATED_FILLERS | set(book.followup_trailing)
        self.kinds = KindReader(book)
        self.rooms = RoomReader(book)
        self.restrictions = RestrictionReader(book)
        self._roomier_words = {w.lower() for w in book.roomier_words}
        self._alternatives = {w: group for group in book.alternatives for w in group}
        # Words that ask nothing of a product: "is" is all "which one is cheapest?" leaves.
        self._empty = {w.lower() for w in (*book.function_words, *book.not_kind_words)}
        self._count_in = re.compile(rf"(?<![\w.]){n}(?![\w.])", re.I)
        self._one = re.compile(r"(?<![\w-])ones?[\s?!.]*$", re.I)
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
        r = Reading(parsed.query, parsed, state, brands, categories, speller, like=state.like)
        for c in self._on_query:
            self._apply(c, r, r.query)
        if r.more:
            # The same search and filters, past what was shown on this run of "more".
            seen = (*r.state.seen, *(p.id for p in r.state.shown))[-MAX_SEEN:]
            logger.info("follow-up %r: more, past %d products", r.query, len(seen))
            same = ParsedQuery(r.query, state.search_text, (), parsed.parser)
            carried = carried_filters(state.filters, same)
            return Turn(same, carried, state.like, follow_up=True, excluded=tuple(seen))
        take_heard(r)
        r.words = r.rest()
        for c in self._on_rest:
            self._apply(c, r, r.words)
        if r.about:
            # A question about shown products: asked of them, the conversation unchanged.
            carried = carried_filters(state.filters, r.parsed)
            # "Which one is cheapest?" asks nothing more than the search did ("is" ordered
            # them by the cosine of "is", the cheapest's price alone no longer).
            said = {w.lower() for w in re.findall(r"[\w'-]+", r.words)}
            asked = r.words if said - self._empty else state.search_text
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
        points_back = self.refers_back.search(r.query) is not None  # "a burr one"
        if r.words and not (r.kept or r.pointed or points_back) and self._lacked(state, r):
            # The last search was for a kind the shop lacks ("a blender"): words after it
            # ask again ("ok, what do you have for smoothies?"), not for a blender that is.
            r.switch = True
        if r.switch and r.words:
            # "Actually I need a backpack": a new question in the words after the cue.
            logger.info("follow-up %r: a new need, %r; nothing carried", r.query, r.words)
            return Turn(ParsedQuery(r.query, r.words, r.parsed.constraints, parsed.parser))
        like = r.like if not r.words or r.pointed else None  # new words: a text search again
        text, words = self._restated(state.search_text, r.words)
        text, words = self._sort_of_it(text, words, state, r)
        text, words = self._renamed(text, words)
        text, words = self._roomier(text, words)
        text, words = self._swapped(text, words)
        if words and words.lower() not in text.lower():
            # Past MAX_SEARCH_TEXT the text stops growing (it travels in the token).
            text = f"{text} {words}"[:MAX_SEARCH_TEXT].strip()
        text = self._exact_room(text, r.query)
        text = self._restricted(text, r.query, words)
        query = r.query
        turn_parsed = ParsedQuery(query, text, (*r.parsed.constraints, *r.own), parsed.parser)
        carried = carried_filters(state.filters, turn_parsed)
        logger.info("follow-up %r: search %r, like %s, %d carried", query, text, like, len(carried))
        return Turn(turn_parsed, carried, like, follow_up=True)

    def _restated(self, text: str, words: str) -> tuple[str, str]:
        """`text` with the counts `words` restate ("for two players" after "for four
        players": added, the two contradicted each other and the old one kept ranking),
        and what is left of `words` to add."""
        restated = False
        for new in self._count.finditer(words):
            unit = set(plain_forms(new.group(2).lower()))
            for old in self._count.finditer(text):
                if unit & set(plain_forms(old.group(2).lower())):
                    text = text[: old.start()] + new.group(0) + text[old.end() :]
                    words = words.replace(new.group(0), " ", 1)
                    restated = True
                    break
        for new in self._for_count.finditer(words):
            given = self._for_count.search(text)
            if given is not None:
                text = text[: given.start(1)] + new.group(1) + text[given.end(1) :]
                words = words.replace(new.group(0), " ", 1)
                restated = True
        if not restated:
            return text, words
        # What the count came with: "what about a 2-person one" restates, adds nothing.
        rest = words.split()
        while rest and self._filler(rest[0]):
            rest.pop(0)
        return text, " ".join(rest)

    def _exact_room(self, text: str, query: str) -> str:
        """`text` asking exactly the room this turn asks exactly ("just the 2 person ones"
        after "a tent": its opener was taken as a cue, and the 4-person tents were shown),
        marked in the words so that later turns ask it too."""
        asked = self.rooms.asked(query)
        room = self.rooms.asked(text)
        if asked is None or not asked.exact or room is None or room.exact or room != asked:
            return text
        return self.rooms.marked_exact(text, room)

    def _restricted(self, text: str, query: str, words: str) -> str:
        """`text` restricting the names as this turn does ("only wireless ones" after
        "headphones": its "only" was taken as a cue), "only" after the words it added, so
        that later turns restrict them too."""
        asked = self.restrictions.asked(query)
        if not asked or self.restrictions.asked(text):
            return text
        if not set(asked[-1]) <= set(split_words(words)):
            return text  # its words went elsewhere ("only kitchen ones": the category)
        return f"{text} {self.book.restricting_words[0]}"

    def _lacked(self, state: ConversationState, r: Reading) -> bool:
        """Whether the last search asked for a kind the shop lacks, by the names alone."""
        lacked = self.kinds.not_carried(state.search_text, r.speller, (), r.categories)
        return lacked is not None

    def _sort_of_it(
        self, text: str, words: str, state: ConversationState, r: Reading
    ) -> tuple[str, str]:
        """ "A hand one?" after "a stand mixer": the sort of the kind searched, as if its name
        stood for "one" ("a hand mixer": `_renamed`). After a kind the shop lacks ("coffee
        grinder"), the sort goes before it and the rest stays ("coffee burr grinder"):
        replaced, "burr grinder" lost the coffee and offered running shoes as the closest.
        Added as typed, "coffee grinder burr" was named 'nothing called "grinder burr"'. A
        colour, material or quality ("black ones") is added as before."""
        old = self.kinds.named(text)
        if old is None or not words or not self._one.search(r.query):
            return text, words
        if not self._lacked(state, r):
            renamed, rest = self._renamed(text, f"{words} {old.head}")
            return (renamed, rest) if renamed != text else (text, words)
        new = self.kinds.named(f"{words} {old.head}")
        said = [w for w in split_words(words) if w not in self.book.determiners]
        if new is None or said != [new.before] or not self.kinds.names_which(new.before):
            return text, words
        at = [m.start() for m in re.finditer(rf"(?<![\w-]){re.escape(old.head)}", text, re.I)]
        if not at:  # the head inside a hyphenated word ("a 2-person"): as typed
            return text, words
        return f"{text[: at[-1]]}{new.before} {text[at[-1] :]}", ""

    def _renamed(self, text: str, words: str) -> tuple[str, str]:
        """`text` with the sort of its kind that `words` name instead ("what about a hand
        mixer?" after "a stand mixer": "a hand mixer"), and what is left of `words` to add.
        Added, it searched "a stand mixer hand mixer" and the stand mixers kept ranking. A
        colour, material, size or comparison qualifies instead ("a black jacket", "lighter
        shoes"), and so does a quality by its ending ("washable")."""
        new, old = self.kinds.named(words), self.kinds.named(text)
        if (
            new is None
            or old is None
            or not set(plain_forms(new.head)) & set(plain_forms(old.head))
        ):
            return text, words
        sort, was = new.before, old.before
        said = [w for w in split_words(words) if w not in self.book.determiners]
        if (
            said != [sort, new.head]
            or sort == was
            or not self.kinds.names_which(sort)
            or not self.kinds.names_which(was)
        ):
            return text, words
        at = re.search(
            rf"(?<![\w-]){re.escape(was)}(?=[\s-]+{re.escape(old.head)}(?![\w-]))", text, re.I
        )
        if at is None:
            return text, words
        start = at.start()
        article = _ARTICLE.search(text[:start])
        if article is not None:  # "an electric kettle": "a stovetop kettle"
            start = article.start()
            sort = f"{'an' if sort[0] in 'aeiou' else 'a'} {sort}"
        return text[:start] + sort + text[at.end() :], ""

    def _roomier(self, text: str, words: str) -> tuple[str, str]:
        """`text` asking room for one more when `words` only ask for more room ("bigger"
        after "a tent for 2 people": "a tent for 3 people"), and what is left of `words`.
        Added, "a tent for 2 people bigger" kept the 2-person tent on top."""
        room = self.rooms.asked(text)
        if room is None:
            return text, words
        head = self.kinds.head(text)
        plain = set(plain_forms(head)) if head else set()
        said = [
            w
            for w in split_words(words)
            if w not in self._restated_fillers
            and w not in self.book.followup_fillers
            and w not in plain
        ]
        if " ".join(said) not in self._roomier_words:
            return text, words
        more = self._count_in.sub(str(room.count + 1), room.text, count=1)
        text = text.replace(room.text, more, 1)
        if room.exact:  # more room is at least one more, not exactly that many
            text = self.rooms.unmarked(text, replace(room, text=more))
        return text, ""

    def _swapped(self, text: str, words: str) -> tuple[str, str]:
        """`text` with each of its words that one of `words` is an alternative to (the
        phrasebook's `alternatives`: "winter" and "summer") replaced by it, and what is left
        of `words` to add. Added, "sleeping bag for winter camping summer" kept the winter
        bags on top, and "a red kettle black" named 'nothing called "kettle black"'."""
        rest = words.split()
        swapped = False
        for word in split_words(words):
            for other in self._alternatives.get(word, ()):
                at = _whole(other).search(text)
                if other != word and at is not None:
                    text = text[: at.start()] + word + text[at.end() :]
                    rest = self._without(rest, word)
                    swapped = True
                    break
        if not swapped:
            return text, words
        # What the words came with alone says nothing more ("any ones?").
        if all(self._filler(w) for w in rest):
            return text, ""
        return text, " ".join(rest)

    def _without(self, said: list[str], word: str) -> list[str]:
        """`said` without `word` and the fillers right before it (the "in" of "in black")."""
        at = next((i for i, w in enumerate(said) if w.lower().strip(",.!?") == word), None)
        if at is None:
            return said
        start = at
        while start > 0 and self._filler(said[start - 1]):
            start -= 1
        return said[:start] + said[at + 1 :]

    def _filler(self, word: str) -> bool:
        return word.lower().strip(",.!?") in self._restated_fillers

    def _apply(self, c: Compiled, r: Reading, text: str) -> None:
        if c.rule.at in _MATCHED_BY_EFFECT:
            EFFECTS[c.rule.effect](self, r, c, None)
            return
        match = c.patterns[0].search(text)
        if match is not None:
            EFFECTS[c.rule.effect](self, r, c, match)


def _whole(word: str) -> re.Pattern[str]:
    """`word` as a whole word (not inside "red-brown" or "blackout"), any case."""
    return re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])", re.I)


__all__ = ["FollowUpError", "FollowUpReader"]
