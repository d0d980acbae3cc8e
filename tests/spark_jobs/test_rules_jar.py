"""The product rules' jar: a Maven module built once per version, its own unit tests, a
clear error without Maven, and no Java in the wheel."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from app.core.config import Settings
from spark_jobs import rules_jar
from spark_jobs.errors import JobError

ROOT = Path(__file__).resolve().parents[2]
POM = "{http://maven.apache.org/POM/4.0.0}"


def _pom_property(name: str) -> str:
    pom = ET.parse(rules_jar.MODULE / "pom.xml").getroot()
    value = pom.findtext(f"{POM}properties/{POM}{name}")
    assert value is not None, name
    return value


def test_the_module_builds_against_the_pinned_spark() -> None:
    """The pom's Spark (its `provided` jars) is the one the locked pyspark brings."""
    assert _pom_property("spark.version") == version("pyspark")
    assert _pom_property("maven.compiler.release") == "8"  # what Spark 3.5 still runs on


def test_no_java_source_is_shipped_with_the_python_code() -> None:
    assert not list((ROOT / "spark_jobs").rglob("*.java"))
    assert not list((ROOT / "app").rglob("*.java"))
    package_data = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools.package-data]")[1]
    assert ".java" not in package_data.split("\n[", 1)[0]


def test_a_given_jar_wins_and_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no Maven needed
    jar = tmp_path / "rules.jar"
    jar.write_bytes(b"PK")
    assert rules_jar.rules_jar(Settings(product_rules_jar=str(jar))) == jar
    with pytest.raises(JobError, match=r"PRODUCT_RULES_JAR=.* is not a file"):
        rules_jar.rules_jar(Settings(product_rules_jar=str(tmp_path / "nope.jar")))


def test_without_maven_the_error_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    # A PATH without Maven or a JDK, as on the API's machines.
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(JobError, match="mvn not found"):
        rules_jar.rules_jar(Settings())


@pytest.mark.spark
def test_the_jar_is_built_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jar = rules_jar.rules_jar(Settings())
    assert jar.parent == tmp_path / "hudi-rag-recommender" / "jars"
    with zipfile.ZipFile(jar) as archive:
        names = archive.namelist()
    assert f"{rules_jar.RULES_CLASS.replace('.', '/')}.class" in names
    assert not [n for n in names if n.endswith(".java") or "Test" in n]
    built = jar.stat().st_mtime_ns
    assert rules_jar.rules_jar(Settings()) == jar
    assert jar.stat().st_mtime_ns == built  # not built again
    assert [p.name for p in jar.parent.iterdir()] == [jar.name]  # no temporary left


@pytest.mark.spark
def test_the_rules_unit_tests_pass(tmp_path: Path) -> None:
    """`mvn test` in rules/ (JUnit 5: every rule's valid rows, reasons and boundaries)."""
    done = subprocess.run(
        ["mvn", "-q", "-B", "test", f"-Drules.build.dir={tmp_path}"],
        cwd=rules_jar.MODULE,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    reports = list((tmp_path / "surefire-reports").glob("TEST-*.xml"))
    assert reports
    suites = [ET.parse(r).getroot() for r in reports]
    assert sum(int(s.get("tests", "0")) for s in suites) >= 50
    assert all(s.get("failures") == "0" and s.get("errors") == "0" for s in suites)
