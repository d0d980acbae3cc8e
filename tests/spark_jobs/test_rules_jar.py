"""The product rules' jar: built once per version of the rules; a clear error without a JDK."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from spark_jobs import rules_jar
from spark_jobs.errors import JobError


def test_the_jar_is_built_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jar = rules_jar.rules_jar()
    assert jar.parent == tmp_path / "hudi-rag-recommender" / "jars"
    with zipfile.ZipFile(jar) as archive:
        names = archive.namelist()
    assert f"{rules_jar.RULES_CLASS.replace('.', '/')}.class" in names
    built = jar.stat().st_mtime_ns
    assert rules_jar.rules_jar() == jar
    assert jar.stat().st_mtime_ns == built  # not compiled again
    assert [p.name for p in jar.parent.iterdir()] == [jar.name]  # no temporary left


def test_without_javac_the_error_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    # A PATH without a JDK's tools, as on a machine with a JRE only.
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(JobError, match="javac not found"):
        rules_jar.rules_jar()
