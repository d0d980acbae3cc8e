"""Which engine embeds documents on this machine, and why (logged at start-up).

`auto` takes the int8 export where the CPU has int8 dot products (VNNI/AMX, or AVX2's
u8 x s8 multiply-adds: on both it beats the fp32 export at cosine >= 0.99 to torch's
vectors, BENCHMARKS.md), else the fp32 export (torch's vectors). Every ONNX engine is
checked against torch on probe texts before it is used; a failed check falls back a step,
never stops the service. The choice is a small result (`EncoderPick`) that
app.embedding.model builds its Embedder from. An export served without torch
(app.embedding.exported) is picked by the same rule (`pick_onnx`), checked against the
torch vectors recorded when it was made.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from app.embedding.onnx_encoder import OnnxEncoder, Vectors, available_cores, open_session
from app.embedding.onnx_export import export_fp32, exportable, quantize_int8
from app.embedding.reference import embed_torch, max_seq_tokens, plain_tokenizer

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

EncoderChoice = Literal["auto", "onnx-int8", "onnx-fp32", "torch"]

# Product-like texts of different lengths, one past the 256-token limit; no one-letter
# text (int8 quantizes activations per batch: such a text scores lower beside a long one).
PROBES = [
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
# int8 vectors are a vector space of their own: `<model>+int8`.
INT8_SUFFIX = "+int8"


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
    want_int8, why = wants_int8(choice)
    try:
        reference = embed_torch(model, PROBES, batch_size)
        fp32 = export_fp32(model, model_id, export_dir(cache_dir))
        int8 = quantize_int8(fp32) if want_int8 else None
        tokenizer = plain_tokenizer(model).to_str()
        max_len = max_seq_tokens(model) + 2
        opener = onnx_opener(tokenizer, max_len, threads, intra_op_threads, batch_size)
        pick = pick_onnx(model_id, fp32, int8, opener, reference, why)
        if pick is not None:
            return pick
        logger.warning("document encoder: torch (no ONNX export passed its probe check)")
    except Exception as e:  # an optional speed-up must never stop the service
        logger.warning("document encoder: torch (ONNX unavailable: %s)", e)
    return torch


def wants_int8(choice: EncoderChoice) -> tuple[bool, str]:
    """Whether `choice` takes the int8 export on this CPU, and why (for the log)."""
    flag = int8_cpu_flag()
    if choice != "auto":
        return choice == "onnx-int8", f"EMBEDDING_ENCODER={choice}"
    if flag is None:
        return False, "auto: CPU has no AVX2/VNNI/AMX for int8"
    return True, f"auto: CPU has {flag}"


def pick_onnx(
    model_id: str,
    fp32: Path,
    int8: Path | None,
    open_file: Callable[[Path], OnnxEncoder],
    reference: Vectors,
    why: str,
    probes: list[str] = PROBES,
) -> EncoderPick | None:
    """The `int8` export (when given) if its vectors of `probes` are within
    _INT8_MIN_COSINE of `reference` (torch's), else the `fp32` one if equal to them;
    None when neither passes."""
    if int8 is not None:
        onnx = open_file(int8)
        cosine = float(np.min(np.sum(onnx.embed(probes) * reference, 1)))
        if cosine >= _INT8_MIN_COSINE:
            pick = EncoderPick("onnx-int8", f"{model_id}{INT8_SUFFIX}", onnx)
            return _log(pick, f"{why}; probe cosine {cosine:.4f}")
        logger.warning("int8 export: probe cosine %.4f < %s, trying fp32", cosine, _INT8_MIN_COSINE)
    onnx = open_file(fp32)
    diff = float(np.abs(onnx.embed(probes) - reference).max())
    if diff <= _FP32_MAX_DIFF:
        return _log(EncoderPick("onnx-fp32", model_id, onnx), f"{why}; probe max diff {diff:.1g}")
    logger.warning("fp32 ONNX export differs from torch by %.2g on the probes", diff)
    return None


def onnx_opener(
    tokenizer_json: str, max_len: int, threads: int, intra_op_threads: int, batch_size: int
) -> Callable[[Path], OnnxEncoder]:
    """A function that opens an export as a document encoder: `threads` cores in all (0:
    every core), `intra_op_threads` of them per batch, batches run `threads // intra` at once."""
    from tokenizers import Tokenizer

    threads = threads or available_cores()
    intra = max(1, min(intra_op_threads, threads))

    def open_file(path: Path) -> OnnxEncoder:
        # Spinning off: the sync shares the process with request threads (see open_session).
        session = open_session(path, intra, spinning=False)
        tokenizer = Tokenizer.from_str(tokenizer_json)
        return OnnxEncoder(session, tokenizer, max_len, batch_size, path, parallel=threads // intra)

    return open_file


def export_dir(cache_dir: str) -> Path:
    """`cache_dir`, or Settings' default `$DATA_DIR/models` (the field's own default is "",
    which read as the working directory: exports landed in the checkout's root)."""
    if cache_dir:
        return Path(cache_dir)
    from app.core.config import DEFAULT_DATA_DIR

    return DEFAULT_DATA_DIR / "models"


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
