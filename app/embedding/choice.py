"""Which engine embeds documents on this machine, and why (logged at start-up).

`auto` takes the fp32 export run by OpenVINO in bf16 where the CPU has AMX
(app.embedding.openvino_session: faster than int8, in the fp32 vector space), else the
int8 export where the CPU has int8 dot products (VNNI, or AVX2's u8 x s8 multiply-adds: on
both it beats the fp32 export at cosine >= 0.99 to torch's vectors, BENCHMARKS.md), else
the fp32 export (torch's vectors). Every engine is checked against torch on probe texts
before it is used; a failed check (or OpenVINO missing) falls back a step, never stops the
service. The choice is a small result (`EncoderPick`) that
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
from app.embedding.onnx_export import export_fp32, exportable, int8_path, quantize_int8
from app.embedding.openvino_session import BF16_FLAG, open_openvino, openvino_installed
from app.embedding.reference import embed_torch, max_seq_tokens, plain_tokenizer

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

EncoderChoice = Literal["auto", "openvino-bf16", "onnx-int8", "onnx-fp32", "torch"]
Opener = Callable[[Path], OnnxEncoder]

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
# bf16 products with fp32 sums stay in the fp32 space; a wrong conversion is far below.
_BF16_MIN_COSINE = 0.9995
# CPU flags for int8 GEMMs, best first: VNNI/AMX natively; AVX2 in two steps (pmaddubsw).
_INT8_FLAGS = ("amx_int8", "avx512_vnni", "avx_vnni", "avx2")
# int8 vectors are a vector space of their own: `<model>+int8`.
INT8_SUFFIX = "+int8"


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The CPU's feature flags ([] when unreadable, or not Linux)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return next(
        (line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")),
        [],
    )


def int8_cpu_flag(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU's int8 dot-product instruction set, or None (or not Linux)."""
    flags = cpu_flags(cpuinfo)
    return next((f for f in _INT8_FLAGS if f in flags), None)


@dataclass(frozen=True, slots=True)
class EncoderPick:
    """The document engine: `name` ("torch-cpu", "onnx-fp32", "onnx-int8",
    "openvino-bf16"), the encoder that runs the export (None: torch), and the vector space's
    `model_id` (int8 vectors are a space of their own: `<model>+int8`).

    `query_file` is the export queries run on ONNX Runtime (app.embedding.onnx_query; None:
    the documents' own file, or torch's fp32 export) and `query_min_cosine` how close to
    the documents' engine it must be (None: equal to float32 noise). Under bf16 documents a
    query runs the int8 export when there is one: a query is a few tokens, so reading the
    weights is its cost, and int8's are a quarter of fp32's (BENCHMARKS.md, "Queries under
    bf16 documents")."""

    name: str
    model_id: str
    onnx: OnnxEncoder | None = None
    query_file: Path | None = None
    query_min_cosine: float | None = None


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
    plan = plan_engines(choice)
    try:
        reference = embed_torch(model, PROBES, batch_size)
        fp32 = export_fp32(model, model_id, export_dir(cache_dir))
        int8 = quantize_int8(fp32) if plan.int8 else None
        tokenizer = plain_tokenizer(model).to_str()
        max_len = max_seq_tokens(model) + 2
        opener, bf16 = openers(tokenizer, max_len, threads, intra_op_threads, batch_size)
        pick = pick_onnx(
            model_id,
            fp32,
            int8,
            opener,
            reference,
            plan.why,
            open_bf16=bf16 if plan.bf16 else None,
        )
        if pick is not None:
            return pick
        logger.warning("document encoder: torch (no ONNX export passed its probe check)")
    except Exception as e:  # an optional speed-up must never stop the service
        logger.warning("document encoder: torch (ONNX unavailable: %s)", e)
    return torch


@dataclass(frozen=True, slots=True)
class EnginePlan:
    """The engines `choice` lets this CPU try, best first, and why the first (for the log)."""

    bf16: bool
    int8: bool
    why: str


