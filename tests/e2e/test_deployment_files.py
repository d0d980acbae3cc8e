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


def test_api_image_has_no_jvm_and_runs_as_non_root() -> None:
    api = _dockerfile().split("AS api", 1)[1]
    assert "openjdk" not in api and "pyspark" not in api and ".[spark]" not in api
    assert re.search(r"^USER app$", api, flags=re.M)


def test_compose_services_use_existing_targets_and_modules() -> None:
    compose = (ROOT / "docker-compose.yml").read_text()
    targets = set(re.findall(r"^FROM .+ AS (\w+)$", _dockerfile(), flags=re.M))
    for target in re.findall(r"target:\s*(\w+)", compose):
        assert target in targets
    for module in re.findall(r'"-m",\s*"([\w.]+)"', compose):
        path = ROOT / module.replace(".", "/")
        assert path.with_suffix(".py").exists() or (path / "__main__.py").exists(), module
