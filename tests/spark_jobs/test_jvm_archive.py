"""The suite's JVMs really map the class archive ./test.sh dumped (tests/jvm_archive.py)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.jvm_archive import conf_dir, dump, jvm_options
from tests.spark_cluster import spark_home

pytestmark = pytest.mark.spark


def test_a_spark_submit_jvm_maps_the_archive_with_the_suites_options() -> None:
    # Dumped here when ./test.sh did not (a minute, once). With -Xshare:on a JVM that
    # cannot map the archive (another class path first, a stale archive) stops.
    assert dump() is not None, "this JDK wrote no class archive"
    env = {
        **os.environ,
        "SPARK_CONF_DIR": str(conf_dir()),
        "SPARK_SUBMIT_OPTS": f"{jvm_options()} -Xshare:on",
    }
    assert "-XX:SharedArchiveFile=" in env["SPARK_SUBMIT_OPTS"]
    done = subprocess.run(
        [str(spark_home() / "bin" / "spark-submit"), "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "version" in done.stderr + done.stdout
