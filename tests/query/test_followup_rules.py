"""The follow-up grammar is data (app/query/followup_rules.json): a newcomer extends it with
one entry and no engine change, the engine reads only the table, and a wrong entry is a
clear error at load. Same last turn as tests/query/test_followup.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.query import OfflineQueryParser
from app.query.followup import FollowUpReader
from app.query.followup_rules import read_rule_table, rule_from
from app.query.turn import ConversationState, ShownProduct, Turn
from app.query.types import Constraint

PARSER = OfflineQueryParser()
CATEGORIES = frozenset({"sports", "kitchen", "audio"})
LAST = ConversationState(
    "running shoes",
    (Constraint("max_price", 100.0, "under $100"),),
    (ShownProduct(11, 45.0), ShownProduct(12, 60.0), ShownProduct(13, 75.0)),
)


def reader(entries: list[dict[str, Any]]) -> FollowUpReader:
    return FollowUpReader(PARSER.book, tuple(rule_from(e, PARSER.book) for e in entries))


def read(r: FollowUpReader, query: str) -> Turn:
    return r.read(PARSER.parse(query, CATEGORIES), LAST, frozenset({"Acme"}), CATEGORIES)


def test_one_new_entry_teaches_a_new_follow_up() -> None:
    table = read_rule_table()
    assert not read(reader(table), "switch to red").follow_up  # a new question today
    switch = {
        "example": "switch to red",
        "at": "start",
        "phrases": ["switch to"],
        "effect": "refine",
    }
    turn = read(reader([*table, switch]), "switch to red")
    assert turn.follow_up and turn.parsed.search_text == "running shoes red"
    assert turn.carried == LAST.filters
    # The other rules read as before.
    assert read(reader([*table, switch]), "cheaper").parsed.get("max_price") == Constraint(
        "max_price", 55.0, "cheaper"
    )


def test_the_engine_reads_only_the_table() -> None:
    table = read_rule_table()
    without_cheaper = [e for e in table if e["effect"] != "cheaper"]
    turn = read(reader(without_cheaper), "cheaper")
    assert turn.parsed.get("max_price") is None  # no cap below the prices shown
    assert read(reader([]), "in black") == Turn(PARSER.parse("in black", CATEGORIES))


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"at": "middle", "phrases": ["x"], "effect": "refine"}, "`at` must be one of"),
        ({"at": "start", "phrases": ["x"], "effect": "shout"}, "`effect` must be one of"),
        ({"at": "start", "phrases": "no_such_list", "effect": "refine"}, "no phrasebook list"),
        ({"at": "start", "phrases": ["x"], "effect": "category"}, "cannot apply at start"),
        ({"at": "anywhere", "phrases": ["like"], "effect": "search_by_shown"}, "needs `ordinal`"),
        ({"at": "start", "phrases": [], "effect": "refine"}, "no phrases"),
    ],
)
def test_a_wrong_entry_is_a_clear_error(entry: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        rule_from(entry, PARSER.book)
