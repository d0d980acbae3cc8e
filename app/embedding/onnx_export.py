"""Export the model's transformer to ONNX once, and quantize that export to int8 once.

Only the encoder is exported (token ids -> last hidden state); tokenization, mean pooling
and normalisation stay in Python (app.embedding.onnx_encoder), so the ONNX vectors are
sentence-transformers' own. The export is traced with eager attention and then fused by
ONNX Runtime's BERT optimizer (one Attention op per layer, embeddings and skip layer norms
fused); the SDPA trace has a masking subgraph (Where, IsNaN) the fuser does not match.
Files are cached in `cache_dir`, keyed by model, torch version and recipe, and written
atomically: concurrent starters never load half a file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def exportable(model: SentenceTransformer) -> bool:
    """Transformer -> mean Pooling -> (Normalize): the layout the ONNX encoder reproduces."""
    modules = list(model)
    names = [type(m).__name__ for m in modules]
    if names[:2] != ["Transformer", "Pooling"] or any(n != "Normalize" for n in names[2:]):
        return False
    # sentence-transformers 6 names it `pooling_mode` ("mean"); the start-up probe
    # comparison catches any other difference anyway.
    return getattr(modules[1], "pooling_mode", None) == "mean"


def export_fp32(model: SentenceTransformer, model_name: str, cache_dir: Path) -> Path:
    """The float32 export (~2 s the first time), cached."""
    import torch

    # Bump the recipe whenever the export below changes: a cached older file would be reused.
    recipe = f"{model_name}|{torch.__version__}|eager-fused"
    key = hashlib.sha256(recipe.encode()).hexdigest()[:12]
    path = cache_dir / f"{model_name.replace('/', '--')}-{key}.onnx"
    if path.is_file():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    encoder: Any = model[0].auto_model

    class _Hidden(torch.nn.Module):  # type: ignore[misc]  # torch is Any to mypy (pyproject)
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state

    sample = model.tokenizer(["hello world"], return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    attention = encoder.config._attn_implementation
    with _atomic(path) as tmp, torch.inference_mode():
        encoder.set_attn_implementation("eager")
        try:
            # The TorchScript exporter (dynamo=False): the dynamo one needs onnxscript.
            torch.onnx.export(
                _Hidden().eval(),
                tuple(sample[n] for n in INPUTS),
                tmp,
                input_names=list(INPUTS),
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        finally:
            encoder.set_attn_implementation(attention)  # torch itself keeps its fast path
        fused = _fuse(tmp, encoder.config)
    logger.info("exported %s to %s (fused: %s)", model_name, path, fused)
    return path


def _fuse(path: str, config: Any) -> str:
    """Fuse the BERT subgraphs of the export at `path` in place; returns what was fused.

    opt_level 0: only the fusions, no ONNX Runtime graph rewrites baked in for this CPU
    (the session applies its own at load). A layout it does not know stays unfused.
    """
    from onnxruntime.transformers.optimizer import optimize_model

    fused = optimize_model(
        path,
        model_type="bert",
        num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size),
        opt_level=0,
    )
    fused.save_model_to_file(path)
    counts = fused.get_fused_operator_statistics()
    return ", ".join(f"{n} {c}" for n, c in counts.items() if c) or "nothing"


def int8_path(fp32: Path) -> Path:
    """Where `quantize_int8` puts the int8 export of `fp32` (it may not be there)."""
    # Bump the suffix whenever quantize_int8's recipe changes: an older file would be reused.
    return fp32.with_name(fp32.stem + "-int8v3.onnx")


def quantize_int8(fp32: Path) -> Path:
    """Dynamic int8 quantisation of the fp32 export (weights int8, activations per batch).

    Dynamic, not static: no calibration set to keep in step with the catalog. MatMuls
    only, per channel, with layer 0 and the first layers' FFN output projections in fp32
    (their GELU inputs carry the outliers): the recipe closest to torch of those measured
    (docs/decisions/onnx-encoders.md).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    path = int8_path(fp32)
    if path.is_file():
        return path
    graph = onnx.load(str(fp32), load_external_data=False).graph
    keep_fp32 = keep_in_fp32([n.name for n in graph.node if n.op_type == "MatMul"])
    with _atomic(path) as tmp:
        quantize_dynamic(
            fp32,
            tmp,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            nodes_to_exclude=keep_fp32,
            # The fused export's ops (Attention, SkipLayerNormalization) are outside ONNX's
            # shape inference, so their outputs have no type; they are all float.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    logger.info("quantized %s to int8 (%d MatMuls kept fp32): %s", fp32.name, len(keep_fp32), path)
    return path


# BERT-style exports name them /encoder/encoder/layer.<i>/output/dense/MatMul (the
# attention's own output projection is .../attention/output/dense).
_LAYER = re.compile(r"layer\.(\d+)/")
_FFN_OUTPUT = re.compile(r"layer\.(\d+)/output/dense/")


def keep_in_fp32(matmuls: list[str]) -> list[str]:
    """Layer 0's MatMuls and the FFN outputs of the first half of the layers (none for an
    unknown layout: the start-up probe then decides whether plain int8 is close enough)."""
    layers = 1 + max((int(m.group(1)) for n in matmuls if (m := _LAYER.search(n))), default=-1)
    keep = []
    for name in matmuls:
        layer = _LAYER.search(name)
        ffn_out = _FFN_OUTPUT.search(name)
        if (layer and layer.group(1) == "0") or (
            ffn_out and int(ffn_out.group(1)) < (layers + 1) // 2
        ):
            keep.append(name)
    return keep


@contextmanager
def _atomic(path: Path) -> Iterator[str]:
    """A temporary file next to `path`, moved onto it when the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o644)  # mkstemp's 0600 kept other users out (the image's `app`)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
