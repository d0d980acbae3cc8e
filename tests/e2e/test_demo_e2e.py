"""The newcomer's path, end to end: ./uvicorn.sh on a fresh copy, then the demo changes.

Runs the real scripts in a temporary copy of the repo (tracked + unignored files, as a
clone has them) with the venv and the model cache linked in (set-up done): Spark builds the
demo table, uvicorn serves, the in-process sync embeds the catalog, scripts/demo_changes.sh
edits and deletes products with Spark, and the answers follow. A second start must resume
the index from disk.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.config import Settings
from app.core.ports import free_port

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("fresh") / "repo"
    files = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    # What set-up made once is shared, not remade: the venv, and the ONNX exports that
    # ./scripts/bootstrap.sh cached in data/models (its stamp is current, so the copy's
    # bootstrap skips the export; exporting is tested in tests/embedding/).
    (dest / ".venv").symlink_to(ROOT / ".venv")
    (ROOT / "data" / "models").mkdir(parents=True, exist_ok=True)
    (dest / "data" / "models").symlink_to(ROOT / "data" / "models")
    return dest


def _env(port: int) -> dict[str, str]:
    # The defaults only: no app setting from the developer's shell may leak into the demo
    # (the machine's own variables, e.g. CA bundles for the package index, stay).
    settings = {name.upper() for name in Settings.model_fields}
    env = {k: v for k, v in os.environ.items() if k.upper() not in settings}
    return {**env, "HOST": "127.0.0.1", "PORT": str(port), "SYNC_INTERVAL_SECONDS": "3"}


class Service:
    def __init__(self, repo: Path, port: int, log: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            ["./uvicorn.sh"],
            cwd=repo,
            env=_env(port),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.log_path = log

    def wait_ready(self, timeout: float) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            assert self.proc.poll() is None, self.log_path.read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/ready", timeout=2).status_code == 200:
                    return time.monotonic() - start
            except httpx.TransportError:
                pass
            time.sleep(1)
        raise AssertionError(f"not ready in {timeout}s:\n{self.log_path.read_text()[-3000:]}")

    def recommend(self, query: str, **body: Any) -> dict[str, Any]:
        r = httpx.post(f"{self.url}/recommend", json={"query": query, **body}, timeout=60)
        assert r.status_code == 200, r.text
        return dict(r.json())

    def stop(self) -> int:
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            return self.proc.wait(timeout=60)
        finally:
            self._log.close()


@pytest.fixture
def service_factory(repo_copy: Path) -> Iterator[Any]:
    started: list[Service] = []

    def start(name: str) -> Service:
        svc = Service(repo_copy, free_port(), repo_copy / f"{name}.log")
        started.append(svc)
        return svc

    yield start
    for svc in started:
        if svc.proc.poll() is None:
            os.killpg(svc.proc.pid, signal.SIGKILL)


def _ids(answer: dict[str, Any]) -> set[int]:
    return {int(p["id"]) for p in answer["products"]}


def test_uvicorn_sh_demo_then_changes_then_restart(repo_copy: Path, service_factory: Any) -> None:
    svc = service_factory("first")
    svc.wait_ready(timeout=900)
    log = svc.log_path.read_text()
    assert "/docs" in log and "curl" in log  # the script says where to look

    first = svc.recommend("studio headphones, closed back, for mixing", top_k=10)
    assert first["success"] and first["generator"] == "extractive"
    assert 3 in _ids(first)  # Oakhollow Sound Studio 70, deleted by the demo changes
    swim = svc.recommend("waterproof mp3 earbuds for swimming", top_k=10)
    assert 1001 not in _ids(swim)  # added by the demo changes

    port = svc.url.rsplit(":", 1)[1]
    changes = subprocess.run(
        ["./scripts/demo_changes.sh"],
        cwd=repo_copy,
        env=_env(int(port)),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert changes.returncode == 0, changes.stdout + changes.stderr
    assert "synced" in changes.stdout

    assert 1001 in _ids(svc.recommend("waterproof mp3 earbuds for swimming", top_k=10))
    assert 3 not in _ids(svc.recommend("studio headphones, closed back, for mixing", top_k=10))
    status = httpx.get(f"{svc.url}/sync/status", timeout=10).json()
    assert status["last_error"] is None and status["lag_seconds"] == 0
    assert svc.stop() == 0

    # Second start: resumes from data/qdrant, embeds nothing, ready in seconds (no Spark).
    again = service_factory("second")
    seconds = again.wait_ready(timeout=300)
    status = httpx.get(f"{again.url}/sync/status", timeout=10).json()
    assert status["counts"]["embedded"] == 0, status
    assert "created demo table" not in again.log_path.read_text()
    assert 1001 in _ids(again.recommend("waterproof mp3 earbuds for swimming", top_k=10))
    assert again.stop() == 0
    print(f"second start ready in {seconds:.1f}s")
