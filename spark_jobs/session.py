"""One place that builds a Hudi-enabled SparkSession, for the jobs, the tests and the benches."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from app.core.config import Settings, get_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)


def local_bundle_jar(coords: str) -> Path | None:
    """The bundle jar in the local Maven repository (where ./scripts/bootstrap.sh puts it)."""
    group, artifact, version = coords.split(":")
    jar = (
        Path.home()
        / ".m2"
        / "repository"
        / Path(*group.split("."))
        / artifact
        / version
        / f"{artifact}-{version}.jar"
    )
    return jar if jar.is_file() else None


def get_spark(
    settings: Settings | None = None, app_name: str = "products-lakehouse"
) -> SparkSession:
    """Return the active SparkSession or build one with the Hudi bundle and extensions.

    Under `spark-submit` the session (and its jars) already exist and are reused.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active

    s = settings or get_settings()
    builder = (
        SparkSession.builder.master(s.spark_master)
        .appName(app_name)
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
        .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.hudi.catalog.HoodieCatalog"
        )
        .config("spark.ui.enabled", "false")
        # The console progress bar would interleave with the jobs' one-line-per-count output.
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        # Keep the Derby metastore and warehouse out of the working directory.
        .config("spark.sql.warehouse.dir", str(Path("/tmp") / "spark-warehouse"))
        .config(
            "spark.driver.extraJavaOptions",
            # JOL (Hudi's object sizing) otherwise tries to attach agents to the JVM: slow,
            # and it dumps warnings (or, with self-attach allowed, a thread dump) on stdout.
            "-Dderby.system.home=/tmp/derby"
            " -Djol.skipHotspotSAAttach=true -Djol.skipDynamicAttach=true",
        )
    )
    jar = Path(s.hudi_spark_jar) if s.hudi_spark_jar else local_bundle_jar(s.hudi_spark_bundle)
    if jar is not None:
        builder = builder.config("spark.jars", str(jar))
    else:
        # Falls back to Ivy (~/.ivy2): slower on the first run, cached after.
        builder = builder.config("spark.jars.packages", s.hudi_spark_bundle)
    if s.hudi_table_path.startswith("s3"):
        builder = _with_s3a(builder, s)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _with_s3a(builder: SparkSession.Builder, s: Settings) -> SparkSession.Builder:
    builder = builder.config("spark.hadoop.fs.s3a.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem")
    if s.aws_endpoint_url:
        builder = builder.config("spark.hadoop.fs.s3a.endpoint", s.aws_endpoint_url).config(
            "spark.hadoop.fs.s3a.path.style.access", "true"
        )
    if s.aws_access_key_id and s.aws_secret_access_key:
        builder = builder.config(
            "spark.hadoop.fs.s3a.access.key", s.aws_access_key_id.get_secret_value()
        ).config("spark.hadoop.fs.s3a.secret.key", s.aws_secret_access_key.get_secret_value())
    return builder.config("spark.hadoop.fs.s3a.endpoint.region", s.aws_region)
