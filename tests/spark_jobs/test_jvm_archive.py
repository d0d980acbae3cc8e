"""The suite's JVMs really map the class archive ./test.sh dumped (tests/jvm_archive.py)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.jvm_archive import archive, conf_dir
from tests.spark_cluster import spark_home

pytestmark = pytest.mark.spark


def test_a_spark_submit_jvm_maps_the_archive_with_the_suites_options() -> None:
    if archive() is None:
        pytest.skip("no archive: ./test.sh dumps it (python -m tests.jvm_archive)")
    # The options conftest gave this process, with -Xshare:on: a JVM that cannot map the
    # archive (another class path first, a stale archive) stops instead of running without.
    env = {
        **os.environ,
        "SPARK_CONF_DIR": str(conf_dir()),
        "SPARK_SUBMIT_OPTS": f"{os.environ['SPARK_SUBMIT_OPTS']} -Xshare:on",
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
