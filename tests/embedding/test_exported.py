"""The model served from its export (app/embedding/exported.py): the vectors of the model
loaded with sentence-transformers, in a process that never imports torch.

The export is made once for the module (`python -m app.embedding --int8` in-process:
fp32, int8, tokenizer, export.json) into a tmp folder. The service test starts the API
image's own command (scripts/serve.sh, real uvicorn) over a committed Spark-written Hudi
table and reads the server's memory map from /proc: no torch library is loaded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from app.core.config import Settings, get_settings
from app.core.ports import free_port
from app.embedding import Embedder
from app.embedding import __main__ as export_cli
from app.embedding.exported import MANIFEST, ModelNotExportedError, load_export
from tests.fixtures.tables.make_tables import EXPECTED_IDS, HERE

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "waterproof bluetooth speaker for the shower",
    "a sturdy everyday item for the kitchen aisle " * 40,  # past the 256-token limit
]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    cache = tmp_path_factory.mktemp("exports")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("MODEL_CACHE_DIR", str(cache))
        get_settings.cache_clear()
        try:
            assert export_cli.main(["--int8"]) == 0
        finally:
            get_settings.cache_clear()
    yield cache


def _settings(cache: Path, **kw: object) -> Settings:
    return Settings(model_cache_dir=str(cache), **kw)  # type: ignore[arg-type]


def test_export_holds_both_engines_and_the_tokenizer(exports: Path) -> None:
    manifest = json.loads((exports / MANIFEST).read_text())
    assert manifest["model"] == "" and manifest["model_id"] == "all-MiniLM-L6-v2"
    assert manifest["int8"].endswith("-int8v3.onnx")
    for name in (manifest["fp32"], manifest["int8"], manifest["tokenizer"]):
        assert (exports / name).is_file()
    assert len(manifest["reference"]) == len(manifest["probes"]) == 3


def test_export_serves_the_vectors_of_the_loaded_model(exports: Path, embedder: Embedder) -> None:
    """Congruence: the export without torch against sentence-transformers' own vectors."""
    fp32 = load_export(_settings(exports, embedding_encoder="onnx-fp32"))
    assert fp32.model is None and fp32.encoder == "onnx-fp32"
    assert fp32.model_id == "all-MiniLM-L6-v2"
    assert (fp32.dim, fp32.max_seq_tokens) == (embedder.dim, embedder.max_seq_tokens)
    reference = embedder.embed_torch(TEXTS)
    assert float(np.abs(fp32.embed(TEXTS) - reference).max()) <= 1e-4
    # Token counts (chunking) from the exported tokenizer: untruncated, as the model's.
    for text in TEXTS:
        assert fp32.tokenizer().encode(text).ids == embedder.tokenizer().encode(text).ids
    assert len(fp32.tokenizer().encode(TEXTS[1]).ids) > 256

    int8 = load_export(_settings(exports, embedding_encoder="onnx-int8"))
    assert (int8.encoder, int8.model_id) == ("onnx-int8", "all-MiniLM-L6-v2+int8")
    assert float(np.min(np.sum(int8.embed(TEXTS) * reference, 1))) >= 0.99

    # auto picks as the loaded model does on this CPU: the same vector space.
    auto = load_export(_settings(exports))
    assert (auto.encoder, auto.model_id) == (embedder.encoder, embedder.model_id)


def test_an_export_that_does_not_fit_is_refused_with_the_reason(
    exports: Path, tmp_path: Path
) -> None:
    with pytest.raises(ModelNotExportedError, match=f"no {MANIFEST}"):
        load_export(_settings(tmp_path))
    with pytest.raises(ModelNotExportedError, match="it holds EMBEDDING_MODEL=''"):
        load_export(_settings(exports, embedding_model="/models/another"))
    with pytest.raises(ModelNotExportedError, match="run torch"):
        load_export(_settings(exports, embedding_encoder="torch"))

    # A copy whose recorded torch vectors are not the model's: its check fails.
    bad = tmp_path / "bad"
    shutil.copytree(exports, bad)
    manifest = json.loads((bad / MANIFEST).read_text())
    manifest["reference"] = [[-x for x in row] for row in manifest["reference"]]
    (bad / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelNotExportedError, match="do not match"):
        load_export(_settings(bad, embedding_encoder="onnx-fp32"))
    manifest["int8"] = None  # exported without --int8 (the image's default)
    (bad / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelNotExportedError, match="no int8 file"):
        load_export(_settings(bad, embedding_encoder="onnx-int8"))
    (bad / manifest["fp32"]).unlink()
    with pytest.raises(ModelNotExportedError, match="which is missing"):
        load_export(_settings(bad))


def _mapped_files(pid: int) -> set[str]:
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {line.split(maxsplit=5)[5] for line in lines if len(line.split(maxsplit=5)) == 6}


def test_the_service_serves_the_export_without_torch(exports: Path, tmp_path: Path) -> None:
    """scripts/serve.sh (the image's CMD) in a fresh process: the sync embeds a real table
    with the export, /recommend answers, and no torch library was ever loaded."""
    table = tmp_path / "products"
    shutil.copytree(HERE / "cow_aged", table)
    port = free_port()
    env = {
        **os.environ,
        "DATA_DIR": str(tmp_path / "data"),
        "HUDI_TABLE_PATH": str(table),
        "QDRANT_PATH": str(tmp_path / "edge"),
        "MODEL_CACHE_DIR": str(exports),
        "SYNC_MODE": "embedded",
        "PORT": str(port),
    }
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            ["./scripts/serve.sh"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            assert server.poll() is None, log.read_text()
            try:
                if httpx.get(url + "/ready").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.3)
        answer = httpx.post(
            url + "/recommend", json={"query": "sturdy everyday item for the kitchen aisle"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["products"]
        mapped = _mapped_files(server.pid)
        # The check sees native libraries: ONNX Runtime's is there, torch's never was.
        assert any("onnxruntime" in f for f in mapped)
        assert not [f for f in mapped if "/torch/" in f or "libtorch" in f]
        assert "exported in" in log.read_text()
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)

    verify = subprocess.run(
        [sys.executable, "-m", "app.sync", "--verify"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert verify.returncode == 0, verify.stderr
    lines = verify.stdout.splitlines()
    assert f"products {len(EXPECTED_IDS)}" in lines
    assert {"missing 0", "stale 0", "extra 0"} <= set(lines)


def test_without_sentence_transformers_a_model_not_exported_stops_the_start(
    tmp_path: Path,
) -> None:
    """The API image has no sentence-transformers: a model not exported into it stops the
    start with what to do. Here the package is made unimportable the way Python documents
    (`sys.modules[name] = None`) in a fresh interpreter; the image itself is checked by
    ../shared/tools/container_smoke.sh (docs/scale-out.md, "Docker")."""
    env = {
        **os.environ,
        "DATA_DIR": str(tmp_path / "data"),
        "HUDI_TABLE_PATH": str(tmp_path / "products"),
        "QDRANT_PATH": str(tmp_path / "edge"),
        "MODEL_CACHE_DIR": str(tmp_path / "no-exports"),
    }
    code = (
        "import sys; sys.modules['sentence_transformers'] = None\n"
        "import uvicorn\n"
        f"uvicorn.run('app.main:app', host='127.0.0.1', port={free_port()})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode != 0
    assert "ModelNotExportedError" in done.stderr
    assert "was not exported here" in done.stderr and "`embed` extra" in done.stderr
