"""Each module of app/embedding imports on its own in a fresh interpreter: none needs
another to have been imported first (the circle choice <-> model did)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(
    "app.embedding" + ("" if p.stem == "__init__" else f".{p.stem}")
    for p in (ROOT / "app" / "embedding").glob("*.py")
)


def test_every_module_is_listed() -> None:
    assert {"app.embedding", "app.embedding.choice", "app.embedding.model"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
