"""Row-level validation of incoming product records: the product rules as Spark functions.

The rules run as one Java call per row (rules/src/main/java/hudirag/rules/ProductRules.java,
a Maven module, in the jar spark_jobs/rules_jar.py builds), registered on the session here
as two SQL functions:
- `check_json(spark, value, ingestion_ts)`: a JSON line -> its checked row, or null for a
  blank line. Keys are matched per row, case-insensitively and by alias, the column's own
  name first, else the first alias in the row; other keys are ignored.
- `validate(df, ingestion_ts)`: source rows of strings (one per table column, null when
  the source has none, plus `_op` and `_malformed`; CSV and Parquet, spark_jobs/inputs.py)
  -> checked rows.

A checked row holds the typed, cleaned table columns, `ts_defaulted`, `is_delete` and
`reasons`. The columns, their rules (`ColumnSpec.rule`) and aliases come from
app.core.catalog: the Java code names none. Each failure is a reason; a row with any
reason goes to quarantine. Rules:
- key (`id`): present and integral within BIGINT; "12", " 12 ", "-3" and integral
  decimals ("12.0", how JSON and Parquet doubles read as text) pass; "12.5", "abc",
  the string "1e3", true do not (a JSON number 1e3 reads as "1000.0" and passes).
- text (`name` required): trimmed, control characters removed (newlines and tabs become
  spaces); empty optional text stores null, empty required text is "<col> is empty";
  a JSON object or array is "<col> must be text".
- amount (`price`): optional. Missing/null/"" stores null (a product listed without a
  price; price filters then leave it out). Otherwise a finite number >= 0.
- epoch_millis (`ts`): optional epoch millis (integral, >= 0). Missing is the ingestion
  time, flagged (`ts_defaulted`) so that re-sending unchanged content is not a change.
- op (not a table column): missing, `upsert` (or a CDC letter u/i/c/r) upserts; `delete`
  or `d` makes the row a delete (`is_delete`), which needs only a valid id (and ts);
  anything else is "op must be upsert or delete: '<op>'".

JSON scalars of any type are read as their text (as Spark's from_json read them: the
tests pin the forms), so a JSON `true` in a text column is the word "true", and a JSON
`12.0` id and a string "12.0" id are the same thing here.

Why Java: as Spark 3.5 column expressions (from_json into a map, ~60 expressions per row)
the rules cost more than the Hudi write of the same rows; as one Java call, about what
Spark's own JSON reader costs (BENCHMARKS.md, issue 12, run 9).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.core.catalog import COLUMN_NAMES, COLUMNS, spark_schema
from spark_jobs.errors import JobError
from spark_jobs.rules_jar import RULES_CLASS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

# Why a source row is not a record at all (a malformed JSON line, a ragged CSV line), or
# null: then it is the row's only reason.
MALFORMED = "_malformed"
# An optional `op` column makes a row a delete (`delete`/`d`); anything else upserts.
OP = "_op"
# The names an `op` column goes by; of the two, the first in a row wins.
OP_NAMES = ("op", "operation")
REASONS = "reasons"
TS_DEFAULTED = "ts_defaulted"
IS_DELETE = "is_delete"
_CHECK_JSON = "check_product_json"
_CHECK = "check_product"
_CHECKED = "_checked"


def check_json(spark: SparkSession, value: Column, ingestion_ts: int) -> Column:
    """A JSON line's checked row as a struct (`checked_type`), or null for a blank line.

    `ingestion_ts` is the ts of a row that brings none (`ts_defaulted`).
    """
    from pyspark.sql import functions as F

    _register(spark)
    # As a string: see ProductRules.jsonLineFunction.
    return F.call_udf(_CHECK_JSON, value, F.lit(str(ingestion_ts)))


def validate(df: DataFrame, ingestion_ts: int) -> DataFrame:
    """Source rows of strings -> checked rows; other columns of `df` are kept as they are.

    Rows with a non-empty `reasons` array go to quarantine; their typed columns mean
    nothing. `ingestion_ts` is the ts of a row that brings none (`ts_defaulted`).
    """
    from pyspark.sql import functions as F

    _register(df.sparkSession)
    keep = [c for c in df.columns if c not in COLUMNS and c not in (OP, MALFORMED)]
    source = F.struct(*COLUMN_NAMES, OP, MALFORMED)
    checked = F.call_udf(_CHECK, source, F.lit(str(ingestion_ts)))
    return df.select(*keep, checked.alias(_CHECKED)).select(*keep, f"{_CHECKED}.*")


def checked_type() -> StructType:
    """A checked row: the typed table columns, then ts_defaulted, is_delete, reasons.

    Every column may be null: a rejected row's typed columns mean nothing.
    """
    from pyspark.sql.types import ArrayType, BooleanType, StringType, StructField, StructType

    columns = [StructField(f.name, f.dataType) for f in spark_schema().fields]
    flags = [StructField(TS_DEFAULTED, BooleanType()), StructField(IS_DELETE, BooleanType())]
    return StructType([*columns, *flags, StructField(REASONS, ArrayType(StringType()))])


def _spec() -> str:
    """The catalog's columns as ProductRules reads them (one tab-separated line each)."""
    return "\n".join(
        "\t".join((name, s.rule, "required" if s.required else "optional", *s.aliases))
        for name, s in COLUMNS.items()
    )


def _register(spark: SparkSession) -> None:
    """Register the two functions on this session, once."""
    if spark.catalog.functionExists(_CHECK):
        return
    rules_class: Any = spark._jvm
    for part in RULES_CLASS.split("."):
        rules_class = getattr(rules_class, part)
    try:
        rules = rules_class(_spec(), "\t".join(OP_NAMES))
    except TypeError as e:  # py4j: the name is a JavaPackage, i.e. no such class
        raise JobError(
            f"{RULES_CLASS} is not on Spark's classpath: under spark-submit pass "
            '--jars "$(python -m spark_jobs.rules_jar)"'
        ) from e
    session: Any = spark._jsparkSession
    checked = session.parseDataType(checked_type().json())
    session.udf().register(_CHECK_JSON, rules.jsonLineFunction(), checked)
    session.udf().register(_CHECK, rules.sourceRowFunction(), checked)
