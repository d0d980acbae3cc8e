"""The deployment files stay in step with the code: no setting undocumented, no missing file."""

from __future__ import annotations

import re
from pathlib import Path

from app.core.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_env_example_documents_every_setting() -> None:
    text = (ROOT / ".env.example").read_text()
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", text, flags=re.M))
    fields = {name.upper() for name in Settings.model_fields}
    assert fields - documented == set(), "settings missing from .env.example"
    assert documented - fields == set(), ".env.example names settings that do not exist"


def _dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_dockerfile_references_only_files_that_exist() -> None:
    text = _dockerfile()
    sources = [
        src
        for line in re.findall(r"^COPY\s+(?!--from)(.+)$", text, flags=re.M)
        for src in line.split()[:-1]
    ]
    scripts = re.findall(r"\./(scripts/[\w./-]+)", text)
    assert sources and scripts
    for rel in sources + scripts:
        assert (ROOT / rel).exists(), f"Dockerfile references missing {rel}"
    for script in scripts:
        assert (ROOT / script).stat().st_mode & 0o111, f"{script} is not executable"


def _stages() -> dict[str, tuple[str, str]]:
    """Stage name -> (what it is FROM, its instructions)."""
    parts = re.split(r"^FROM\s+(\S+)\s+AS\s+(\w+)\s*$", _dockerfile(), flags=re.M)
    return {parts[i + 1]: (parts[i], parts[i + 2]) for i in range(1, len(parts), 3)}


def _target(name: str) -> str:
    """A target's instructions with those of the stages it is built FROM."""
    stages = _stages()
    text = ""
    while name in stages:
        parent, body = stages[name]
        text = body + text
        name = parent
    return text


def test_api_image_has_no_jvm_and_runs_as_non_root() -> None:
    api = _target("api")
    assert "pyspark" not in api and ".[spark]" not in api
    # No JDK or JRE, no Maven, nothing from the stage that builds the rules' jar.
    installs = " ".join(re.findall(r"apt-get install[^\n]*", api))
    assert not re.search(r"jdk|jre|java|maven", installs), installs
    # Only the Python packages and the model's exports come from other stages.
    assert sorted(re.findall(r"--from=(\S+)", api)) == ["model", "packages"]
    assert re.search(r"^USER app$", api, flags=re.M)


def test_api_image_installs_no_torch_and_gets_the_exports() -> None:
    """The api target runs the `packages` stage's venv: the project without extras (no
    torch, no sentence-transformers: the `embed` extra); the `model` stage exports into
    the folder the api target copies and names as MODEL_CACHE_DIR."""
    api = _target("api")
    assert "pip install" not in api
    packages = _stages()["packages"][1]
    assert re.findall(r"pip .*install (.+) \\$", packages, flags=re.M) == ["--no-compile ."]
    assert "COPY --from=packages /opt/venv /opt/venv" in api
    model = _stages()["model"][1]
    assert '".[embed]"' in model and "python -m app.embedding" in model
    exports = re.search(r"^ENV MODEL_CACHE_DIR=(\S+)$", model, flags=re.M)
    assert exports
    folder = exports.group(1)
    assert f"COPY --from=model {folder} {folder}" in api
    assert re.search(rf"^ENV .*MODEL_CACHE_DIR={folder}\b", api, flags=re.M)


def test_api_image_copies_no_java_source() -> None:
    """What the api target copies from the build context holds no .java file (the product
    rules live in rules/, which only the `rules` stage copies), and no spark_jobs."""
    api = _target("api")
    sources = [
        src for line in re.findall(r"^COPY\s+(.+)$", api, flags=re.M) for src in line.split()[:-1]
    ]
    assert sources
    for src in sources:
        path = ROOT / src
        files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
        assert not [f for f in files if f.suffix == ".java"], src
        assert not src.startswith(("rules", "spark_jobs")), src


def test_spark_image_gets_the_rules_jar_built_by_maven() -> None:
    stages = _stages()
    rules = stages["rules"][1]
    assert re.search(r"^COPY rules/", rules, flags=re.M) and "mvn -q -B package" in rules
    spark = stages["spark"][1]
    assert "openjdk-17-jre-headless" in spark and not re.search(r"jdk-headless|default-jdk", spark)
    jar = re.search(r"^COPY --from=rules \S+ (\S+)$", spark, flags=re.M)
    assert jar and f"ENV PRODUCT_RULES_JAR={jar.group(1)}" in spark


def test_compose_services_use_existing_targets_and_modules() -> None:
    compose = (ROOT / "docker-compose.yml").read_text()
    targets = set(re.findall(r"^FROM .+ AS (\w+)$", _dockerfile(), flags=re.M))
    for target in re.findall(r"target:\s*(\w+)", compose):
        assert target in targets
    for module in re.findall(r'"-m",\s*"([\w.]+)"', compose):
        path = ROOT / module.replace(".", "/")
        assert path.with_suffix(".py").exists() or (path / "__main__.py").exists(), module
