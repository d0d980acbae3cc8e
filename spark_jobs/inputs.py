"""Reading product files (JSONL, CSV, Parquet; files or folders, local or s3a://) with Spark.

Every format becomes one DataFrame shape (`read_inputs`): `_source` (the file), `_row`
(the source row as JSON text, or the raw line when it could not be parsed), `_malformed`
(why the row is not a record, else null), one STRING column per table column and `_op`
(the source's `op` column: `delete`/`d` makes the row a delete), which
spark_jobs/validation.py then checks. Nothing is collected to the driver: only file
listings and CSV header lines are read there.

Source columns are mapped to table columns by name, case-insensitively, with the aliases
in app.core.catalog. JSON keys are matched per row (a line is parsed into a map first, so
`"Product ID"` works); CSV and Parquet columns per file, and a file without an id or a
name column fails the job before anything is written.
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
# An optional `op` column makes a row a delete (`delete`/`d`); anything else upserts.
OP = "_op"
OP_NAMES = ("op", "operation")
# Why a source row is not a record at all (a malformed JSON line, a ragged CSV line,
# an unreadable file), or null; spark_jobs/validation.py makes it the row's only reason.
MALFORMED = "_malformed"
NOT_JSON_OBJECT = "not a JSON object"
RAGGED_CSV = "CSV line has the wrong number of fields"
KEY_WITH_SEPARATOR = "a key holds the character U+0000"
_KEY_SEP = "\u0000"  # joins a row's keys while they are normalized (json_lines)
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


def read_inputs(spark: SparkSession, files: list[tuple[str, InputFormat]]) -> DataFrame:
    """All files as one DataFrame of source rows (see the module docstring)."""
    by_format: dict[InputFormat, list[str]] = defaultdict(list)
    for file, file_fmt in files:
        by_format[file_fmt].append(file)
    frames: list[DataFrame] = []
    if by_format["jsonl"]:
        frames.append(json_lines(spark.read.text(by_format["jsonl"])))
    for group in _group_by_columns(spark, by_format["csv"], _csv_header):
        frames.append(_read_csv(spark, *group))
    for group in _group_by_columns(spark, by_format["parquet"], _parquet_columns):
        frames.append(_read_parquet(spark, *group))
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return frame


def json_lines(lines: DataFrame, source: Column | None = None) -> DataFrame:
    """A DataFrame with a `value` column of JSON lines -> source rows (blank lines dropped).

    Each line is parsed into a map first so that keys are matched case-insensitively and
    by alias, per row; a line that is not a JSON object is kept whole for the quarantine.
    """
    from pyspark.sql import functions as F

    # In steps, so that each line is parsed once and each key normalized once (the
    # optimizer does not merge projections that would repeat an expensive expression).
    extra = [c for c in lines.columns if c != "value"]  # kept, e.g. a caller's row number
    parsed = lines.select(
        *extra,
        (source if source is not None else F.input_file_name()).alias(SOURCE),
        F.col("value").alias(ROW),
        F.from_json("value", "map<string,string>").alias("_parsed"),
    )
    # Blank lines parse to null: only those are trimmed (a copy of the line each).
    parsed = parsed.filter(F.col("_parsed").isNotNull() | (F.trim(ROW) != ""))
    # Two ways to find a column's value, chosen per row. Neither uses a lambda: a
    # `transform` or `filter` keeps its projection out of whole-stage code generation (as
    # `from_json` keeps the parse's, in Spark 3.5), which cost more than the lambdas.
    # - Direct (nearly every row of a file written by a program): every key is a table
    #   column's own name (or `op`), so each column is one map lookup by that name. Told
    #   by counting: the map holds as many keys as it has own names. (A regular
    #   expression over the joined keys cost ~1 JVM CPU s more per 1M rows.)
    # - Otherwise (a key in another case or spelling, an alias, a key no column reads)
    #   the keys are normalized all at once (joined, rewritten, split again) and each
    #   column takes the value at the first position whose key is one of its spellings.
    keys = F.map_keys("_parsed")
    own_names = F.lit(0)
    for name in (*COLUMN_NAMES, OP_NAMES[0]):
        own_names = own_names + F.map_contains_key("_parsed", name).cast("int")
    direct = F.size("_parsed") == own_names
    # normalize_column on the joined keys: spaces trimmed at each key's edges, then
    # lowercase, then " " and "-" as "_".
    trimmed = F.regexp_replace(F.array_join(keys, _KEY_SEP), f"^ +| +$| *({_KEY_SEP}) *", "$1")
    normalized = F.split(F.regexp_replace(F.lower(trimmed), "[ -]", "_"), _KEY_SEP)
    # In a projection of its own: the step below reads it three times.
    parsed = parsed.select("*", direct.alias("_is_direct"))
    direct = F.col("_is_direct")
    entries = parsed.select(
        *extra,
        SOURCE,
        ROW,
        F.when(F.col("_parsed").isNull(), F.lit(NOT_JSON_OBJECT)).alias(MALFORMED),
        F.when(direct, F.col("_parsed")).alias("_direct"),
        F.when(~direct, F.map_values("_parsed")).alias("_values"),
        F.when(~direct, normalized).alias("_keys"),
    )

    def first_with(spellings: list[str]) -> Column:
        positions = [F.nullif(F.array_position("_keys", s), F.lit(0)) for s in spellings]
        first = F.least(*positions) if len(positions) > 1 else positions[0]
        return F.element_at("_values", first.cast("int"))

    def pick(column: str, general: Column) -> Column:
        return F.coalesce(F.element_at("_direct", F.lit(column)), general)

    def aliased(column: str) -> Column:
        # The key spelled like the table column wins over its aliases.
        aliases = [alias for alias, target in ALIASES.items() if target == column != alias]
        return F.coalesce(first_with([column]), first_with(aliases))

    # Keys and values pair up by position: a key holding the separator would shift them
    # (and cannot be a column's spelling), so such a row is not read at all. (Both sizes
    # are -1 on direct rows, whose `_keys` and `_values` are null.)
    shifted = F.when(F.size("_keys") != F.size("_values"), F.lit(KEY_WITH_SEPARATOR))
    return entries.select(
        *extra,
        SOURCE,
        ROW,
        F.coalesce(MALFORMED, shifted).alias(MALFORMED),
        *(pick(c, aliased(c)).alias(c) for c in COLUMN_NAMES),
        # Of `op` and `operation`, the first in the row wins (neither is the column's name).
        pick(OP_NAMES[0], first_with(list(OP_NAMES))).alias(OP),
    )


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
