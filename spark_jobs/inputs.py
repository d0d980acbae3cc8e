"""Reading product files (JSONL, CSV, Parquet; files or folders, local or s3a://) with Spark.

Every format becomes one DataFrame shape (`read_inputs`): `_source` (the file), `_row`
(the source row as JSON text, or the raw line when it could not be parsed), then the
checked row of spark_jobs/validation.py (typed table columns, `ts_defaulted`,
`is_delete`, `reasons`). CSV and Parquet are first read as source rows of strings (one
per table column, `_op` from the source's `op` column, `_malformed` for a ragged line),
which `validate` checks; a JSON line is parsed and checked in one call (`check_json`).
Nothing is collected to the driver: only file listings and CSV header lines are read
there.

Source columns are mapped to table columns by name, case-insensitively, with the aliases
in app.core.catalog. JSON keys are matched per row (so `"Product ID"` works); CSV and
Parquet columns per file, and a file without an id or a name column fails the job before
anything is written.
"""

from __future__ import annotations

import csv
import logging
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from app.core.catalog import ALIASES, COLUMN_NAMES, REQUIRED_COLUMNS, normalize_column
from spark_jobs.errors import InputError
from spark_jobs.validation import MALFORMED, OP, OP_NAMES, check_json, validate

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

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
SOURCE, ROW = "_source", "_row"
# MALFORMED says why a source row is not a record at all (a malformed JSON line, a ragged
# CSV line), or is null; spark_jobs/validation.py makes it the row's only reason.
RAGGED_CSV = "CSV line has the wrong number of fields"
_CORRUPT = "_corrupt_record"


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


def infer_format(name: str) -> InputFormat | None:
    return _EXTENSIONS.get(Path(name).suffix.lower())


def _wanted(name: str, fmt: InputFormat | None) -> bool:
    # `_SUCCESS`, `.crc` and editor files sit next to data files in Spark/Hadoop folders.
    return not name.startswith((".", "_")) and (fmt is not None or infer_format(name) is not None)


def _format_of(file: str, fmt: InputFormat | None) -> InputFormat:
    file_fmt = fmt or infer_format(file)
    if file_fmt is None:
        raise InputError(f"cannot tell the format of {file}; pass --format")
    return file_fmt


def discover(inputs: list[str], fmt: InputFormat | None) -> list[tuple[str, InputFormat]]:
    """Local inputs expanded into (file, format); URIs (s3a://...) are listed by Spark.

    For a check before the JVM starts: a typo in a local path fails in a second.
    """
    found: list[tuple[str, InputFormat]] = []
    for item in inputs:
        if "://" in item:
            continue
        path = Path(item)
        if not path.exists():
            raise InputError(f"input not found: {item}")
        if path.is_dir():
            files = sorted(str(p) for p in path.rglob("*") if p.is_file() and _wanted(p.name, fmt))
            if not files:
                raise InputError(f"no product files in folder {item}")
        else:
            files = [str(path)]
        found.extend((file, _format_of(file, fmt)) for file in files)
    return found


def list_inputs(
    spark: SparkSession, inputs: list[str], fmt: InputFormat | None
) -> list[tuple[str, InputFormat]]:
    """Files and folders (any Hadoop filesystem) expanded into (file URI, format), sorted."""
    jvm: Any = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    found: list[tuple[str, InputFormat]] = []
    for item in inputs:
        path = jvm.org.apache.hadoop.fs.Path(item)
        fs = path.getFileSystem(conf)
        if not fs.exists(path):
            raise InputError(f"input not found: {item}")
        if fs.getFileStatus(path).isDirectory():
            listing = fs.listFiles(path, True)
            files: list[str] = []
            while listing.hasNext():
                file = listing.next().getPath()
                if _wanted(str(file.getName()), fmt):
                    files.append(str(file))
            if not files:
                raise InputError(f"no product files in folder {item}")
            files.sort()
        else:
            files = [str(fs.makeQualified(path))]
        found.extend((file, _format_of(file, fmt)) for file in files)
    return found


def read_inputs(
    spark: SparkSession, files: list[tuple[str, InputFormat]], ingestion_ts: int
) -> DataFrame:
    """All files as one DataFrame of checked rows (see the module docstring).

    `ingestion_ts` is the ts of rows that bring none.
    """
    by_format: dict[InputFormat, list[str]] = defaultdict(list)
    for file, file_fmt in files:
        by_format[file_fmt].append(file)
    frames: list[DataFrame] = []
    if by_format["jsonl"]:
        frames.append(json_lines(spark.read.text(by_format["jsonl"]), ingestion_ts))
    for group in _group_by_columns(spark, by_format["csv"], _csv_header):
        frames.append(validate(_read_csv(spark, *group), ingestion_ts))
    for group in _group_by_columns(spark, by_format["parquet"], _parquet_columns):
        frames.append(validate(_read_parquet(spark, *group), ingestion_ts))
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return frame


