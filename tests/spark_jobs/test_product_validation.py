"""The row rules (the Java product rules, through Spark), column mapping, schema and generator.

rules/src/test/java has the rules' own unit tests (`mvn test`, run by test_rules_jar.py).

The rules run on the tests' shared local Spark session (marked `spark`): each test puts
all its cases in one DataFrame, so a case costs a row, not a Spark job. Column mapping,
file discovery, the one product schema and the generator need no JVM.
"""

from __future__ import annotations

import dataclasses
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from app.core.catalog import (
    COLUMN_NAMES,
    PAYLOAD_COLUMNS,
    PRODUCT_COLUMNS,
    ColumnSpec,
    Product,
    columns_of,
    spark_schema,
)
from spark_jobs.errors import InputError
from spark_jobs.generate_products import generate, generate_file
from spark_jobs.inputs import column_mapping, discover, json_lines
from spark_jobs.product_copy import CATALOG
from spark_jobs.validation import REASONS, TS_DEFAULTED

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

NOW = 1_800_000_000_000


def check(spark: SparkSession, rows: list[Any]) -> list[dict[str, Any] | list[str]]:
    """Each row (a dict, or a raw line) through the JSONL reader and the rules, in order.

    Returns the cleaned row (table columns + ts_defaulted) or the list of reasons.
    """
    from pyspark.sql import functions as F

    lines = [(n, r if isinstance(r, str) else json.dumps(r)) for n, r in enumerate(rows)]
    frame = spark.createDataFrame(lines, "n int, value string")
    checked = json_lines(frame, NOW, F.lit("<test>"))
    checked = checked.orderBy("n")
    return [
        list(row[REASONS]) or {c: row[c] for c in (*COLUMN_NAMES, TS_DEFAULTED)}
        for row in checked.collect()
    ]


