"""One place that builds a Hudi-enabled SparkSession, for the jobs, the tests and the benches."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core.config import Settings, get_settings
from spark_jobs.errors import JobError
from spark_jobs.rules_jar import rules_jar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

# Hadoop's s3a connector for Spark 3.5's Hadoop 3.3.4, and the AWS SDK it was built with.
S3A_JARS = (
    "org.apache.hadoop:hadoop-aws:3.3.4",
    "com.amazonaws:aws-java-sdk-bundle:1.12.262",
)


def local_bundle_jar(coords: str) -> Path | None:
    """The jar for `group:artifact:version` in ~/.m2 (where ./scripts/bootstrap.sh puts it)."""
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

    Under `spark-submit` the session (and its jars) already exist and are reused; the
    s3a settings are applied to it all the same (see configure_s3a).
    """
    from pyspark.sql import SparkSession

    s = settings or get_settings()
    active = SparkSession.getActiveSession()
    if active is not None:
        configure_s3a(active, s)
        return active

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
        # A reliable checkpoint's files go when its DataFrame is garbage-collected.
        .config("spark.cleaner.referenceTracking.cleanCheckpoints", "true")
        # The console progress bar would interleave with the jobs' one-line-per-count output.
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        # The upsert job caches its validated rows once and reads them two or three times;
        # compressing the cache hashed every string (descriptions too) for its dictionary
        # statistics: ~15-25% of a 100k first load's JVM CPU (measured A/B, warm JVM).
        .config("spark.sql.inMemoryColumnarStorage.compressed", "false")
        .config("spark.driver.memory", "2g")
        # Keep the Derby metastore and warehouse out of the working directory.
        .config("spark.sql.warehouse.dir", str(Path("/tmp") / "spark-warehouse"))
        .config(
            "spark.driver.extraJavaOptions",
            # JOL (Hudi's object sizing) otherwise tries to attach agents to the JVM: slow,
            # and it dumps warnings (or, with self-attach allowed, a thread dump) on stdout.
            "-Dderby.system.home=/tmp/derby"
            " -Djol.skipHotspotSAAttach=true -Djol.skipDynamicAttach=true"
            # HotSpot never JIT-compiles a method over 8000 bytes of bytecode; the 1M-row
            # upsert bench runs faster with huge methods compiled (BENCHMARKS.md, Spark
            # upsert job).
            " -XX:-DontCompileHugeMethods",
        )
    )
    jar = Path(s.hudi_spark_jar) if s.hudi_spark_jar else local_bundle_jar(s.hudi_spark_bundle)
    packages: list[str] = []
    jars: list[str] = []
    # The product rules (the Maven module rules/), built on first use. Without Maven here
    # they may still come from `spark-submit --jars`; the jobs say so when they do not.
    try:
        jars.append(str(rules_jar(s)))
    except JobError as e:
        logger.warning("%s", e)
    if jar is not None:
        jars.append(str(jar))
    else:
        # Falls back to Ivy (~/.ivy2): slower on the first run, cached after.
        packages.append(s.hudi_spark_bundle)
    # The s3a connector is added whenever it is in ~/.m2, whatever the table path: jars
    # can only join the classpath before the JVM starts, while the s3a settings can be
    # set later on a live session (configure_s3a), e.g. the tests' shared session.
    s3a_jars = [local_bundle_jar(c) for c in S3A_JARS]
    if all(s3a_jars):
        jars.extend(str(j) for j in s3a_jars if j is not None)
    elif is_s3_path(s.hudi_table_path):
        packages.extend(S3A_JARS)
    if jars:
        builder = builder.config("spark.jars", ",".join(jars))
    if packages:
        builder = builder.config("spark.jars.packages", ",".join(packages))
    # Python workers (spark_jobs.embed) run this interpreter, whose packages the job needs;
    # PySpark otherwise starts whatever `python3` is first on PATH. Read by SparkContext
    # from the environment only; a cluster's spark-submit sets its own.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    configure_s3a(session, s)
    return session


def is_s3_path(path: str) -> bool:
    """True for s3:// and s3a://: both name the same table in Spark (configure_s3a) and hudi-rs."""
    return path.startswith(("s3://", "s3a://"))


def configure_s3a(spark: SparkSession, settings: Settings) -> None:
    """Point Hadoop's s3a connector at the endpoint, region and credentials in `settings`.

    Works on a live session (Hadoop reads these when it first opens a bucket), so a session
    built for a local table can still write to s3a://. Credentials are set only when both
    are configured; otherwise s3a's default chain (env, profile, instance role) applies.
    """
    conf: Any = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("fs.s3a.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem")
    # Hadoop 3 has no s3:// filesystem of its own; binding it to S3A lets one
    # HUDI_TABLE_PATH=s3://... serve Spark and hudi-rs alike. A cluster that already binds
    # s3:// (EMR's EMRFS) keeps its own.
    if conf.get("fs.s3.impl") is None:
        conf.set("fs.s3.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem")
    conf.set("fs.s3a.endpoint.region", settings.aws_region)
    if settings.aws_endpoint_url:
        conf.set("fs.s3a.endpoint", settings.aws_endpoint_url)
        # Local S3-compatible servers (MinIO, moto) do not serve bucket.host names.
        conf.set("fs.s3a.path.style.access", "true")
        conf.set(
            "fs.s3a.connection.ssl.enabled",
            "false" if settings.aws_endpoint_url.startswith("http://") else "true",
        )
    if settings.aws_access_key_id and settings.aws_secret_access_key:
        conf.set(
            "fs.s3a.aws.credentials.provider",
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        )
        conf.set("fs.s3a.access.key", settings.aws_access_key_id.get_secret_value())
        conf.set("fs.s3a.secret.key", settings.aws_secret_access_key.get_secret_value())
