"""Live Spark writes real Hudi tables; hudi-rs (the API's reader) must see the same thing.

Each Hudi commit costs ~3-5 s on a 2-core box, so a test reuses one table across its
asserts. Table histories:
- test_lifecycle[COW|MOR]: c1 upserts ids 1-3; c2 updates id 2 (newer ts) and adds id 4;
  c3 deletes id 3 (id 99 is absent: fine). Expected final rows: 1, 2 (edited), 4.
- test_upsert_files_validation: one commit from a folder of JSONL + CSV + Parquet with bad
  rows and duplicates; a rerun of the same folder makes no commit.
- seeded_table (module fixture): one commit of ids 1-3; the failure cases must leave it so.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder

from app.core.catalog import COLUMN_NAMES, SIGNAL_COLUMNS
from spark_jobs import delete_products, upsert_products
from spark_jobs.create_table import create_table
from spark_jobs.delete_products import delete_ids
from spark_jobs.table import TableType, product_columns
from spark_jobs.upsert_products import upsert_files, upsert_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
_INSTANT = re.compile(r"^(\d+)_(\d+)\.(commit|deltacommit|replacecommit)$")


# --- readers -------------------------------------------------------------------------


# The sellers' columns: these tests write no shop signals (they stay null).
SELLER_COLUMNS = [c for c in COLUMN_NAMES if c not in SIGNAL_COLUMNS]


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.select(SELLER_COLUMNS).to_pylist(), key=lambda r: r["id"])


def hudi_rs_snapshot(path: Path) -> list[dict[str, Any]]:
    batches = HudiTableBuilder.from_base_uri(str(path)).build().read()
    return _rows(pa.Table.from_batches(batches)) if batches else []


def hudi_rs_incremental(path: Path, start: str, end: str) -> list[dict[str, Any]]:
    options = (
        HudiReadOptions()
        .with_query_type(HudiQueryType.Incremental)
        .with_start_timestamp(start)
        .with_end_timestamp(end)
    )
    batches = HudiTableBuilder.from_base_uri(str(path)).build().read(options)
    return _rows(pa.Table.from_batches(batches)) if batches else []


def spark_snapshot(spark: SparkSession, path: Path) -> list[dict[str, Any]]:
    df = product_columns(spark.read.format("hudi").load(str(path))).select(*SELLER_COLUMNS)
    return sorted((r.asDict() for r in df.collect()), key=lambda r: r["id"])


def completed(path: Path) -> list[tuple[str, str, str]]:
    """(requested, completed, action) of completed writes, by completion time."""
    names = (p.name for p in (path / ".hoodie" / "timeline").iterdir())
    found = [m.groups() for m in map(_INSTANT.match, names) if m]
    return sorted(((r, c, a) for r, c, a in found), key=lambda t: t[1])


def commit_count(path: Path) -> int:
    timeline = HudiTableBuilder.from_base_uri(str(path)).build().get_timeline()
    return len(timeline.get_completed_commits()) + len(timeline.get_completed_deltacommits())


def product(
    pid: int, ts: int, name: str, price: float | str | None = 10.0, **extra: Any
) -> dict[str, Any]:
    row = {"id": pid, "ts": ts, "name": name, "description": f"{name} description.", **extra}
    row.setdefault("category", "kitchen")
    row.setdefault("brand", "Casa Fiore")
    row["price"] = price
    return row


# --- create -> upsert -> update -> delete, both table types ---------------------------


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_lifecycle(spark: SparkSession, tmp_path: Path, table_type: TableType) -> None:
    path = tmp_path / "products"
    assert create_table(spark, str(path), table_type).created
    again = create_table(spark, str(path))
    assert (again.created, again.table_type) == (False, table_type)
    props = (path / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.table.version=9" in props
    assert f"hoodie.table.type={table_type}" in props
    # Instants in UTC: no hour repeats at a DST fall-back.
    assert "hoodie.table.timeline.timezone=UTC" in props.splitlines()
    assert hudi_rs_snapshot(path) == []

    first = [product(1, 100, "Kettle"), product(2, 100, "Grinder"), product(3, 100, "Skillet")]
    assert upsert_rows(spark, str(path), first).upserted == 3
    c1 = completed(path)[-1][1]

    second = [product(2, 200, "Burr Grinder", price=129.0), product(4, 200, "Knife")]
    result = upsert_rows(spark, str(path), second)
    assert (result.read, result.upserted, result.unchanged) == (2, 2, 0)
    c2 = completed(path)[-1][1]

    expected = [first[0], second[0], first[2], second[1]]
    assert hudi_rs_snapshot(path) == expected
    assert spark_snapshot(spark, path) == expected
    # The window is in completion time: (c1, c2] is exactly what commit c2 changed.
    assert hudi_rs_incremental(path, c1, c2) == second
    assert hudi_rs_incremental(path, "0", c1) == first

    deleted = delete_ids(spark, str(path), [3, 99])
    assert (deleted.requested, deleted.deleted, deleted.not_found) == (2, 1, 1)
    final = [first[0], second[0], second[1]]
    assert hudi_rs_snapshot(path) == final
    assert spark_snapshot(spark, path) == final

    action = "deltacommit" if table_type == "MERGE_ON_READ" else "commit"
    assert [a for _, _, a in completed(path)] == [action] * 3
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    timeline = table.get_timeline()
    instants = (
        timeline.get_completed_deltacommits()
        if table_type == "MERGE_ON_READ"
        else timeline.get_completed_commits()
    )
    metadata = json.loads(timeline.get_instant_metadata_in_json(instants[-1]))
    assert metadata["operationType"] == "DELETE"
    stats = [s for files in metadata["partitionToWriteStats"].values() for s in files]
    assert sum(s["numDeletes"] for s in stats) == 1
    assert table.is_mor == (table_type == "MERGE_ON_READ")


# --- validation, quarantine, dedup, idempotent reruns ----------------------------------


def _write_inputs(folder: Path) -> None:
    folder.mkdir()
    lines = [
        json.dumps(product(1, 100, "  Espresso\u0007 Machine  ", price="349.00")),  # 1 good
        json.dumps({"id": "abc", "name": "Bad Id"}),  # 2
        json.dumps({"id": 2, "name": "   "}),  # 3
        json.dumps(product(3, 100, "Cheap", price=-1)),  # 4
        "{not json",  # 5
        json.dumps(product(4, 300, "Kettle v2")),  # 6 newest of id 4
        json.dumps(product(4, 200, "Kettle v1")),  # 7 older duplicate, dropped
        json.dumps({"id": "5", "name": "Tea Tin", "price": None}),  # 8 no ts, no price
        json.dumps({"id": 6.5, "name": "Half"}),  # 9
    ]
    (folder / "a.jsonl").write_text("\n".join(lines) + "\n")
    # Extra (colour) and missing (description, brand) columns; a row one field short.
    (folder / "b.csv").write_text(
        "product_id,title,price,category,colour\n"
        '7,"Yoga Mat",29.5,sports,teal\n8,Headlamp,cheap,outdoor,red\n10,Short Row\n'
    )
    pq.write_table(
        pa.table({"id": [9, None], "name": ["Tent", "Orphan"], "price": [199.0, 1.0]}),
        folder / "c.parquet",
    )


def read_quarantine(folder: Path) -> list[dict[str, Any]]:
    """The rows of a quarantine folder Spark wrote (JSON part files)."""
    return [
        json.loads(line)
        for f in sorted(folder.glob("part-*"))
        for line in f.read_text().splitlines()
    ]


def test_upsert_files_validation(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "products"
    create_table(spark, str(path))
    inputs = tmp_path / "in"
    _write_inputs(inputs)
    quarantine = tmp_path / "quarantine"

    result = upsert_files(spark, str(path), [str(inputs)], quarantine_path=str(quarantine))
    assert (result.read, result.upserted, result.quarantined, result.duplicates) == (14, 5, 8, 1)

    rejects = read_quarantine(quarantine)
    where = sorted((Path(r["source"]).name, r["reasons"], r["row"]) for r in rejects)
    assert where == [
        ("a.jsonl", ["id is not an integer: '6.5'"], '{"id": 6.5, "name": "Half"}'),
        ("a.jsonl", ["id is not an integer: 'abc'"], '{"id": "abc", "name": "Bad Id"}'),
        ("a.jsonl", ["name is empty"], '{"id": 2, "name": "   "}'),
        ("a.jsonl", ["not a JSON object"], "{not json"),
        ("a.jsonl", ["price must be >= 0"], json.dumps(product(3, 100, "Cheap", price=-1))),
        ("b.csv", ["CSV line has the wrong number of fields"], "10,Short Row"),
        (
            "b.csv",
            ["price is not a number: 'cheap'"],
            '{"product_id":"8","title":"Headlamp","price":"cheap","category":"outdoor",'
            '"colour":"red"}',
        ),
        ("c.parquet", ["id is missing"], '{"name":"Orphan","price":1.0}'),
    ]

    rows = {r["id"]: r for r in hudi_rs_snapshot(path)}
    assert sorted(rows) == [1, 4, 5, 7, 9]
    assert rows[1]["name"] == "Espresso Machine"
    assert rows[1]["price"] == 349.0
    assert rows[4]["name"] == "Kettle v2" and rows[4]["ts"] == 300
    assert rows[5]["price"] is None and rows[5]["ts"] > 1_700_000_000_000  # ingestion time
    assert (rows[7]["name"], rows[7]["price"], rows[7]["category"]) == ("Yoga Mat", 29.5, "sports")
    assert (rows[7]["description"], rows[7]["brand"]) == (None, None)

    # Rerun: no commit, no row changes (not even the ingestion-time ts of id 5), and the
    # quarantine folder is rewritten, not appended to.
    before, commits = hudi_rs_snapshot(path), commit_count(path)
    rerun = upsert_files(spark, str(path), [str(inputs)], quarantine_path=str(quarantine))
    assert (rerun.upserted, rerun.unchanged, rerun.quarantined) == (0, 5, 8)
    assert len(read_quarantine(quarantine)) == 8
    assert hudi_rs_snapshot(path) == before
    assert commit_count(path) == commits == 1


# --- failures: one line, non-zero exit, table untouched ----------------------------------


@pytest.fixture(scope="module")
def seeded_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seeded") / "products"
    create_table(spark, str(path))
    rows = [product(1, 100, "Kettle"), product(2, 100, "Grinder"), product(3, 100, "Skillet")]
    upsert_rows(spark, str(path), rows)
    return path


def _assert_one_line_failure(code: int, err: str, needle: str) -> None:
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and needle in lines[0], lines[0]
    assert "Traceback" not in err


def test_cli_failures_leave_table_unchanged(
    spark: SparkSession, seeded_table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, commits = hudi_rs_snapshot(seeded_table), commit_count(seeded_table)
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(product(10, 500, "Would Land")) + "\n")
    no_id = tmp_path / "no_id.csv"
    no_id.write_text("sku,title\nA1,Lamp\n")
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage\x80\n1,2\n")
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 not really parquet")
    bad_ids = tmp_path / "ids.txt"
    bad_ids.write_text("1\ntwo\n")
    table = str(seeded_table)
    upsert = upsert_products.main
    cases = [
        (upsert, ["--table-path", table, "--input", str(tmp_path / "missing.jsonl")], "not found"),
        (upsert, ["--table-path", str(tmp_path / "nope"), "--input", str(good)], "no Hudi table"),
        # The good file is read first; the unmappable one still stops the whole job.
        (upsert, ["--table-path", table, "--input", str(good), str(no_id)], "no id column"),
        (upsert, ["--table-path", table, "--input", str(binary)], "cannot read"),
        (upsert, ["--table-path", table, "--input", str(corrupt)], "cannot read"),
        (delete_products.main, ["--table-path", table, "--ids", str(bad_ids)], "ids.txt:2"),
        (delete_products.main, ["--table-path", table, "--ids", str(tmp_path / "x")], "cannot"),
    ]
    for main, argv, needle in cases:
        code = main(argv)
        _assert_one_line_failure(code, capsys.readouterr().err, needle)
    assert hudi_rs_snapshot(seeded_table) == before
    assert commit_count(seeded_table) == commits


def test_cli_subprocess_reports_missing_input(seeded_table: Path, tmp_path: Path) -> None:
    before = commit_count(seeded_table)
    argv = ["--table-path", str(seeded_table), "--input", str(tmp_path / "missing.jsonl")]
    proc = subprocess.run(
        [sys.executable, "-m", "spark_jobs.upsert_products", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    _assert_one_line_failure(proc.returncode, proc.stderr, "input not found")
    assert commit_count(seeded_table) == before


def test_cli_upsert_prints_counts(
    spark: SparkSession, seeded_table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Same rows as the seed plus one bad row: nothing to write, so no commit either.
    source = tmp_path / "same.jsonl"
    rows = [product(1, 100, "Kettle"), product(2, 100, "Grinder"), {"id": "x", "name": "Bad"}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    quarantine = tmp_path / "q"
    commits = commit_count(seeded_table)
    argv = ["--table-path", str(seeded_table), "--input", str(source)]
    assert upsert_products.main([*argv, "--quarantine", str(quarantine)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:6] == [
        "read 3",
        "upserted 0",
        "quarantined 1",
        "duplicates 0",
        "unchanged 2",
        "deleted 0",
    ]
    assert [r["reasons"] for r in read_quarantine(quarantine)] == [["id is not an integer: 'x'"]]
    assert commit_count(seeded_table) == commits