def _row(pid: int, name: str, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict.fromkeys(COLUMN_NAMES)
    return {**base, "id": pid, "ts": NOW, "name": name, TS_DEFAULTED: True, **kw}


@pytest.mark.spark
def test_integral_ids_pass_and_others_fail(spark: SparkSession) -> None:
    good = [12, "12", " 12 ", 12.0, "-3", 2**63 - 1]
    bad = ["12.5", 12.5, "abc", True, "1e3", 2**63, [1], "+", "-"]
    results = check(spark, [{"id": v, "name": "x"} for v in (*good, *bad)])
    assert [r["id"] for r in results[: len(good)] if isinstance(r, dict)] == [
        12,
        12,
        12,
        12,
        -3,
        2**63 - 1,
    ]
    assert all(isinstance(r, list) and r[0].startswith("id is not an integer") for r in results[6:])
    blank = [None, "", " ", "\u00a0", "\t\n"]
    missing = check(spark, [{"name": "x"}, *({"id": v, "name": "x"} for v in blank)])
    assert missing == [["id is missing"]] * 6
    # Leading zeros and signs are integers too, though not as Spark would write them.
    signed = check(spark, [{"id": v, "name": "x"} for v in ("007", "+7", "-0")])
    assert [r["id"] if isinstance(r, dict) else r for r in signed] == [7, 7, 0]


@pytest.mark.spark
def test_valid_rows_are_cleaned(spark: SparkSession) -> None:
    results = check(
        spark,
        [
            {"id": "7", "name": "  Tea\x00 Tin\n", "description": "Loose\tleaf. ", "price": "4.5"},
            {"id": 1, "name": "Mug", "price": "", "ts": "123"},
            {"Product ID": 2, "Title": "Lamp", "unit-price": 3, "brand": "  "},
        ],
    )
    assert results == [
        _row(7, "Tea Tin", description="Loose leaf.", price=4.5),
        _row(1, "Mug", ts=123, ts_defaulted=False),
        _row(2, "Lamp", price=3.0),
    ]


BAD_ROWS: list[tuple[Any, list[str]]] = [
    ({"name": "x"}, ["id is missing"]),
    ({"id": "1.5", "name": "x"}, ["id is not an integer: '1.5'"]),
    ({"id": 1, "name": " \x07 "}, ["name is empty"]),
    ({"id": 1, "name": "x", "price": -0.01}, ["price must be >= 0"]),
    ({"id": 1, "name": "x", "price": "NaN"}, ["price must be finite"]),
    ({"id": 1, "name": "x", "price": "-Infinity"}, ["price must be finite"]),
    ({"id": 1, "name": "x", "price": True}, ["price must be a number"]),
    ({"id": 1, "name": "x", "price": "cheap"}, ["price is not a number: 'cheap'"]),
    ({"id": 1, "name": "x", "ts": "yesterday"}, ["ts is not epoch millis: 'yesterday'"]),
    ({"id": 1, "name": "x", "ts": -5}, ["ts is not epoch millis: '-5'"]),
    ({"id": 1, "name": {"en": "x"}}, ["name must be text"]),
    ({"id": 1, "name": "x", "brand": ["a"]}, ["brand must be text"]),
    ({"id": "", "name": ""}, ["id is missing", "name is empty"]),
    (
        {"id": "a", "name": "", "description": {}, "price": -1, "ts": "t"},
        [
            "id is not an integer: 'a'",
            "description must be text",
            "name is empty",
            "price must be >= 0",
            "ts is not epoch millis: 't'",
        ],
    ),
    ({"id": 1, "op": "merge", "name": "x"}, ["op must be upsert or delete: 'merge'"]),
    ("{not json", ["not a JSON object"]),
    ("[1, 2]", ["not a JSON object"]),
]


@pytest.mark.spark
def test_bad_rows_give_every_reason(spark: SparkSession) -> None:
    assert check(spark, [row for row, _ in BAD_ROWS]) == [reasons for _, reasons in BAD_ROWS]


@pytest.mark.spark
def test_json_keys_match_the_same_way_on_every_path(spark: SparkSession) -> None:
    """The rules look a key up as it is before normalizing it (most keys are the table's
    own names, or `op`); every row here must read as the normalized lookup reads it:
    case, spaces and dashes ignored, the column's own name first, else the first alias
    in the row."""
    rows = [
        {"id": 1, "name": "own names", "extra_key": "ignored"},  # a key no column reads
        {"id": 2, "title": "alias"},  # plain aliases, one spelling per column
        {"id": 3, "title": "alias", "name": "own name wins"},
        {"id": 4, "title": "first alias wins", "product_name": "second"},  # ambiguous
        {"ID": 5, "Name": "any case", "Unit-Price": "2"},
        {"id": 6, "name": "x", "a,title": "a key with a comma is not an alias"},
        {"id": 7, "name": "x", "operation": "delete", "op": "upsert"},  # first op wins
        {"id": 8, "name": "x", "op": "upsert", "operation": "delete"},
        {"product_id": "9", "name": "x", "Extra Key": 1, "price": 1},
        {"id": 10, " NAME ": "x", "a\u0000title": "a key with U+0000 is not an alias either"},
        {"id": 11, "ts": 5, "name": "only own names", "op": "upsert"},  # the direct path
    ]
    results = check(spark, rows)
    assert [r["name"] if isinstance(r, dict) else r for r in results] == [
        "own names",
        "alias",
        "own name wins",
        "first alias wins",
        "any case",
        "x",
        "x",
        "x",
        "x",
        "x",
        "only own names",
    ]
    assert [r["id"] for r in results if isinstance(r, dict)] == list(range(1, 12))
    assert [r["price"] for r in results if isinstance(r, dict)][4::4] == [2.0, 1.0]
    # Row 7 is a delete (its `operation` comes first); row 8 is not.
    lines = spark.createDataFrame([(json.dumps(r),) for r in rows[6:8]], "value string")
    deletes = json_lines(lines, NOW).collect()
    assert [r["is_delete"] for r in deletes] == [True, False]


# Raw JSON lines and what the rules read from them: as Spark's from_json read them when
# the rules were Spark expressions (checked against that code), which ProductRules.java
# (rules/) now does by hand. A number is read as Jackson writes it back: an integer as its digits,
# a float as Java's Double.toString, a non-finite one quoted.
JSON_VALUES: list[tuple[str, str | tuple[str, Any]]] = [
    ('{"id": 1e3, "name": "x"}', ("id", 1000)),
    ('{"id": -0, "name": "x"}', ("id", 0)),
    ('{"id": 12.0e0, "name": "x"}', ("id", 12)),
    ('{"id": 1, "name": "x", "price": 12.50}', ("price", 12.5)),
    ('{"id": 1, "name": "x", "price": 1.0000000000000000001}', ("price", 1.0)),
    ('{"id": 1, "name": "x", "brand": true}', ("brand", "true")),
    ("{'id': 1, 'name': 'single quotes'}", ("name", "single quotes")),
    ('{"id": 1, "name": "first", "name": "second"}', ("name", "first")),
    ('{"id": 1, "name": "x"} trailing text', ("name", "x")),
    ('{"id": 1, "name": "x", "description": "a\\u0000b"}', ("description", "ab")),
    ('{"id": 1, "name": "x", "price": "0x1p3"}', ("price", 8.0)),
    ('{"id": 10000000000000000000000, "name": "x"}', "id is not an integer: '1000000000000"),
    ('{"id": 1, "name": "x", "price": NaN}', "price is not a number: '\"NaN\"'"),
    ('{"id": 1, "name": "x", "price": 1e400}', "price is not a number: '\"Infinity\"'"),
    ('{"id": 1, "name": "x", "ts": 1.5e12}', "ts is not epoch millis: '1.5E12'"),
    ('{"id": 1, "name": {"a": [1]}}', "name must be text"),
    ('{"id": 1, "name": "x", "price": 007}', "not a JSON object"),
    ('{"id": 1, "name": "x",}', "not a JSON object"),
]


@pytest.mark.spark
def test_json_values_read_as_spark_read_them(spark: SparkSession) -> None:
    results = check(spark, [line for line, _ in JSON_VALUES])
    for (line, expected), result in zip(JSON_VALUES, results, strict=True):
        if isinstance(expected, str):
            assert isinstance(result, list) and result[0].startswith(expected), line
        else:
            column, value = expected
            assert isinstance(result, dict) and result[column] == value, line


@pytest.mark.spark
def test_deletes_need_only_an_id(spark: SparkSession) -> None:
    results = check(
        spark, [{"op": "delete", "id": 4}, {"OP": "D", "id": "5", "name": ""}, {"op": "d"}]
    )
    assert [r if isinstance(r, list) else r["id"] for r in results] == [4, 5, ["id is missing"]]


@pytest.mark.spark
def test_clean_text_never_keeps_control_characters(spark: SparkSession) -> None:
    # Every control character and the Unicode spaces, at the edges and inside.
    controls = "".join(chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)))
    texts = [f"{controls}a{controls}b{controls}", "\u00a0 x \u2003", "\u2028y\t"]
    results = check(spark, [{"id": 1, "name": t} for t in texts])
    names = [r["name"] if isinstance(r, dict) else r for r in results]
    # \t\n and \r (apart) become one space each; the rest of the controls go.
    assert names == ["a  b", "x", "y"]
    for name in names:
        assert isinstance(name, str) and name == name.strip()
        assert not any(unicodedata.category(c) == "Cc" for c in name)
    # Raw lines (json.dumps escapes the controls above): a raw DEL is removed; a raw tab
    # never reaches a value, since JSON rejects raw control characters inside strings.
    raw = [
        '{"id": 1, "name": " a\x7fb "}',
        '{"id": 2, "name": " plain "}',
        '{"id": 3, "name": "a\tb"}',
    ]
    assert [r["name"] if isinstance(r, dict) else r for r in check(spark, raw)] == [
        "ab",
        "plain",
        ["not a JSON object"],
    ]


