"""Fast tier: the row rules, column mapping and generator of spark_jobs, without a JVM."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_jobs.errors import InputError
from spark_jobs.generate_products import generate, generate_file
from spark_jobs.inputs import column_mapping, discover, read_rows
from spark_jobs.product_copy import CATALOG
from spark_jobs.validation import ValidRow, clean_text, parse_int, validate

NOW = 1_800_000_000_000


@pytest.mark.parametrize(
    ("value", "expected"),
    [(12, 12), ("12", 12), (" 12 ", 12), (12.0, 12), ("-3", -3), (2**63 - 1, 2**63 - 1)],
)
def test_integral_ids_pass(value: object, expected: int) -> None:
    assert parse_int(value) == expected


@pytest.mark.parametrize("value", ["12.5", 12.5, "abc", "", True, None, "1e3", 2**63, [1]])
def test_non_integral_ids_fail(value: object) -> None:
    assert parse_int(value) is None


def test_valid_row_is_cleaned() -> None:
    row = validate(
        {"id": "7", "name": "  Tea\x00 Tin\n", "description": "Loose\tleaf. ", "price": "4.5"},
        NOW,
    )
    assert row == ValidRow(7, NOW, "Tea Tin", "Loose leaf.", None, None, 4.5, ts_defaulted=True)


def test_missing_price_is_null_and_given_ts_is_kept() -> None:
    row = validate({"id": 1, "name": "Mug", "price": "", "ts": "123"}, NOW)
    assert isinstance(row, ValidRow)
    assert (row.price, row.ts, row.ts_defaulted) == (None, 123, False)


@pytest.mark.parametrize(
    ("row", "reasons"),
    [
        ({"name": "x"}, ["id is missing"]),
        ({"id": "1.5", "name": "x"}, ["id is not an integer: '1.5'"]),
        ({"id": 1, "name": " \x07 "}, ["name is empty"]),
        ({"id": 1, "name": "x", "price": -0.01}, ["price must be >= 0"]),
        ({"id": 1, "name": "x", "price": "NaN"}, ["price must be finite"]),
        ({"id": 1, "name": "x", "price": True}, ["price must be a number"]),
        ({"id": 1, "name": "x", "ts": "yesterday"}, ["ts is not epoch millis: 'yesterday'"]),
        ({"id": 1, "name": {"en": "x"}}, ["name must be text"]),
        ({"id": "", "name": ""}, ["id is missing", "name is empty"]),
    ],
)
def test_bad_rows_give_every_reason(row: dict[str, object], reasons: list[str]) -> None:
    assert validate(row, NOW) == reasons


@given(st.text(max_size=200))
def test_clean_text_never_keeps_control_characters(text: str) -> None:
    cleaned = clean_text(text)
    assert cleaned is None or cleaned == cleaned.strip()
    assert not any(unicodedata.category(c) == "Cc" for c in cleaned or "")


def test_column_mapping_aliases_and_precedence() -> None:
    mapping = column_mapping(["Product ID", "Title", "id", "Unit-Price", "colour"], "f.csv")
    assert mapping == {"id": "id", "Title": "name", "Unit-Price": "price"}
    with pytest.raises(InputError, match="no id column"):
        column_mapping(["sku", "name"], "f.csv")


def test_discover_and_read_report_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="input not found"):
        discover([str(tmp_path / "nope.jsonl")], None)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="no product files"):
        discover([str(tmp_path)], None)
    with pytest.raises(InputError, match="pass --format"):
        discover([str(tmp_path / "notes.txt")], None)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="cannot read"):
        read_rows(bad, "jsonl")


def test_csv_rows_report_their_starting_line(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text('id,name,description\n1,A,"two\nlines"\n2,B,one\n')
    _, rows = read_rows(path, "csv")
    assert [(r.line, r.data) for r in rows] == [
        (2, {"id": "1", "name": "A", "description": "two\nlines"}),
        (4, {"id": "2", "name": "B", "description": "one"}),
    ]


def test_generator_is_deterministic_varied_and_valid(tmp_path: Path) -> None:
    first = list(generate(2_000, seed=5, start_id=100))
    assert first == list(generate(2_000, seed=5, start_id=100))
    assert first != list(generate(2_000, seed=6, start_id=100))
    assert [r["id"] for r in first] == list(range(100, 2_100))
    assert {r["category"] for r in first} == set(CATALOG)
    assert len({r["description"] for r in first}) > 1_500
    for row in first:
        assert isinstance(validate(row, NOW), ValidRow)
        assert 2 <= row["description"].count(". ") + 1 <= 4
    result = generate_file(10, seed=5, output=str(tmp_path / "g.jsonl"), start_id=100)
    lines = (tmp_path / "g.jsonl").read_text().splitlines()
    assert result.count == 10 and [json.loads(x) for x in lines] == first[:10]


def test_demo_files_are_valid_where_they_should_be() -> None:
    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    products = [json.loads(x) for x in (demo / "products.jsonl").read_text().splitlines()]
    assert len(products) >= 300 and len({p["id"] for p in products}) == len(products)
    assert len({p["category"] for p in products}) >= 12
    assert all(isinstance(validate(p, NOW), ValidRow) for p in products)
    _, bad = read_rows(demo / "bad_products.jsonl", "jsonl")
    outcomes = [validate(r.data, NOW) if r.data is not None else ["json"] for r in bad]
    assert sum(isinstance(o, list) for o in outcomes) == len(bad) - 1  # one row is fixable