def plan_engines(choice: EncoderChoice) -> EnginePlan:
    want_int8, why_int8 = wants_int8(choice)
    want_bf16, why_bf16 = wants_bf16(choice)
    return EnginePlan(want_bf16, want_int8, why_bf16 if want_bf16 else why_int8)


def wants_int8(choice: EncoderChoice) -> tuple[bool, str]:
    """Whether `choice` takes the int8 export on this CPU, and why (for the log)."""
    flag = int8_cpu_flag()
    if choice != "auto":
        return choice == "onnx-int8", f"EMBEDDING_ENCODER={choice}"
    if flag is None:
        return False, "auto: CPU has no AVX2/VNNI/AMX for int8"
    return True, f"auto: CPU has {flag}"


def wants_bf16(choice: EncoderChoice) -> tuple[bool, str]:
    """Whether `choice` runs the fp32 export on OpenVINO in bf16 here, and why (for the log)."""
    if choice != "auto":
        return choice == "openvino-bf16", f"EMBEDDING_ENCODER={choice}"
    if BF16_FLAG not in cpu_flags():
        return False, f"auto: CPU has no {BF16_FLAG}"
    if not openvino_installed():
        return False, f"auto: CPU has {BF16_FLAG}, but openvino is not installed"
    return True, f"auto: CPU has {BF16_FLAG}"


def pick_onnx(
    model_id: str,
    fp32: Path,
    int8: Path | None,
    open_file: Opener,
    reference: Vectors,
    why: str,
    probes: list[str] = PROBES,
    *,
    open_bf16: Opener | None = None,
) -> EncoderPick | None:
    """The `fp32` export on OpenVINO in bf16 (when `open_bf16` is given) if its vectors of
    `probes` are within _BF16_MIN_COSINE of `reference` (torch's), else the `int8` export
    (when given) within _INT8_MIN_COSINE, else the `fp32` one if equal to them; None when
    none passes."""
    if open_bf16 is not None:
        try:
            onnx = open_bf16(fp32)
            cosine = float(np.min(np.sum(onnx.embed(probes) * reference, 1)))
            if cosine >= _BF16_MIN_COSINE:
                queries = int8 if int8 is not None else int8_path(fp32)
                pick = EncoderPick(
                    "openvino-bf16",
                    model_id,
                    onnx,
                    query_file=queries if queries.is_file() else fp32,
                    query_min_cosine=_INT8_MIN_COSINE,
                )
                return _log(pick, f"{why}; probe cosine {cosine:.5f}")
            logger.warning("OpenVINO bf16: probe cosine %.5f < %s", cosine, _BF16_MIN_COSINE)
        except Exception as e:  # openvino missing or failing: ONNX Runtime still runs it
            logger.warning("OpenVINO bf16 unavailable (%s): trying ONNX Runtime", e)
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


def openers(
    tokenizer_json: str, max_len: int, threads: int, intra_op_threads: int, batch_size: int
) -> tuple[Opener, Opener]:
    """Two functions that open an export as a document encoder, on ONNX Runtime and on
    OpenVINO in bf16: `threads` cores in all (0: every core), `intra_op_threads` of them per
    batch, `threads // intra` batches at once (OpenVINO: as many streams, one batch each)."""
    from tokenizers import Tokenizer

    threads = threads or available_cores()
    intra = max(1, min(intra_op_threads, threads))
    parallel = threads // intra

    def open_onnx(path: Path) -> OnnxEncoder:
        # Spinning off: the sync shares the process with request threads (see open_session).
        session = open_session(path, intra, spinning=False)
        tokenizer = Tokenizer.from_str(tokenizer_json)
        return OnnxEncoder(session, tokenizer, max_len, batch_size, path, parallel=parallel)

    def open_bf16(path: Path) -> OnnxEncoder:
        session = open_openvino(path, threads, parallel)
        tokenizer = Tokenizer.from_str(tokenizer_json)
        return OnnxEncoder(session, tokenizer, max_len, batch_size, path, parallel=parallel)

    return open_onnx, open_bf16


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
