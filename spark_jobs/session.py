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


# Session settings every job relies on: Hudi's serializer, SQL extension and catalog, and a
# few the jobs were tuned with. Under spark-submit, one given there wins.
SESSION_CONF = {
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
    "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
    # A reliable checkpoint's files go when its DataFrame is garbage-collected.
    "spark.cleaner.referenceTracking.cleanCheckpoints": "true",
    # The console progress bar would interleave with the jobs' one-line-per-count output.
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    # The upsert job caches its validated rows once and reads them two or three times;
    # compressing the cache hashed every string (descriptions too) for its dictionary
    # statistics: ~15-25% of a 100k first load's JVM CPU (measured A/B, warm JVM).
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    # Keep the Derby metastore's warehouse out of the working directory.
    "spark.sql.warehouse.dir": str(Path("/tmp") / "spark-warehouse"),
}


def launched_by_spark_submit() -> bool:
    """True in a driver that spark-submit started (it hands PySpark its running JVM)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def get_spark(
    settings: Settings | None = None, app_name: str = "products-lakehouse"
) -> SparkSession:
    """Return the active SparkSession or build one with the Hudi bundle and extensions.

    Under `spark-submit` its master, jars, memory and settings are used as given (the
    JVM is already running): only SESSION_CONF's entries it did not set are added, and
    the s3a settings. Otherwise a session on SPARK_MASTER with the jars from ~/.m2.
    """
    from pyspark.sql import SparkSession

    s = settings or get_settings()
    active = SparkSession.getActiveSession()
    if active is not None:
        configure_s3a(active, s)
        return active
    if launched_by_spark_submit():
        return _submitted_session(s)

    builder = SparkSession.builder.master(s.spark_master).appName(app_name)
    for key, value in {**SESSION_CONF, **_s3a_spark_conf(s)}.items():
        builder = builder.config(key, value)
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
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


def _submitted_session(settings: Settings) -> SparkSession:
    """The session of a spark-submit run: its --master, --jars and --conf, SESSION_CONF added.

    Setting the master or the jars here would override spark-submit's (a job meant for
    the cluster would run in local mode), and a JVM option can no longer apply.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    # Connects to spark-submit's JVM; without it SparkConf() would not read its settings.
    SparkContext._ensure_initialized()
    given = SparkConf()
    builder = SparkSession.builder
    for key, value in {**SESSION_CONF, **_s3a_spark_conf(settings)}.items():
        if not given.contains(key):
            builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    configure_s3a(session, settings)
    return session


def is_s3_path(path: str) -> bool:
    """True for s3:// and s3a://: both name the same table in Spark (configure_s3a) and hudi-rs."""
    return path.startswith(("s3://", "s3a://"))


def s3a_options(settings: Settings) -> dict[str, str]:
    """Hadoop's s3a settings for the endpoint, region and credentials in `settings`.

    Credentials only when both are configured; otherwise s3a's default chain (env,
    profile, instance role) applies.
    """
    conf = {
        "fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.endpoint.region": settings.aws_region,
    }
    if settings.aws_endpoint_url:
        conf["fs.s3a.endpoint"] = settings.aws_endpoint_url
        # Local S3-compatible servers (MinIO, moto) do not serve bucket.host names.
        conf["fs.s3a.path.style.access"] = "true"
        https = not settings.aws_endpoint_url.startswith("http://")
        conf["fs.s3a.connection.ssl.enabled"] = str(https).lower()
    if settings.aws_access_key_id and settings.aws_secret_access_key:
        conf["fs.s3a.aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        )
        conf["fs.s3a.access.key"] = settings.aws_access_key_id.get_secret_value()
        conf["fs.s3a.secret.key"] = settings.aws_secret_access_key.get_secret_value()
    return conf


def _s3a_spark_conf(settings: Settings) -> dict[str, str]:
    # As spark.hadoop.* they reach every executor's own Hadoop configuration too, not only
    # the driver's (configure_s3a), e.g. a cluster's executors writing the table.
    return {f"spark.hadoop.{k}": v for k, v in s3a_options(settings).items()}


def configure_s3a(spark: SparkSession, settings: Settings) -> None:
    """Point the live session's s3a connector at the endpoint, region and credentials.

    Works on a live session (Hadoop reads these when it first opens a bucket), so a session
    built for a local table can still write to s3a://.
    """
    conf: Any = spark.sparkContext._jsc.hadoopConfiguration()
    # Hadoop 3 has no s3:// filesystem of its own; binding it to S3A lets one
    # HUDI_TABLE_PATH=s3://... serve Spark and hudi-rs alike. A cluster that already binds
    # s3:// (EMR's EMRFS) keeps its own.
    if conf.get("fs.s3.impl") is None:
        conf.set("fs.s3.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem")
    for key, value in s3a_options(settings).items():
        conf.set(key, value)
