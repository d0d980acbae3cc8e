"""Create the products Hudi table with Spark SQL DDL (`USING HUDI`); idempotent.

python -m spark_jobs.create_table --table-path P [--table-type COPY_ON_WRITE|MERGE_ON_READ]
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from app.core.catalog import (
    PRECOMBINE_FIELD,
    PRODUCT_COLUMNS,
    RECORD_KEY,
    TABLE_NAME,
    TIMELINE_TIMEZONE_KEY,
)
from app.core.config import get_settings
from spark_jobs import cli
from spark_jobs.errors import JobError
from spark_jobs.table import TableType, read_table_properties

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

_SQL_TYPE = {"COPY_ON_WRITE": "cow", "MERGE_ON_READ": "mor"}


@dataclass(frozen=True, slots=True)
class CreateTableResult:
    table_path: str
    table_type: TableType
    created: bool


def create_table_ddl(table_path: str, table_type: TableType) -> str:
    columns = ",\n  ".join(f"{name} {sql_type}" for name, sql_type in PRODUCT_COLUMNS)
    location = table_path.replace("'", "\\'")
    return (
        f"CREATE TABLE IF NOT EXISTS {TABLE_NAME} (\n  {columns}\n)\nUSING HUDI\n"
        f"LOCATION '{location}'\n"
        f"TBLPROPERTIES (type = '{_SQL_TYPE[table_type]}', primaryKey = '{RECORD_KEY}', "
        f"preCombineField = '{PRECOMBINE_FIELD}', "
        # Instant times are wall-clock strings; in local time a DST fall-back repeats an
        # hour, so later commits could sort before earlier ones. UTC never repeats.
        f"'{TIMELINE_TIMEZONE_KEY}' = 'UTC')"
    )


def create_table(
    spark: SparkSession, table_path: str, table_type: TableType | None = None
) -> CreateTableResult:
    """Create the table at `table_path` unless one is there already.

    Args:
        table_type: COPY_ON_WRITE when creating and None is given; for an existing table
            None accepts its type and a different type is an error (Hudi cannot convert).
    Returns:
        The table's type and whether this call created it.
    """
    props = read_table_properties(spark, table_path)
    if props is not None:
        existing = cast(TableType, props.get("hoodie.table.type", "COPY_ON_WRITE"))
        if table_type is not None and table_type != existing:
            raise JobError(f"table at {table_path} is {existing}, not {table_type}")
        logger.info("table exists at %s (%s); nothing to do", table_path, existing)
        return CreateTableResult(table_path, existing, created=False)

    wanted: TableType = table_type or "COPY_ON_WRITE"
    # The DDL registers the name in the session catalog. The jobs address tables by path,
    # so the name is dropped again right away (LOCATION makes it external: DROP keeps the
    # files); otherwise a second table created in the same session would be silently
    # skipped by IF NOT EXISTS.
    if spark.catalog.tableExists(TABLE_NAME):
        raise JobError(
            f"a table named {TABLE_NAME} is already registered in this Spark catalog; "
            "refusing to create a second one under the same name"
        )
    spark.sql(create_table_ddl(table_path, wanted))
    try:
        if read_table_properties(spark, table_path) is None:
            raise JobError(f"CREATE TABLE wrote no Hudi table at {table_path}")
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {TABLE_NAME}")
    logger.info("created %s table at %s", wanted, table_path)
    return CreateTableResult(table_path, wanted, created=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.create_table", description=__doc__)
    parser.add_argument("--table-path", default=None, help="default: HUDI_TABLE_PATH")
    parser.add_argument("--table-type", choices=sorted(_SQL_TYPE), default=None)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    cli.configure_logging(args.verbose)

    def job() -> None:
        from spark_jobs.session import get_spark

        path = args.table_path or get_settings().hudi_table_path
        result = create_table(get_spark(), path, args.table_type)
        print(f"{'created' if result.created else 'exists'} {result.table_type} {path}")

    return cli.run(job, verbose=args.verbose)


if __name__ == "__main__":
    raise SystemExit(main())