@pytest.mark.spark
def test_the_session_jvm_compiles_huge_methods(spark: SparkSession) -> None:
    """The session's JVM JIT-compiles methods over HotSpot's 8000-byte limit too
    (spark_jobs/session.py says why)."""
    jvm: Any = spark._jvm
    bean_class = jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(bean_class)
    assert bean.getVMOption("DontCompileHugeMethods").getValue() == "false"


def test_column_mapping_aliases_and_precedence() -> None:
    mapping = column_mapping(["Product ID", "Title", "id", "Unit-Price", "colour"], "f.csv")
    assert mapping == {"id": "id", "Title": "name", "Unit-Price": "price"}
    with pytest.raises(InputError, match="no id column"):
        column_mapping(["sku", "name"], "f.csv")


def test_discover_reports_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="input not found"):
        discover([str(tmp_path / "nope.jsonl")], None)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match="no product files"):
        discover([str(tmp_path)], None)
    with pytest.raises(InputError, match="pass --format"):
        discover([str(tmp_path / "notes.txt")], None)
    # Object-store inputs are listed by Spark, not here.
    assert discover(["s3a://bucket/in/"], None) == []


def test_generator_is_deterministic_varied_and_valid(tmp_path: Path) -> None:
    first = list(generate(2_000, seed=5, start_id=100))
    assert first == list(generate(2_000, seed=5, start_id=100))
    assert first != list(generate(2_000, seed=6, start_id=100))
    assert [r["id"] for r in first] == list(range(100, 2_100))
    assert {r["category"] for r in first} == set(CATALOG)
    assert len({r["description"] for r in first}) > 1_500
    for row in first:
        assert 2 <= row["description"].count(". ") + 1 <= 4
    result = generate_file(10, seed=5, output=str(tmp_path / "g.jsonl"), start_id=100)
    lines = (tmp_path / "g.jsonl").read_text().splitlines()
    assert result.count == 10 and [json.loads(x) for x in lines] == first[:10]


