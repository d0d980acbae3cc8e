"""Which engine embeds documents on this machine, and why (logged at start-up).

`auto` takes the int8 export where the CPU has int8 dot products (VNNI/AMX, or AVX2's
u8 x s8 multiply-adds: on both it beats the fp32 export at cosine >= 0.99 to torch's
vectors, BENCHMARKS.md), else the fp32 export (torch's vectors). Every ONNX engine is
checked against torch on probe texts before it is used; a failed check falls back a step,
never stops the service. The choice is a small result (`EncoderPick`) that
app.embedding.model builds its Embedder from.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from app.embedding.onnx_encoder import OnnxEncoder, available_cores, open_session
from app.embedding.onnx_export import export_fp32, exportable, quantize_int8
from app.embedding.reference import embed_torch, max_seq_tokens, plain_tokenizer

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

EncoderChoice = Literal["auto", "onnx-int8", "onnx-fp32", "torch"]

# Product-like texts of different lengths, one past the 256-token limit; no one-letter
# text (int8 quantizes activations per batch: such a text scores lower beside a long one).
_PROBES = [
    "waterproof headphones for swimming laps, good value",
    "Stainless steel espresso machine\nA 15-bar pump, a steam wand for milk and a "
    "removable 1.5 l tank. Heats up in 40 seconds.",
    "cordless drill with two batteries and a charger " * 40,
]
# fp32 ONNX equals torch to float32 noise; a real mismatch (wrong pooling) is > 1e-2.
_FP32_MAX_DIFF = 1e-4
# int8 is a close approximation, not the same vectors (BENCHMARKS.md has its cosines).
_INT8_MIN_COSINE = 0.99
# CPU flags for int8 GEMMs, best first: VNNI/AMX natively; AVX2 in two steps (pmaddubsw).
_INT8_FLAGS = ("amx_int8", "avx512_vnni", "avx_vnni", "avx2")


def int8_cpu_flag(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU's int8 dot-product instruction set, or None (or not Linux)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    flags = next(
        (line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")),
        [],
    )
    return next((f for f in _INT8_FLAGS if f in flags), None)


@dataclass(frozen=True, slots=True)
class EncoderPick:
    """The document engine: `name` ("torch-cpu", "onnx-fp32", "onnx-int8"), the ONNX
    encoder that runs it (None: torch), and the vector space's `model_id` (int8 vectors
    are a space of their own: `<model>+int8`)."""

    name: str
    model_id: str
    onnx: OnnxEncoder | None = None


def choose_encoder(
    model: SentenceTransformer,
    model_id: str,
    choice: EncoderChoice,
    device: str,
    cache_dir: str,
    threads: int,
    intra_op_threads: int = 1,
    batch_size: int = 32,
) -> EncoderPick:
    """The fastest engine for `model` allowed by `choice` that passes its probe check.

    `threads` cores in all (0: every core), `intra_op_threads` of them per batch: batches
    run `threads // intra_op_threads` at once.
    """
    torch = EncoderPick(f"torch-{device}", model_id)
    if device != "cpu":
        # No GPU on the machines this was built on: this path is untested.
        logger.info("document encoder: torch on %s (EMBEDDING_DEVICE=%s)", device, device)
        return torch
    if choice == "torch":
        logger.info("document encoder: torch (EMBEDDING_ENCODER=torch)")
        return torch
    if not exportable(model):
        logger.info("document encoder: torch (model layout not exportable as plain mean-pool)")
        return torch
    flag = int8_cpu_flag()
    want_int8 = choice == "onnx-int8" or (choice == "auto" and flag is not None)
    why = f"EMBEDDING_ENCODER={choice}"
    if choice == "auto":
        why = f"auto: CPU has {flag}" if flag else "auto: CPU has no AVX2/VNNI/AMX for int8"
    threads = threads or available_cores()
    try:
        reference = embed_torch(model, _PROBES, batch_size)
        fp32 = export_fp32(model, model_id, _cache(cache_dir))
        if want_int8:
            onnx = _open(model, quantize_int8(fp32), threads, intra_op_threads, batch_size)
            cosine = float(np.min(np.sum(onnx.embed(_PROBES) * reference, 1)))
            if cosine >= _INT8_MIN_COSINE:
                pick = EncoderPick("onnx-int8", f"{model_id}+int8", onnx)
                return _log(pick, f"{why}; probe cosine {cosine:.4f}")
            logger.warning(
                "int8 export: probe cosine %.4f < %s, trying fp32", cosine, _INT8_MIN_COSINE
            )
        onnx = _open(model, fp32, threads, intra_op_threads, batch_size)
        diff = float(np.abs(onnx.embed(_PROBES) - reference).max())
        if diff <= _FP32_MAX_DIFF:
            pick = EncoderPick("onnx-fp32", model_id, onnx)
            return _log(pick, f"{why}; probe max diff {diff:.1g}")
        logger.warning("document encoder: torch (fp32 ONNX export differs by %.2g)", diff)
    except Exception as e:  # an optional speed-up must never stop the service
        logger.warning("document encoder: torch (ONNX unavailable: %s)", e)
    return torch


def _cache(cache_dir: str) -> Path:
    """`cache_dir`, or Settings' default `$DATA_DIR/models` (the field's own default is "",
    which read as the working directory: exports landed in the checkout's root)."""
    if cache_dir:
        return Path(cache_dir)
    from app.core.config import DEFAULT_DATA_DIR

    return DEFAULT_DATA_DIR / "models"


def _open(
    model: SentenceTransformer, path: Path, threads: int, intra_op_threads: int, batch_size: int
) -> OnnxEncoder:
    # Spinning off: the sync shares the process with request threads (see open_session).
    intra = max(1, min(intra_op_threads, threads))
    session = open_session(path, intra, spinning=False)
    max_len = max_seq_tokens(model) + 2
    return OnnxEncoder(
        session, plain_tokenizer(model), max_len, batch_size, path, parallel=threads // intra
    )


def _log(pick: EncoderPick, why: str) -> EncoderPick:
    assert pick.onnx is not None
    onnx = pick.onnx
    logger.info(
        "document encoder: %s (%s, %d batches at once x %d threads, batch %d, %s)",
        pick.name,
        why,
        onnx.parallel,
        onnx.intra_op_threads,
        onnx.batch_size,
        onnx.model_path.name,
    )
    return pick
