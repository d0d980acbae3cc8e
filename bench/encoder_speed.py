"""Document encoder engines against sentence-transformers' torch on a real catalog's chunks.

    flock /tmp/bench.lock .venv/bin/python bench/encoder_speed.py \\
        --dataset /work/shared/eval/crowdflower-dev [--n 1500] [MODEL.onnx[:INTRA:PARALLEL] ...]

The sync's own chunk texts of DIR/products.jsonl, `--n` of them drawn with a fixed seed.
Each engine (the service's `auto` pick, then each ONNX file given, as the OnnxEncoder runs
it: INTRA threads per batch, PARALLEL batches at once, default 1:2) embeds them in calls
of `--slice`, round-robin with torch, so a change in load hits every engine alike. Prints
per engine: chunks/s, process CPU ms per chunk, the ratio to torch on both, and the cosine
of its vectors to torch's (min / mean). Progress with an ETA on stderr.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import Settings
from app.core.logging import configure_logging
from app.embedding import embedder_for, load_embedder
from app.embedding.onnx_encoder import OnnxEncoder, Vectors, open_session
from app.embedding.reference import max_seq_tokens, plain_tokenizer
from app.eval.data import load_products
from app.sync.chunking import ProductChunker
from app.sync.progress import Progress

logger = logging.getLogger("bench.encoder_speed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--n", type=int, default=1500, help="chunk texts drawn")
    parser.add_argument("--slice", type=int, default=250, help="chunks per embed call")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("models", nargs="*", help="ONNX files, each as MODEL[:INTRA:PARALLEL]")
    args = parser.parse_args()
    configure_logging("INFO")

    settings = Settings()
    service = embedder_for(settings)
    torch = load_embedder(
        settings.embedding_model, "cpu", settings.embedding_batch_size, encoder="torch"
    )
    chunker = ProductChunker(
        service.tokenizer(),
        service.model_id,
        min(settings.max_chunk_tokens, service.max_seq_tokens),
        settings.chunk_overlap_tokens,
    )
    products = load_products(args.dataset / "products.jsonl")
    texts = [c.text for p in products for c in chunker.chunk(p)]
    random.Random(args.seed).shuffle(texts)
    texts = texts[: args.n]

    engines: dict[str, Callable[[list[str]], Vectors]] = {
        "torch fp32": torch.embed,
        f"service: {service.encoder}": service.embed,
    }
    model = torch.model
    assert model is not None, "the torch baseline loads the model"
    for spec in args.models:
        path, *rest = spec.split(":")
        intra, parallel = (int(rest[0]), int(rest[1])) if rest else (1, 2)
        session = open_session(Path(path), intra, spinning=False)
        tokenizer = plain_tokenizer(model)
        encoder = OnnxEncoder(
            session,
            tokenizer,
            max_seq_tokens(model) + 2,
            settings.embedding_batch_size,
            Path(path),
            parallel=parallel,
        )
        engines[f"{Path(path).name} {intra}x{parallel}"] = encoder.embed
    for embed in engines.values():
        embed(texts[:64])  # warm-up: the first batch pays lazy init

    wall = dict.fromkeys(engines, 0.0)
    cpu = dict.fromkeys(engines, 0.0)
    out: dict[str, list[Vectors]] = {name: [] for name in engines}
    progress = Progress(logger, "encoders", len(texts))
    for start in range(0, len(texts), args.slice):
        part = texts[start : start + args.slice]
        for name, embed in engines.items():
            t0, c0 = time.perf_counter(), time.process_time()
            out[name].append(embed(part))
            wall[name] += time.perf_counter() - t0
            cpu[name] += time.process_time() - c0
        progress.advance(len(part))

    reference = np.concatenate(out["torch fp32"])
    print(f"{len(texts)} chunk texts of {args.dataset}, calls of {args.slice}")
    for name in engines:
        cos = np.sum(np.concatenate(out[name]) * reference, axis=1)
        ratio = wall["torch fp32"] / wall[name]
        cpu_ratio = cpu["torch fp32"] / cpu[name]
        print(
            f"{name:52s} {len(texts) / wall[name]:7.1f} chunks/s  "
            f"{1000 * cpu[name] / len(texts):6.2f} CPU ms/chunk  "
            f"x{ratio:.2f} torch (CPU x{cpu_ratio:.2f})  "
            f"cosine {cos.min():.4f} / {cos.mean():.4f}"
        )


if __name__ == "__main__":
    main()
