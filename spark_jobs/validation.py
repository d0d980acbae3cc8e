"""Row-level validation of incoming product records, as Spark column expressions.

Input: one STRING column per table column (null when the source has none), as
spark_jobs/inputs.py reads every format; the rule of each column comes from
app.core.catalog (`ColumnSpec.rule`). Each failure is a reason; a row with any reason goes
to quarantine. Rules:
- key (`id`): present and integral within BIGINT; "12", " 12 ", "-3" and integral
  decimals ("12.0", how JSON and Parquet doubles read as text) pass; "12.5", "abc",
  "1e3", true do not.
- text (`name` required): trimmed, control characters removed (newlines and tabs become
  spaces); empty optional text stores null, empty required text is "<col> is empty";
  a JSON object or array is "<col> must be text".
- amount (`price`): optional. Missing/null/"" stores null (a product listed without a
  price; price filters then leave it out). Otherwise a finite number >= 0.
- epoch_millis (`ts`): optional epoch millis (integral, >= 0). Missing is null here and
  flagged (`ts_defaulted`), so that re-sending unchanged content is not a change; the
  job then stamps it with the ingestion time (`stamp_ingestion_time`).
- op (not a table column): missing, `upsert` (or a CDC letter u/i/c/r) upserts; `delete`
  or `d` makes the row a delete (`is_delete`), which needs only a valid id (and ts);
  anything else is "op must be upsert or delete: '<op>'".

Spark reads JSON scalars of any type as their text, so a JSON `true` in a text column is
the word "true" (the old driver-side validator called it "must be text"), and a JSON
`12.0` id and a string "12.0" id are the same thing here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.core.catalog import COLUMNS, ColumnSpec
from spark_jobs.inputs import MALFORMED, OP

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

REASONS = "reasons"
TS_DEFAULTED = "ts_defaulted"
IS_DELETE = "is_delete"
DELETE_OPS = ("delete", "d")
UPSERT_OPS = ("upsert", "u", "insert", "i", "update", "c", "r")

_CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
_SPACE_LIKE = r"[\t\n\r]+"
# (?U): Unicode whitespace, as Python's str.strip() trims it.
_EDGE_SPACE = r"(?U)^\s+|\s+$"
_INTEGRAL = r"^\s*[+-]?\d+(\.0*)?\s*$"
_NOT_PRINTABLE_ASCII = r"[^\x20-\x7e]"


def _quoted(value: Column) -> Column:
    """The value as the reasons show it: first 40 characters in single quotes."""
    from pyspark.sql import functions as F

    return F.concat(F.lit("'"), F.substring(value, 1, 40), F.lit("'"))


def _printable_start(value: Column) -> Column:
    """The first byte is printable ASCII other than a space, so the value has a
    non-space character and its first one is that byte.

    Most values start so, which settles "missing" and "container" without a regular
    expression (a Matcher per value). Two comparisons: strings compare byte by byte, so
    they read the first byte and allocate nothing (F.ascii copies it into a String).
    """
    return (value >= "!") & (value < "\x7f")


def _missing(value: Column) -> Column:
    from pyspark.sql import functions as F

    # Anchored: stops at the first non-space character, cheap on long descriptions.
    blank = value.rlike(r"(?U)^\s*$")
    return value.isNull() | F.when(_printable_start(value), F.lit(False)).otherwise(blank)


def _is_container(value: Column) -> Column:
    """A JSON object or array (how Spark reads a nested value into a STRING column)."""
    from pyspark.sql import functions as F

    opens = value.startswith("[") | value.startswith("{")
    # json_array_length has no generated code in Spark 3.5 (CodegenFallback), so this
    # projection runs outside whole-stage code generation even though nearly no row
    # reaches it: ~0.6 JVM CPU s per 1M rows (validation without it, noisy). Spark 4.0
    # generates its code (SPARK-49766).
    container = (
        value.rlike(r"^\s*[\[{]")
        & F.json_array_length(F.concat(F.lit("["), value, F.lit("]"))).isNotNull()
    )
    return F.when(_printable_start(value) & ~opens, F.lit(False)).otherwise(container)


def _integral(value: Column) -> Column:
    """BIGINT or null: digits only (an integral decimal's zeros dropped), within range."""
    from pyspark.sql import functions as F

    # An integer written as Spark writes it ("12", "-3": nearly every id and ts) is its
    # own cast; the regular expressions below read only the others ("12.0", " 12", "1e3").
    number = value.cast("bigint")
    canonical = number.cast("string") == value
    digits = F.regexp_extract(value, r"^\s*([+-]?\d+)", 1)
    # A non-ANSI cast gives null on overflow, which is what "not an integer" needs.
    return F.when(canonical, number).when(value.rlike(_INTEGRAL), digits.cast("bigint"))


def clean_text(value: Column) -> Column:
    """Trimmed text without control characters; null for missing/empty.

    Printable ASCII (most text) only needs its spaces trimmed; the three regular
    expressions of the general case cost ~10x more per row (measured on descriptions).
    The caller compares the result with "" (see `_values`): repeating the expression
    here would evaluate it twice per row.
    """
    from pyspark.sql import functions as F

    spaced = F.regexp_replace(value, _SPACE_LIKE, " ")
    general = F.regexp_replace(F.regexp_replace(spaced, _CONTROL, ""), _EDGE_SPACE, "")
    return F.when(~value.rlike(_NOT_PRINTABLE_ASCII), F.trim(value)).otherwise(general)


# Reasons read in this order: key, "must be text", "is empty", amount, time.
_PHASE = {"key": 0, "must_be_text": 1, "empty": 2, "amount": 3, "epoch_millis": 4}


def _values(name: str, spec: ColumnSpec) -> dict[str, Column]:
    """Step 1 of a column's rule: its typed value and the flags its reasons read.

    Computed in a projection of their own, so that the reasons (step 2, `_check`) read
    each of them as a column: an expression repeated inside CASE branches is evaluated
    once per use (measured: a text column's rule cost ~5x its cleaning).
    """
    from pyspark.sql import functions as F

    raw = F.col(name)
    columns = {f"{name}__missing": _missing(raw)}
    if spec.rule in ("key", "epoch_millis"):
        columns[f"{name}__value"] = _integral(raw)
    elif spec.rule == "text":
        columns[f"{name}__container"] = _is_container(raw)
        columns[f"{name}__text"] = clean_text(raw)
    else:
        number = raw.cast("double")
        columns[f"{name}__value"] = number
        # Only a value that is not a number can be a boolean or a container: a number
        # skips both checks (null, read by `_check` as "no such reason").
        not_number = F.lower(F.trim(raw)).isin("true", "false") | _is_container(raw)
        columns[f"{name}__not_number"] = F.when(number.isNull(), not_number)
    return columns


def _check(name: str, spec: ColumnSpec) -> tuple[Column, list[tuple[int, Column]]]:
    """Step 2: (the cleaned value, (phase, reason) pairs whose reason is null when the
    rule holds), from the raw column and the columns of `_values`."""
    from pyspark.sql import functions as F

    raw = F.col(name)
    missing = F.col(f"{name}__missing")
    if spec.rule == "key":
        number = F.col(f"{name}__value")
        reason = F.when(missing, F.lit(f"{name} is missing")).when(
            number.isNull(), F.concat(F.lit(f"{name} is not an integer: "), _quoted(raw))
        )
        return number, [(_PHASE["key"], reason)]
    if spec.rule == "epoch_millis":
        number = F.col(f"{name}__value")
        bad = ~missing & (number.isNull() | (number < 0))
        reason = F.when(bad, F.concat(F.lit(f"{name} is not epoch millis: "), _quoted(raw)))
        return number, [(_PHASE["epoch_millis"], reason)]
    if spec.rule == "text":
        container = F.col(f"{name}__container")
        cleaned = F.col(f"{name}__text")
        text = F.when(~container & (cleaned != ""), cleaned)
        reasons = [(_PHASE["must_be_text"], F.when(container, F.lit(f"{name} must be text")))]
        if spec.required:
            empty = F.when(~container & text.isNull(), F.lit(f"{name} is empty"))
            reasons.append((_PHASE["empty"], empty))
        return text, reasons
    number = F.col(f"{name}__value")
    reason = (
        F.when(missing, F.lit(None))
        .when(F.col(f"{name}__not_number"), F.lit(f"{name} must be a number"))
        .when(number.isNull(), F.concat(F.lit(f"{name} is not a number: "), _quoted(raw)))
        .when(F.isnan(number) | (F.abs(number) == float("inf")), F.lit(f"{name} must be finite"))
        .when(number < 0, F.lit(f"{name} must be >= 0"))
    )
    return F.when(~missing, number), [(_PHASE["amount"], reason)]


def validate(df: DataFrame) -> DataFrame:
    """`df` with its table columns typed and cleaned, plus `reasons` and `ts_defaulted`.

    Rows with a non-empty `reasons` array go to quarantine; their typed columns mean
    nothing. A valid row without a ts has a null one until `stamp_ingestion_time`.
    Other columns of `df` (source, raw row) are kept as they are.
    """
    from pyspark.sql import functions as F

    steps = {k: v for n, s in COLUMNS.items() for k, v in _values(n, s).items()}
    df = df.select("*", *(value.alias(key) for key, value in steps.items()))
    cleaned: dict[str, Column] = {}
    reasons: list[tuple[int, Column]] = []
    for name, spec in COLUMNS.items():
        cleaned[name], column_reasons = _check(name, spec)
        reasons.extend(column_reasons)
    op = F.lower(F.trim(F.col(OP)))
    is_delete = op.isin(*DELETE_OPS).eqNullSafe(True)
    op_reason = F.when(
        op.isNotNull() & ~op.isin(*DELETE_OPS, *UPSERT_OPS),
        F.concat(F.lit("op must be upsert or delete: "), _quoted(F.col(OP))),
    )
    ordered = sorted(reasons, key=lambda pair: pair[0])
    # A delete names a row by id (and orders by ts); its other columns do not matter.
    for_delete = [r for phase, r in ordered if phase in (_PHASE["key"], _PHASE["epoch_millis"])]
    checks = F.when(is_delete, F.array(*for_delete, op_reason)).otherwise(
        F.array(*(r for _, r in ordered), op_reason)
    )
    # array_except drops the nulls (rules that held) and keeps the order. Not F.filter: a
    # lambda is evaluated interpreted, and with it every rule inside it (~3x slower). Rows
    # where every rule held (most) skip it: it builds a hash set per row.
    no_reason = F.array(F.lit(None).cast("string"))
    any_reason = F.when(is_delete, F.coalesce(*for_delete, op_reason)).otherwise(
        F.coalesce(*(r for _, r in ordered), op_reason)
    )
    all_reasons = (
        F.when(F.col(MALFORMED).isNotNull(), F.array(F.col(MALFORMED)))
        .when(any_reason.isNull(), F.array().cast("array<string>"))
        .otherwise(F.array_except(checks, no_reason))
    )
    ts_defaulted = [F.col(f"{n}__missing") for n, s in COLUMNS.items() if s.rule == "epoch_millis"]
    keep = [c for c in df.columns if c not in COLUMNS and c != OP and c not in steps]
    return df.select(
        *keep,
        *(value.alias(name) for name, value in cleaned.items()),
        (ts_defaulted[0] if ts_defaulted else F.lit(False)).alias(TS_DEFAULTED),
        is_delete.alias(IS_DELETE),
        all_reasons.alias(REASONS),
    )


def stamp_ingestion_time(valid: DataFrame, ingestion_ts: int) -> DataFrame:
    """Valid rows (`validate`) with the ingestion time as the ts of those that had none.

    A step of its own, applied by the job where the rows leave its cache: Spark writes a
    long literal into the generated code, so a new time in the validation would make its
    code new in every run -- compiled again, and run interpreted until the JIT compiled
    it again. In one JVM, runs of 100k rows took 1-2 s more (15-30%) that way.
    """
    from pyspark.sql import functions as F

    stamped = F.lit(ingestion_ts).cast("bigint")
    epoch_millis = [name for name, spec in COLUMNS.items() if spec.rule == "epoch_millis"]
    return valid.withColumns({c: F.coalesce(F.col(c), stamped) for c in epoch_millis})
