"""A real Qdrant server for the server tier of the tests, found through the environment.

`QDRANT_TEST_URL` names a running server; otherwise `QDRANT_SERVER_BIN` names a `qdrant`
binary, started once per test session on free loopback ports with its storage in a
temporary folder (`.ci/run` points it at the team's tools when they exist). Tests that
need it are marked `server`. When the tier cannot run (neither variable set, or a binary
that is missing or does not run), tests/conftest.py leaves them out of the run and says
why in the summary (a deselected tier, not a skip inside a test); with
REQUIRE_SERVER_TIER=1 (.ci/run sets it) the run stops at once with that reason instead.
"""

from __future__ import annotations

import functools
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.core.ports import free_port

STARTUP_SECONDS = 30.0
# The gRPC port of each server this session started, by its URL.
_GRPC_PORTS: dict[str, int] = {}


def grpc_port(url: str) -> int:
    """The gRPC port of the server at `url` (Qdrant's default for one this did not start)."""
    return _GRPC_PORTS.get(url, 6334)


def configured() -> bool:
    """Whether the environment names a server to test against, and it can run."""
    return problem() is None


def problem() -> str | None:
    """Why the server tier cannot run here, or None when it can."""
    if os.environ.get("QDRANT_TEST_URL"):
        return None
    binary = os.environ.get("QDRANT_SERVER_BIN")
    if not binary:
        return "neither QDRANT_SERVER_BIN (a binary) nor QDRANT_TEST_URL is set"
    return _binary_problem(binary)


@functools.cache
def _binary_problem(binary: str) -> str | None:
    # Run once per process: a file that exists is not yet a server (wrong platform, a
    # truncated download, no exec bit).
    if not Path(binary).is_file():
        return f"QDRANT_SERVER_BIN={binary}: no such file"
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"QDRANT_SERVER_BIN={binary} does not run: {e}"
    said = (done.stdout + done.stderr).decode(errors="replace").strip()
    if done.returncode != 0 or not said.lower().startswith("qdrant"):
        return (
            f"QDRANT_SERVER_BIN={binary} is not a working qdrant: `--version` exited "
            f"{done.returncode} saying {said[-200:]!r}"
        )
    return None


def wait_ready(url: str, proc: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"qdrant exited with {proc.returncode} before it was ready")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"qdrant at {url} not ready after {STARTUP_SECONDS:.0f} s")


# Imported by the test modules that need it (the name differs from the fixture's, as in
# tests/demo_index.py, so the import does not trip ruff's F811).
@pytest.fixture(scope="session", name="qdrant_server")
def qdrant_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real Qdrant server (skips the test when none is configured)."""
    url = os.environ.get("QDRANT_TEST_URL")
    if url:
        wait_ready(url, None)
        yield url
        return
    binary = os.environ.get("QDRANT_SERVER_BIN")
    reason = problem()
    if not binary or reason is not None:
        raise RuntimeError(f"no Qdrant server: {reason}")
    yield from _run(binary, tmp_path_factory.mktemp("qdrant-server"), {})


# The API key of the fenced server: the syncer signs its lease's write fence with it.
FENCED_API_KEY = "fence-test-key"


@pytest.fixture(scope="session", name="qdrant_fenced_server")
def qdrant_fenced_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real Qdrant server with an API key (FENCED_API_KEY) and JWT RBAC, which
    checks the sync lease's write fence (app/store/fence.py). Needs QDRANT_SERVER_BIN."""
    binary = os.environ.get("QDRANT_SERVER_BIN")
    if not binary or not Path(binary).exists():
        raise RuntimeError("no Qdrant server binary for the fenced server: set QDRANT_SERVER_BIN")
    extra = {"QDRANT__SERVICE__API_KEY": FENCED_API_KEY, "QDRANT__SERVICE__JWT_RBAC": "true"}
    yield from _run(binary, tmp_path_factory.mktemp("qdrant-fenced"), extra)


def _run(binary: str, folder: Path, extra: dict[str, str]) -> Iterator[str]:
    http, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "QDRANT__STORAGE__STORAGE_PATH": str(folder / "storage"),
        "QDRANT__STORAGE__SNAPSHOTS_PATH": str(folder / "snapshots"),
        "QDRANT__SERVICE__HTTP_PORT": str(http),
        "QDRANT__SERVICE__GRPC_PORT": str(grpc),
        "QDRANT__SERVICE__HOST": "127.0.0.1",
        "QDRANT__TELEMETRY_DISABLED": "true",
        **extra,
    }
    log = (folder / "qdrant.log").open("wb")
    proc = subprocess.Popen([binary], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{http}"
    _GRPC_PORTS[url] = grpc
    try:
        wait_ready(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
