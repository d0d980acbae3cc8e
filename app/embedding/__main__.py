"""`python -m app.embedding [--stamp TEXT] [--int8]`: make the ONNX exports the service
would make at its first start (document and query encoders, as EMBEDDING_* and
QUERY_ENCODER choose), in MODEL_CACHE_DIR, and the export.json that lets the service and
the sync run them without torch (app.embedding.exported).

./scripts/bootstrap.sh runs it once per install, so the first service start and every test
process find the exports cached: on a fresh clone each one otherwise exported its own
(fp32 export + int8 quantisation + probe checks, ~20-35 s of a loaded 2-core box). The API
image runs it at build: its final stage has no torch to export with.

--stamp TEXT  do nothing when MODEL_CACHE_DIR/.exported was written with the same TEXT and
              the same settings and its files are all still there (bootstrap passes the
              hash of uv.lock and the export code); record them after exporting.
--int8        also the int8 export where this CPU would not run it (an image may run on
              a VNNI CPU, where EMBEDDING_ENCODER=auto picks it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.core.config import Settings, get_settings
from app.core.logging import configure_logging

STAMP = ".exported"


def stamp_key(settings: Settings, stamp: str, int8: bool = False) -> str:
    """What the exports depend on besides the code and the locked versions in `stamp`."""
    return "|".join(
        [
            stamp,
            settings.embedding_model,
            settings.embedding_device,
            settings.embedding_encoder,
            settings.query_encoder,
            "int8" if int8 else "",
        ]
    )


def up_to_date(cache: Path, key: str) -> bool:
    """MODEL_CACHE_DIR/.exported records `key` and every file it lists exists."""
    try:
        recorded = json.loads((cache / STAMP).read_text())
    except (OSError, ValueError):
        return False
    files = recorded.get("files")
    return (
        recorded.get("key") == key
        and isinstance(files, list)
        and all((cache / str(name)).is_file() for name in files)
    )


def record(cache: Path, key: str) -> None:
    """Write MODEL_CACHE_DIR/.exported: `key` and every export in the cache.

    Every export, not only the files run: an int8 start also needs the fp32 export it was
    quantized from (export_fp32 is called first); and export.json with its tokenizer.
    """
    names = sorted(p.name for p in (*cache.glob("*.onnx"), *cache.glob("*.json")))
    cache.mkdir(parents=True, exist_ok=True)
    (cache / STAMP).write_text(json.dumps({"key": key, "files": names}) + "\n")


def export(settings: Settings, int8: bool = False) -> list[Path]:
    """Load the model as the service does; returns the ONNX files its encoders run (and
    export.json when the documents run on ONNX: the service then needs no torch)."""
    from app.embedding.choice import export_dir, wants_int8
    from app.embedding.exported import write_export
    from app.embedding.model import embedder_for
    from app.embedding.onnx_query import build_onnx_query_encoder

    embedder = embedder_for(settings)
    files = [] if embedder.onnx is None else [embedder.onnx.model_path]
    if settings.query_encoder == "onnx":
        query = build_onnx_query_encoder(embedder, settings.model_cache_dir)
        if query is not None and query.model_path not in files:
            files.append(query.model_path)
    if embedder.onnx is not None:
        int8 = int8 or wants_int8(settings.embedding_encoder)[0]
        cache = export_dir(settings.model_cache_dir)
        files.append(write_export(embedder, settings.embedding_model, cache, int8=int8))
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m app.embedding", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--stamp", default="", help="skip when the cache was made with TEXT")
    parser.add_argument("--int8", action="store_true", help="also int8 where unused here")
    args = parser.parse_args(argv)
    settings = get_settings()
    configure_logging(settings.log_level)
    cache = Path(settings.model_cache_dir)
    key = stamp_key(settings, args.stamp, args.int8)
    if args.stamp and up_to_date(cache, key):
        return 0
    print(f"exporting the embedding model to ONNX in {cache}")
    files = export(settings, args.int8)
    if not files:
        print("no ONNX export used (torch encoders): nothing cached")
    for path in files:
        print(f"cached {path}")
    if args.stamp:
        record(cache, key)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
