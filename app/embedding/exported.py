"""The model served from an export made ahead of time: ONNX Runtime and a tokenizer, no torch.

`python -m app.embedding` (set-up, and the API image's build) writes, beside the ONNX
files in MODEL_CACHE_DIR, `export.json`: which EMBEDDING_MODEL they are, its vector
space's id, its token limit, the tokenizer file, and torch's own vectors of the probe
texts. `serving_embedder` (the API and `python -m app.sync`) serves from it without
importing sentence-transformers or torch: the same engine choice as
app.embedding.choice (bf16 on OpenVINO with AMX, int8 on a VNNI CPU when exported, else
fp32), checked against
those recorded vectors instead of a live torch. Where there is no such export it loads the model as
before when sentence-transformers is installed (the `embed` extra), and otherwise stops
with ModelNotExportedError: an image without torch cannot export at start.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from app.core.errors import TerminalError
from app.embedding.choice import (
    INT8_SUFFIX,
    PROBES,
    EncoderChoice,
    export_dir,
    openers,
    pick_onnx,
    plan_engines,
)
from app.embedding.model import Embedder, embedder_for

if TYPE_CHECKING:
    from app.core.config import Settings

logger = logging.getLogger(__name__)

MANIFEST = "export.json"
FORMAT = 1


class ModelNotExportedError(TerminalError):
    """The configured model has no usable export in MODEL_CACHE_DIR."""

    def __init__(self, cache: Path, reason: str) -> None:
        super().__init__(f"no usable ONNX export in MODEL_CACHE_DIR={cache}: {reason}")
        self.cache = cache
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Export:
    """export.json, read: files are names inside its folder."""

    model: str  # EMBEDDING_MODEL as set ("": the packaged all-MiniLM-L6-v2)
    model_id: str  # the fp32 vector space; int8's is model_id + INT8_SUFFIX
    fp32: str
    int8: str | None
    tokenizer: str
    max_seq_tokens: int
    probes: list[str]
    reference: list[list[float]]  # torch's unit vectors of `probes`


def write_export(embedder: Embedder, model_setting: str, cache: Path, *, int8: bool) -> Path:
    """Export `embedder`'s model (loaded with sentence-transformers) to `cache` for serving
    without torch: the fp32 export, the int8 one when `int8`, the tokenizer, export.json.

    Raises:
        ValueError: the model is not loaded, or not exportable as plain mean pooling.
    """
    from app.embedding.onnx_export import export_fp32, exportable, quantize_int8
    from app.embedding.reference import embed_torch, max_seq_tokens, plain_tokenizer

    model = embedder.model
    if model is None or not exportable(model):
        raise ValueError(f"{embedder.model_id}: no sentence-transformers model to export")
    model_id = embedder.model_id.removesuffix(INT8_SUFFIX)
    fp32 = export_fp32(model, model_id, cache)
    tokenizer = cache / f"{fp32.stem}.tokenizer.json"
    _write_atomic(tokenizer, plain_tokenizer(model).to_str())
    export = Export(
        model=model_setting,
        model_id=model_id,
        fp32=fp32.name,
        int8=quantize_int8(fp32).name if int8 else None,
        tokenizer=tokenizer.name,
        max_seq_tokens=max_seq_tokens(model),
        probes=list(PROBES),
        reference=embed_torch(model, PROBES, embedder.batch_size).tolist(),
    )
    path = cache / MANIFEST
    _write_atomic(path, json.dumps({"format": FORMAT, **asdict(export)}, indent=1) + "\n")
    logger.info("export for serving without torch: %s (%s)", path, model_id)
    return path


def read_export(cache: Path) -> Export:
    """export.json in `cache`, checked: every file it names is there.

    Raises:
        ModelNotExportedError: none, unreadable, another format, or a file missing.
    """
    path = cache / MANIFEST
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ModelNotExportedError(cache, f"no {MANIFEST}") from e
    except (OSError, ValueError) as e:
        raise ModelNotExportedError(cache, f"unreadable {MANIFEST}: {e}") from e
    if not isinstance(raw, dict) or raw.pop("format", None) != FORMAT:
        raise ModelNotExportedError(cache, f"{MANIFEST} is not format {FORMAT}")
    try:
        export = Export(**raw)
    except TypeError as e:
        raise ModelNotExportedError(cache, f"{MANIFEST}: {e}") from e
    for name in (export.fp32, export.int8, export.tokenizer):
        if name is not None and not (cache / name).is_file():
            raise ModelNotExportedError(cache, f"{MANIFEST} names {name}, which is missing")
    return export


def load_export(settings: Settings) -> Embedder:
    """The Embedder of the export made for settings' EMBEDDING_MODEL, without torch.

    Raises:
        ModelNotExportedError: no export for this model, settings that need torch
            (EMBEDDING_DEVICE, EMBEDDING_ENCODER=torch), EMBEDDING_ENCODER=onnx-int8 and
            no int8 export (`auto` takes fp32 then), or an export whose vectors do not
            match the torch vectors recorded with it.
    """
    return _load_export(
        settings.model_cache_dir,
        settings.embedding_model,
        settings.embedding_device,
        settings.embedding_encoder,
        settings.embedding_threads,
        settings.embedding_intra_op_threads,
        settings.embedding_batch_size,
    )


def serving_embedder(settings: Settings) -> Embedder:
    """The model as the service runs it: from its export (`load_export`) when there is one;
    else loaded with sentence-transformers (`embedder_for`, which exports at start).

    Raises:
        ModelNotExportedError: no usable export, and sentence-transformers is not installed
            (the API image): the message says what to export.
    """
    try:
        return load_export(settings)
    except ModelNotExportedError as e:
        if importlib.util.find_spec("sentence_transformers") is None:
            model = settings.embedding_model or "the packaged all-MiniLM-L6-v2"
            raise ModelNotExportedError(
                e.cache,
                f"{e.reason}. EMBEDDING_MODEL ({model}) with EMBEDDING_ENCODER="
                f"{settings.embedding_encoder} was not exported here, and this install has "
                "no sentence-transformers/torch to export it at start: build the image with "
                "that model (Dockerfile, stage `model`: --build-arg EMBEDDING_MODEL=...) or "
                "install the `embed` extra",
            ) from e
        logger.info("%s: loading the model with sentence-transformers", e)
    return embedder_for(settings)


@lru_cache(maxsize=4)
def _load_export(
    cache_dir: str,
    model: str,
    device: str,
    choice: EncoderChoice,
    threads: int,
    intra_op_threads: int,
    batch_size: int,
) -> Embedder:
    cache = export_dir(cache_dir)
    export = read_export(cache)
    if export.model != model:
        packaged = "" if export.model else " (the packaged all-MiniLM-L6-v2)"
        raise ModelNotExportedError(cache, f"it holds EMBEDDING_MODEL={export.model!r}{packaged}")
    if device != "cpu" or choice == "torch":
        raise ModelNotExportedError(cache, f"EMBEDDING_DEVICE={device} / {choice} run torch")
    plan = plan_engines(choice)
    if plan.int8 and export.int8 is None:
        if choice != "auto":
            raise ModelNotExportedError(cache, f"{plan.why}, and the export has no int8 file")
        # The image ships fp32 only unless built with EXPORT_INT8 (68 MB more).
        no_int8 = f"{plan.why}, but no int8 export (python -m app.embedding --int8)"
        plan = replace(plan, int8=False, why=plan.why if plan.bf16 else no_int8)
    tokenizer = (cache / export.tokenizer).read_text(encoding="utf-8")
    max_len = export.max_seq_tokens + 2
    opener, bf16 = openers(tokenizer, max_len, threads, intra_op_threads, batch_size)
    # The probes recorded with the export, so the check holds whichever code reads it.
    reference = np.asarray(export.reference, dtype=np.float32)
    try:
        pick = pick_onnx(
            export.model_id,
            cache / export.fp32,
            cache / export.int8 if plan.int8 and export.int8 else None,
            opener,
            reference,
            f"{plan.why}; exported in {cache}",
            probes=export.probes,
            open_bf16=bf16 if plan.bf16 else None,
        )
    except Exception as e:  # ONNX Runtime's own errors: a damaged or foreign file
        raise ModelNotExportedError(cache, f"ONNX Runtime cannot run it: {e}") from e
    if pick is None or pick.onnx is None:
        raise ModelNotExportedError(cache, "its vectors do not match those recorded with it")
    return Embedder.of(None, pick, batch_size)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # readable by every user, as the ONNX files (onnx_export._atomic)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