def json_lines(lines: DataFrame, ingestion_ts: int, source: Column | None = None) -> DataFrame:
    """A DataFrame with a `value` column of JSON lines -> checked rows (blank lines dropped).

    A line that is not a JSON object is kept whole for the quarantine; `ingestion_ts` is
    the ts of rows that bring none.
    """
    from pyspark.sql import functions as F

    extra = [c for c in lines.columns if c != "value"]  # kept, e.g. a caller's row number
    parsed = lines.select(
        *extra,
        (source if source is not None else F.input_file_name()).alias(SOURCE),
        F.col("value").alias(ROW),
        check_json(lines.sparkSession, F.col("value"), ingestion_ts).alias("_checked"),
    )
    return parsed.filter(F.col("_checked").isNotNull()).select(*extra, SOURCE, ROW, "_checked.*")


def check_file(spark: SparkSession, file: str, fmt: InputFormat) -> None:
    """Raise InputError when a CSV/Parquet file cannot be read or mapped (JSONL always can)."""
    if fmt == "csv":
        column_mapping(_csv_header(spark, file), file)
    elif fmt == "parquet":
        column_mapping(_parquet_columns(spark, file), file)


def _group_by_columns(
    spark: SparkSession, files: list[str], columns_of: Callable[[SparkSession, str], list[str]]
) -> list[tuple[list[str], list[str]]]:
    """(files, their columns), one group per distinct column list: one Spark read each."""
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for file in files:
        columns = tuple(columns_of(spark, file))
        column_mapping(list(columns), file)  # fail before anything is written
        groups[columns].append(file)
    return [(group, list(columns)) for columns, group in groups.items()]


def _csv_header(spark: SparkSession, file: str) -> list[str]:
    """The header line of a CSV file, read on the driver through Hadoop's FileSystem."""
    jvm: Any = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(file)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    stream = fs.open(path)
    try:
        reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(stream, "UTF-8"))
        line = reader.readLine()
    finally:
        stream.close()
    text = str(line or "").lstrip("\ufeff")
    if "\ufffd" in text:
        raise InputError(f"cannot read {file}: the header is not UTF-8 text")
    return next(csv.reader([text]), [])


def _parquet_columns(spark: SparkSession, file: str) -> list[str]:
    try:
        return list(spark.read.parquet(file).columns)
    except Exception as e:  # Spark raises AnalysisException or a Py4J error for bad footers
        raise InputError(f"cannot read {file}: {_first_line(e)}") from e


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:200]


def _mapped_select(
    mapping: dict[str, str], columns: list[str], source_col: Callable[[str], Column]
) -> list[Column]:
    """The table columns (and `_op`) as STRING, from the mapped source columns or null."""
    from pyspark.sql import functions as F

    by_target = {target: column for column, target in mapping.items()}
    op = next((c for c in columns if c.strip().lower() in OP_NAMES), None)
    if op is not None:
        by_target[OP] = op
    return [
        (
            source_col(by_target[c]).cast("string")
            if c in by_target
            else F.lit(None).cast("string")
        ).alias(c)
        for c in (*COLUMN_NAMES, OP)
    ]


def _read_csv(spark: SparkSession, files: list[str], header: list[str]) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    # Positional names: the schema is given (nothing inferred), whatever the header says.
    positional = [f"_c{i}" for i in range(len(header))]
    schema = StructType([StructField(n, StringType()) for n in [*positional, _CORRUPT]])
    df = (
        spark.read.schema(schema)
        .option("header", True)
        .option("enforceSchema", True)
        # Quoted fields may hold newlines; a multi-line file is read by one task.
        .option("multiLine", True)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", _CORRUPT)
        .csv(files)
    )
    mapping = column_mapping(header, files[0])
    by_name = dict(zip(header, positional, strict=True))
    row = F.to_json(F.struct(*(F.col(p).alias(h) for h, p in by_name.items())))
    return df.select(
        F.input_file_name().alias(SOURCE),
        F.coalesce(F.col(_CORRUPT), row).alias(ROW),
        F.when(F.col(_CORRUPT).isNotNull(), F.lit(RAGGED_CSV)).alias(MALFORMED),
        *_mapped_select(mapping, header, lambda name: F.col(by_name[name])),
    )


def _read_parquet(spark: SparkSession, files: list[str], columns: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    df = spark.read.parquet(*files)
    mapping = column_mapping(columns, files[0])
    return df.select(
        F.input_file_name().alias(SOURCE),
        F.to_json(F.struct(*(F.col(f"`{c}`") for c in columns))).alias(ROW),
        F.lit(None).cast("string").alias(MALFORMED),
        *_mapped_select(mapping, columns, lambda name: F.col(f"`{name}`")),
    )
