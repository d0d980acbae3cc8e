"""Reading product files (JSONL, CSV, Parquet; a file or a folder of them) into raw rows.

Each row comes with where it came from (file, line) so a quarantined row can be found
again. Source columns are mapped to table columns by name, case-insensitively, with a few
common aliases; a file without an id or a name column cannot be mapped and fails the job
before anything is written.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from spark_jobs.errors import InputError

logger = logging.getLogger(__name__)

InputFormat = Literal["jsonl", "csv", "parquet"]
FORMATS: tuple[InputFormat, ...] = ("jsonl", "csv", "parquet")
_EXTENSIONS: dict[str, InputFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
# Source column (normalized) -> table column. Table names map to themselves.
ALIASES: dict[str, str] = {
    "id": "id",
    "product_id": "id",
    "productid": "id",
    "ts": "ts",
    "updated_ts": "ts",
    "name": "name",
    "title": "name",
    "product_name": "name",
    "description": "description",
    "desc": "description",
    "details": "description",
    "category": "category",
    "product_category": "category",
    "brand": "brand",
    "manufacturer": "brand",
    "price": "price",
    "unit_price": "price",
    "price_usd": "price",
}
REQUIRED_COLUMNS = ("id", "name")


@dataclass(frozen=True, slots=True)
class RawRow:
    source: str
    line: int  # 1-based line in JSONL/CSV files, 1-based row number in Parquet
    data: dict[str, Any] | None  # None when the line is not a JSON object
    text: str | None = None  # the raw line, kept when it could not be parsed


def normalize_column(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def column_mapping(columns: list[str], source: str) -> dict[str, str]:
    """Source column -> table column; raises InputError when id or name is missing.

    When two source columns map to the same table column, the one spelled like the table
    column wins (`id` over `product_id`), else the first.
    """
    mapping: dict[str, str] = {}
    taken: dict[str, str] = {}
    for column in columns:
        target = ALIASES.get(normalize_column(column))
        if target is None:
            continue
        current = taken.get(target)
        if current is not None and normalize_column(current) == target:
            continue
        if current is not None:
            del mapping[current]
        mapping[column] = target
        taken[target] = column
    missing = [c for c in REQUIRED_COLUMNS if c not in taken]
    if missing:
        raise InputError(
            f"cannot map columns of {source}: no {' or '.join(missing)} column "
            f"(found: {', '.join(columns[:12]) or 'none'})"
        )
    return mapping


def infer_format(path: Path) -> InputFormat | None:
    return _EXTENSIONS.get(path.suffix.lower())


def discover(inputs: list[str], fmt: InputFormat | None) -> list[tuple[Path, InputFormat]]:
    """Expand files and folders into (file, format), in a stable order."""
    found: list[tuple[Path, InputFormat]] = []
    for item in inputs:
        path = Path(item)
        if not path.exists():
            raise InputError(f"input not found: {item}")
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not p.name.startswith((".", "_"))
                and (fmt is not None or infer_format(p) is not None)
            )
            if not files:
                raise InputError(f"no product files in folder {item}")
        else:
            files = [path]
        for file in files:
            file_fmt = fmt or infer_format(file)
            if file_fmt is None:
                raise InputError(f"cannot tell the format of {file}; pass --format")
            found.append((file, file_fmt))
    return found


def read_rows(path: Path, fmt: InputFormat) -> tuple[list[str], list[RawRow]]:
    """All rows of one file and the column names it uses; InputError when unreadable."""
    try:
        if fmt == "jsonl":
            return _read_jsonl(path)
        if fmt == "csv":
            return _read_csv(path)
        return _read_parquet(path)
    except InputError:
        raise
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"cannot read {path}: {type(e).__name__}: {_first_line(e)}") from e
    except Exception as e:  # pyarrow raises its own family for corrupt files
        if type(e).__module__.startswith("pyarrow"):
            raise InputError(f"cannot read {path}: {_first_line(e)}") from e
        raise


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:200]


def _read_jsonl(path: Path) -> tuple[list[str], list[RawRow]]:
    rows: list[RawRow] = []
    columns: dict[str, None] = {}
    source = str(path)
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                data = None
            if not isinstance(data, dict):
                rows.append(RawRow(source, number, None, line.rstrip("\n")[:2000]))
                continue
            for key in data:
                columns.setdefault(key)
            rows.append(RawRow(source, number, data))
    return list(columns), rows


def _read_csv(path: Path) -> tuple[list[str], list[RawRow]]:
    source = str(path)
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        rows: list[RawRow] = []
        previous_end = 1  # the header's last physical line
        for record in reader:
            # A quoted field may span lines; report the line the record starts on.
            rows.append(RawRow(source, previous_end + 1, dict(record)))
            previous_end = reader.line_num
    return header, rows


def _read_parquet(path: Path) -> tuple[list[str], list[RawRow]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    source = str(path)
    rows = [RawRow(source, n, data) for n, data in enumerate(table.to_pylist(), start=1)]
    return list(table.column_names), rows


def iter_mapped(
    rows: list[RawRow], mapping: dict[str, str]
) -> Iterator[tuple[RawRow, dict[str, Any] | None]]:
    """Each raw row with its values keyed by table column (None for unparsable lines)."""
    for raw in rows:
        if raw.data is None:
            yield raw, None
            continue
        yield raw, {mapping[k]: v for k, v in raw.data.items() if k in mapping}