@pytest.mark.spark
def test_demo_files_are_valid_where_they_should_be(spark: SparkSession) -> None:
    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    lines = (demo / "products.jsonl").read_text().splitlines()
    products = [json.loads(x) for x in lines]
    assert len(products) >= 300 and len({p["id"] for p in products}) == len(products)
    assert len({p["category"] for p in products}) >= 12
    assert all(isinstance(r, dict) for r in check(spark, lines))
    bad = [x for x in (demo / "bad_products.jsonl").read_text().splitlines() if x.strip()]
    outcomes = check(spark, bad)
    assert sum(isinstance(o, list) for o in outcomes) == len(bad) - 1  # one row is fixable


# --- one product schema -------------------------------------------------------------


def test_the_schema_is_derived_from_product() -> None:
    assert PRODUCT_COLUMNS == (
        ("id", "BIGINT"),
        ("ts", "BIGINT"),
        ("name", "STRING"),
        ("description", "STRING"),
        ("category", "STRING"),
        ("brand", "STRING"),
        ("price", "DOUBLE"),
        ("impressions", "DOUBLE"),
        ("clicks", "DOUBLE"),
        ("add_to_carts", "DOUBLE"),
        ("purchases", "DOUBLE"),
        ("ctr", "DOUBLE"),
    )
    assert PAYLOAD_COLUMNS == (
        "name",
        "category",
        "brand",
        "price",
        "impressions",
        "clicks",
        "add_to_carts",
        "purchases",
        "ctr",
    )
    row = {"id": 3, "ts": None, "name": "Lamp", "description": None, "price": 2}
    assert Product.from_row(row) == Product(3, 0, "Lamp", "", None, None, 2.0)


def test_adding_a_column_is_one_edit() -> None:
    """A new field with its ColumnSpec: the Spark schema and the row mapping follow."""
    from pyspark.sql.types import StringType, StructField

    @dataclass(frozen=True, slots=True)
    class WithColour(Product):
        colour: str | None = dataclasses.field(
            default=None,
            metadata={"column": ColumnSpec("STRING", "text", aliases=("color",), payload=True)},
        )

    schema = spark_schema(WithColour)
    assert schema.fieldNames() == [*COLUMN_NAMES, "colour"]
    assert schema["colour"] == StructField("colour", StringType(), nullable=True)
    assert columns_of(WithColour)["colour"].aliases == ("color",)
    row = {"id": 1, "ts": 5, "name": "Mug", "price": None, "colour": "teal"}
    assert WithColour.from_row(row) == WithColour(1, 5, "Mug", "", None, None, None, colour="teal")
