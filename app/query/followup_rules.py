"""The follow-up grammar as data: followup_rules.json's entries, checked and compiled.

A rule is a pattern (where it matches, and its phrases) and an effect (what a match does
to the turn: app/query/followup_effects.py's EFFECTS). Adding a phrase is a phrasebook.json edit;
adding a way to say "this is a follow-up" is one entry here; only a new kind of effect
is code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

from app.query.phrasebook import Phrasebook, alternation

RULES_PATH = Path(__file__).with_name("followup_rules.json")

# Where a pattern matches: the query (anywhere, its start, its end, all of it), the catalog's brands
# in it, or, after the query rules, what no rule took (its edges, or all of it).
Position = Literal["anywhere", "start", "end", "whole", "catalog_brands", "rest_edges", "rest"]
Effect = Literal[
    "more",
    "search_by_shown",
    "about_shown",
    "about_all",
    "about_top",
    "cheaper",
    "brands",
    "ignore_query",
    "switch",
    "refine",
    "keep",
    "drop",
    "category",
    "new_kind",
    "attribute",
]
ON_REST: frozenset[Position] = frozenset({"rest_edges", "rest"})
# Effects that need a particular kind of match.
_EFFECT_AT: dict[Effect, frozenset[Position]] = {
    "more": frozenset({"whole"}),
    "brands": frozenset({"catalog_brands"}),
    "drop": frozenset({"rest_edges"}),
    "category": frozenset({"rest"}),
    "new_kind": frozenset({"rest"}),
    "attribute": frozenset({"rest"}),
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One entry of the grammar; `example` is a query it reads, for the reader of the table."""

    example: str
    at: Position
    effect: Effect
    phrases: tuple[str, ...] = ()
    ordinal: bool = False  # the phrases are followed by an ordinal ("the second", "#2")
    optional_after: tuple[str, ...] = ()  # words the match may end with ("one", "product")
    bare: bool = False  # the ordinal may also start the query alone ("the second one?")


def rule_from(entry: Mapping[str, Any], book: Phrasebook) -> Rule:
    """A rule from one table entry; `phrases` may name a phrasebook list.

    Raises:
        ValueError: the entry names an unknown position, effect or phrase list, or pairs an
            effect with a position it cannot use.
    """
    at, effect = entry.get("at"), entry.get("effect")
    if at not in get_args(Position):
        raise ValueError(f"follow-up rule {entry!r}: `at` must be one of {get_args(Position)}")
    if effect not in get_args(Effect):
        raise ValueError(f"follow-up rule {entry!r}: `effect` must be one of {get_args(Effect)}")
    at, effect = cast(Position, at), cast(Effect, effect)
    allowed = _EFFECT_AT.get(effect)
    if (allowed is not None and at not in allowed) or (allowed is None and at in ON_REST):
        raise ValueError(f"follow-up rule {entry!r}: effect {effect} cannot apply at {at}")
    if effect in ("search_by_shown", "about_shown") and not entry.get("ordinal"):
        raise ValueError(f"follow-up rule {entry!r}: {effect} needs `ordinal`")
    phrases = entry.get("phrases", [])
    if isinstance(phrases, str):
        if not isinstance(getattr(book, phrases, None), list):
            raise ValueError(f"follow-up rule {entry!r}: no phrasebook list {phrases!r}")
        phrases = getattr(book, phrases)
    if effect not in ("category", "new_kind", "attribute") and not phrases:
        raise ValueError(f"follow-up rule {entry!r}: no phrases")
    return Rule(
        str(entry.get("example", "")),
        at,
        effect,
        tuple(phrases),
        bool(entry.get("ordinal", False)),
        tuple(entry.get("optional_after", ())),
        bool(entry.get("bare", False)),
    )


def compile_rule(rule: Rule, book: Phrasebook) -> tuple[re.Pattern[str], ...]:
    """The rule's patterns (phrases on word boundaries); none for `rest`.

    catalog_brands: the negation at the end of the text before a brand; rest_edges: a run
    of the phrases at the end, then one at the start ("and anything similar").
    """
    words = alternation(list(rule.phrases))
    if rule.at == "rest":
        return ()
    if rule.at == "start":
        return (re.compile(rf"^\s*(?:{words})(?![\w-])[\s,]*", re.I),)
    if rule.at == "end":
        return (re.compile(rf"(?<![\w-])(?:{words})[\s?!.]*$", re.I),)
    if rule.at == "whole":
        openers = alternation(list(book.followup_openers))
        return (
            re.compile(rf"^\s*(?:(?:{openers})[\s,]+)*(?:{words})(?:[\s,]+please)?[\s?!.]*$", re.I),
        )
    if rule.at == "catalog_brands":
        return (re.compile(rf"(?<![\w-])(?:{words})\s*$", re.I),)
    if rule.at == "rest_edges":
        return (
            re.compile(rf"(?:[\s,]*(?<![\w-])(?:{words}))+[\s?!.]*$", re.I),
            re.compile(rf"^(?:(?:{words})(?![\w-])[\s,]*)+", re.I),
        )
    lead = rf"(?<![\w-])(?:{words})"
    ordinal = ""
    if rule.ordinal:
        ordinal = (
            rf"(?:the\s+)?(?:(?P<word>{alternation(list(book.ordinal_words))}|last)"
            r"|(?P<num>\d{1,2})(?:st|nd|rd|th)|(?:#\s*|number\s+|no\.?\s*)(?P<hash>\d{1,2}))"
        )
        lead = rf"(?:{lead}\s+|^\s*)" if rule.bare else rf"{lead}\s+"
    after = rf"(?:\s+(?:{alternation(list(rule.optional_after))}))?" if rule.optional_after else ""
    return (re.compile(rf"{lead}{ordinal}{after}(?![\w-])", re.I),)


def read_rule_table(path: Path = RULES_PATH) -> list[dict[str, Any]]:
    """The table's entries as written (a list of JSON objects)."""
    rules: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["rules"]
    return rules


def load_rules(book: Phrasebook, path: Path = RULES_PATH) -> tuple[Rule, ...]:
    """followup_rules.json's rules, in order."""
    return tuple(rule_from(entry, book) for entry in read_rule_table(path))
