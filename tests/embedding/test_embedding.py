"""The document encoders against sentence-transformers' own vectors, and what choosing one
does to the index.

Texts are real chunks: generated products cut by the sync's own chunker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from app.core.catalog import Product
from app.core.config import DEFAULT_DATA_DIR
from app.embedding import Embedder, load_embedder
from app.embedding.choice import cpu_flags, int8_cpu_flag
from app.embedding.onnx_export import keep_in_fp32
from app.embedding.openvino_session import BF16_FLAG
from app.sync.chunking import ProductChunker
from app.sync.engine import SyncEngine
from spark_jobs.create_table import create_table
from spark_jobs.generate_products import generate
from spark_jobs.upsert_products import upsert_rows
from tests.synctools import Harness, long_text, make_harness, product

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return load_embedder(encoder="torch")


@pytest.fixture(scope="module")
def int8_embedder(models_dir: str) -> Embedder:
    """Exported and quantized here from scratch (the other tests use data/models' cache)."""
    return load_embedder(encoder="onnx-int8", cache_dir=models_dir)


@pytest.fixture(scope="module")
def chunk_texts(torch_embedder: Embedder) -> list[str]:
    chunker = ProductChunker(torch_embedder.tokenizer(), torch_embedder.model_id, 200, 20)
    texts: list[str] = []
    rows = list(generate(200, seed=3))
    for r in rows:
        p = Product(r["id"], 0, r["name"], r["description"], r["category"], r["brand"], r["price"])
        texts.extend(c.text for c in chunker.chunk(p))
    # Plus short texts (a product with no description is its name alone) and one past the
    # model's 256 tokens (truncated).
    names = [r["name"] for r in rows[:50]]
    return [*texts, *names, "cordless drill with a spare battery " * 60]


@pytest.fixture(scope="module")
def torch_vectors(torch_embedder: Embedder, chunk_texts: list[str]) -> np.ndarray:
    """sentence-transformers' vectors of `chunk_texts`: the reference, computed once."""
    return torch_embedder.embed(chunk_texts)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    assert a.shape == b.shape
    return np.asarray((a * b).sum(axis=1))


# slow: embeds every demo chunk with two encoders (~15 s).
@pytest.mark.slow
def test_int8_vectors_match_sentence_transformers(
    int8_embedder: Embedder, torch_vectors: np.ndarray, chunk_texts: list[str]
) -> None:
    assert int8_embedder.encoder == "onnx-int8"
    assert int8_embedder.onnx is not None and int8_embedder.onnx.model_path.name.endswith(
        "-int8v3.onnx"
    )
    cos = _cosines(int8_embedder.embed(chunk_texts), torch_vectors)
    assert len(cos) == len(chunk_texts) > 250
    assert cos.min() >= 0.99, f"min cosine {cos.min():.4f}"
    # Not the same vectors: if this fails, the int8 model was not used at all.
    assert cos.min() < 0.9999
    norms = np.linalg.norm(int8_embedder.embed(chunk_texts[:5]), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)


# slow: exports and runs the fp32 ONNX model over every demo chunk (~25 s).
@pytest.mark.slow
def test_fp32_onnx_vectors_equal_sentence_transformers(
    models_dir: str, torch_vectors: np.ndarray, chunk_texts: list[str]
) -> None:
    fp32 = load_embedder(encoder="onnx-fp32", cache_dir=models_dir)
    assert fp32.encoder == "onnx-fp32"
    # The export is fused (one Attention op per layer), and still torch's vectors.
    assert fp32.onnx is not None
    graph = onnx.load(str(fp32.onnx.model_path), load_external_data=False).graph
    ops = Counter(n.op_type for n in graph.node)
    assert (ops["Attention"], ops["EmbedLayerNormalization"]) == (6, 1), ops
    vectors = fp32.embed(chunk_texts)
    cos = _cosines(vectors, torch_vectors)
    assert cos.min() >= 0.9999, f"min cosine {cos.min():.6f}"
    # Length bucketing sorts inside embed(): the output must still be in input order.
    shuffled = chunk_texts[::-1]
    np.testing.assert_allclose(fp32.embed(shuffled), vectors[::-1], atol=1e-5)


# slow: compiles the export with OpenVINO and runs it over every demo chunk (~15 s).
@pytest.mark.slow
def test_openvino_bf16_vectors_match_sentence_transformers_in_the_fp32_space(
    models_dir: str, torch_vectors: np.ndarray, chunk_texts: list[str]
) -> None:
    bf16 = load_embedder(encoder="openvino-bf16", cache_dir=models_dir)
    assert bf16.encoder == "openvino-bf16"
    # Close enough to share fp32's space: no `+bf16` id, no re-index from fp32 or torch.
    assert bf16.model_id == "all-MiniLM-L6-v2"
    assert bf16.onnx is not None and bf16.onnx.model_path.name.endswith("b320f7e71a46.onnx")
    vectors = bf16.embed(chunk_texts)
    cos = _cosines(vectors, torch_vectors)
    assert cos.min() >= 0.9995, f"min cosine {cos.min():.6f}"
    if BF16_FLAG in cpu_flags():
        # Not torch's numbers to float noise: bf16 really ran (without AMX, OpenVINO may
        # run the hint in fp32).
        assert float(np.abs(vectors - torch_vectors).max()) > 1e-4
    # Batches side by side on their own infer requests, still in input order.
    np.testing.assert_allclose(bf16.embed(chunk_texts[::-1]), vectors[::-1], atol=2e-3)


def _openvino_without_cpu_plugin(folder: Path) -> Path:
    """A copy (as links) of the installed openvino package missing its CPU plugin, as a
    trimmed image could leave it; returns the folder to put first on PYTHONPATH."""
    import openvino

    installed = Path(openvino.__file__).parent
    package = folder / "openvino"
    (package / "libs").mkdir(parents=True)
    for entry in installed.iterdir():
        if entry.name != "libs":
            (package / entry.name).symlink_to(entry)
    for lib in (installed / "libs").iterdir():
        if lib.name != "libopenvino_intel_cpu_plugin.so":
            (package / "libs" / lib.name).symlink_to(lib)
    return folder


# slow: a fresh interpreter loads the model and tries OpenVINO (~17 s).
@pytest.mark.slow
def test_a_broken_openvino_falls_back_to_onnx_runtime(tmp_path: Path) -> None:
    """OpenVINO wanted but unable to compile (its real error: no CPU plugin): the choice logs
    why and serves the fp32 export on ONNX Runtime, in fp32's vector space."""
    broken = _openvino_without_cpu_plugin(tmp_path)
    code = (
        "from app.embedding import load_embedder\n"
        "e = load_embedder(encoder='openvino-bf16')\n"
        "print('picked', e.encoder, e.model_id, e.onnx.model_path.name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(broken), str(ROOT)])},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'Device with "CPU" name is not registered' in done.stderr, done.stderr[-3000:]
    assert "trying ONNX Runtime" in done.stderr
    picked = done.stdout.split("picked ", 1)[1].split()
    assert picked[:2] == ["onnx-fp32", "all-MiniLM-L6-v2"]
    assert picked[2].endswith("b320f7e71a46.onnx")  # the fp32 export bf16 would have run


def test_auto_picks_bf16_on_amx_else_int8_on_an_int8_cpu_and_names_its_vector_space(
    torch_embedder: Embedder,
) -> None:
    # From the exports ./scripts/bootstrap.sh cached in data/models (made here if missing).
    auto = load_embedder(encoder="auto")
    int8_embedder = load_embedder(encoder="onnx-int8")
    if BF16_FLAG in cpu_flags():
        assert auto.encoder == "openvino-bf16"
        assert auto.model_id == "all-MiniLM-L6-v2"
    elif int8_cpu_flag() is None:
        assert auto.encoder == "onnx-fp32"
        assert auto.model_id == "all-MiniLM-L6-v2"
    else:
        assert auto.encoder == "onnx-int8"
        assert auto.model_id == "all-MiniLM-L6-v2+int8"
    # Torch and fp32 ONNX share a space (no re-index between them); int8 is its own.
    assert torch_embedder.model_id == "all-MiniLM-L6-v2" and torch_embedder.onnx is None
    assert int8_embedder.model_id == "all-MiniLM-L6-v2+int8"
    assert (auto.dim, auto.max_seq_tokens) == (384, 254)
    # With no cache_dir the exports live in Settings' default, data/models: they were once
    # written to the working directory (the checkout's root, where two got committed).
    assert auto.onnx is not None and int8_embedder.onnx is not None
    assert auto.onnx.model_path.parent == int8_embedder.onnx.model_path.parent
    assert auto.onnx.model_path.parent == DEFAULT_DATA_DIR / "models"


def test_int8_cpu_flag_reads_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_vnni\n")
    assert int8_cpu_flag(info) == "avx512_vnni"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse avx2\n")
    assert int8_cpu_flag(info) == "avx2"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse sse4_2 avx\n")
    assert int8_cpu_flag(info) is None
    assert int8_cpu_flag(tmp_path / "missing") is None


def test_int8_keeps_layer_0_and_early_ffn_outputs_in_fp32() -> None:
    names = [
        f"/encoder/encoder/layer.{i}/{part}/MatMul"
        for i in range(6)
        for part in ("attention/self/query", "attention/output/dense", "output/dense")
    ]
    assert keep_in_fp32(names) == [
        "/encoder/encoder/layer.0/attention/self/query/MatMul",
        "/encoder/encoder/layer.0/attention/output/dense/MatMul",
        "/encoder/encoder/layer.0/output/dense/MatMul",
        "/encoder/encoder/layer.1/output/dense/MatMul",
        "/encoder/encoder/layer.2/output/dense/MatMul",
    ]
    assert keep_in_fp32(["/other/MatMul"]) == []


@pytest.mark.spark
def test_switching_the_encoder_reembeds_the_whole_index(
    spark: Any, torch_embedder: Embedder, int8_embedder: Embedder, tmp_path: Path
) -> None:
    path = str(tmp_path / "products")
    create_table(spark, path)
    upsert_rows(
        spark,
        path,
        [
            product(1, 100, "Trail Runner 3", long_text("trail shoe", 4)),
            product(2, 100, "Swim Buds", "Waterproof earbuds for lap swimming."),
        ],
    )
    h = make_harness(path, torch_embedder)
    boot = h.cycle()
    chunks = h.assert_mirror().expected_chunks
    assert boot.mode == "bootstrap" and boot.embedded == chunks > 2

    # Same store, same table, the int8 encoder: every vector is from another space.
    h2 = Harness(h.settings, h.store, SyncEngine(h.settings, h.store, int8_embedder))
    switch = h2.cycle()
    assert switch.mode == "full" and "model changed" in (switch.reason or "")
    assert "all-MiniLM-L6-v2+int8" in (switch.reason or "")
    assert (switch.embedded, switch.deleted, switch.skipped) == (chunks, chunks, 0)
    assert h2.assert_mirror().expected_chunks == chunks

    # And nothing more to do on the next cycle.
    again = h2.cycle()
    assert (again.embedded, again.deleted) == (0, 0)
