"""`python -m app.learn --judgments DIR --out MODEL_DIR`: learn the shop from its judgments.

Steps, each logged with progress and an ETA:
1. read DIR (products.jsonl, queries.jsonl, qrels.tsv), fingerprint it, split its queries
   into --folds folds by a hash of the qid;
2. fine-tune the encoder on the queries of every fold but --holdout-fold and score it on
   that fold (with --report-folds: one fine-tune per fold, each scored on its own fold);
   with --refit, the shipped encoder is then trained again on every query (its held-out
   figures are those of its twin above, same settings, one fold fewer);
3. score today's service (packaged encoder, the settings' fusion) on the same folds;
4. train the ranker (app.learn.ranker, when installed and not --no-ranker);
5. write MODEL_DIR (app.learned's layout) with a manifest of all of it; the folder appears
   whole or not at all.

No held-out figure comes from a query a trained component saw: each fold's learned-encoder
figure is from an encoder that never trained on that fold.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.core.config import Settings, get_settings
from app.core.logging import configure_logging
from app.embedding import Embedder, embedder_for, resolve_model_path
from app.embedding.choice import INT8_SUFFIX
from app.embedding.learned import encoder_embedder
from app.eval.index import chunker_for
from app.eval.vector_cache import DEFAULT_CACHE_DIR
from app.learn.encoder import EncoderSettings, first_chunk_texts, train_encoder
from app.learn.heldout import Scores, score
from app.learn.judgments import Folds, Judgments, JudgmentsError, load_judgments
from app.learn.manifest import build_manifest, peak_rss_mb, write_manifest
from app.learned import verdict

logger = logging.getLogger(__name__)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    d = EncoderSettings()
    p = argparse.ArgumentParser(prog="python -m app.learn", description=__doc__.split("\n")[0])
    p.add_argument("--judgments", type=Path, required=True, help="products/queries/qrels folder")
    p.add_argument("--out", type=Path, required=True, help="the model folder to write")
    p.add_argument("--folds", type=int, default=5, help="k of the k-fold split by query")
    p.add_argument("--holdout-fold", type=int, default=0, help="the fold the encoder never sees")
    p.add_argument(
        "--report-folds",
        action="store_true",
        help="one fine-tune per fold, each scored on its own fold (k x the training time)",
    )
    p.add_argument(
        "--refit", action="store_true", help="ship an encoder trained on every query (2x time)"
    )
    p.add_argument(
        "--measure",
        choices=["catalog", "judged"],
        default="catalog",
        help="held-out scores: the whole catalog through the service's retriever (dense and "
        "fusion), or dense over each query's judged products only (a fraction of the cost)",
    )
    p.add_argument("--no-encoder", action="store_true", help="keep the packaged encoder")
    p.add_argument("--no-ranker", action="store_true", help="train no ranker")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--learning-rate", type=float, default=d.learning_rate)
    p.add_argument("--max-steps", type=int, default=d.max_steps, help="0: every batch")
    p.add_argument("--max-seq-length", type=int, default=d.max_seq_length)
    p.add_argument(
        "--positive-share", type=float, default=d.positive_share, help="x top grade: relevant"
    )
    p.add_argument(
        "--negative-share", type=float, default=d.negative_share, help="x top grade: irrelevant"
    )
    p.add_argument(
        "--hard-negatives",
        action="store_true",
        help="a judged-irrelevant product beside each pair (default: in-batch negatives only)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads while training (0: torch's default; 1 on a crowded machine, where "
        "two threads wait for each other at every op)",
    )
    p.add_argument(
        "--cache-dir", type=Path, default=DEFAULT_CACHE_DIR, help="dense vectors of the catalog"
    )
    args = p.parse_args(argv)
    if not 0 <= args.holdout_fold < args.folds:
        p.error(f"--holdout-fold must be in 0..{args.folds - 1}")
    return args


def _encoder_settings(args: argparse.Namespace) -> EncoderSettings:
    return EncoderSettings(
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        positive_share=args.positive_share,
        negative_share=args.negative_share,
        hard_negatives=args.hard_negatives,
        max_seq_length=args.max_seq_length,
        max_steps=args.max_steps,
        seed=args.seed,
    )


def run(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """Train into a staging folder beside --out, then put it in place; returns the manifest."""
    started = time.monotonic()
    load_start = os.getloadavg()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    judgments = load_judgments(args.judgments)
    folds = Folds.split(judgments.queries, args.folds)
    logger.info(
        "judgments %s: %d products, %d judged queries in %d folds, fingerprint %s",
        judgments.root,
        len(judgments.products),
        len(judgments.queries),
        folds.k,
        judgments.fingerprint[:12],
    )
    base = embedder_for(settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{args.out.name}.", dir=args.out.parent))
    # The shipped encoder's catalog index, built for its held-out report and searched again
    # by the ranker rather than indexed twice.
    indexes = tempfile.TemporaryDirectory(prefix="learn-index-")
    shared_index = Path(indexes.name) / "shipped"
    try:
        # Training first: the baseline's catalog vectors may meanwhile land in the cache.
        encoder_report, learned = (
            ({}, {})
            if args.no_encoder
            else _encoders(args, settings, judgments, folds, base, stage, shared_index)
        )
        # Only the folds the fine-tune was scored on: a base figure beside no learned one is
        # search time for nothing.
        scored = folds.of if not learned else {q for f in learned for q in folds.qids(f)}
        base_scores = score(
            args.measure, judgments, scored, base, settings, args.cache_dir, "today's service"
        )
        encoder_dir = stage / "encoder" if not args.no_encoder else None
        ranker_report = _ranker(
            args,
            settings,
            judgments,
            folds,
            encoder_dir,
            stage,
            shared_index if shared_index.exists() else None,
        )
        manifest = build_manifest(
            measure=args.measure,
            judgments=judgments,
            folds=folds,
            base_model=base.model_id.removesuffix(INT8_SUFFIX),  # the model, not its engine
            base_scores=base_scores,
            learned_scores=learned,
            encoder=encoder_report,
            ranker=ranker_report,
            run={
                "seconds": round(time.monotonic() - started, 1),
                "peak_rss_mb": peak_rss_mb(),
                "load_at_start": [round(x, 2) for x in load_start],
                "load_at_end": [round(x, 2) for x in os.getloadavg()],
                "cores": os.cpu_count(),
                "torch_threads": args.threads or "default",
                "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            },
        )
        write_manifest(stage, manifest)
        _put_in_place(stage, args.out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    finally:
        indexes.cleanup()
    return manifest


def _encoders(
    args: argparse.Namespace,
    settings: Settings,
    judgments: Judgments,
    folds: Folds,
    base: Embedder,
    stage: Path,
    shared_index: Path,
) -> tuple[dict[str, Any], dict[int, Scores]]:
    """Fine-tune per measured fold; the shipped encoder ends in stage/encoder, and its
    catalog index (when its held-out report builds one) in `shared_index`."""
    texts = first_chunk_texts(judgments.products, chunker_for(settings, base))
    train_settings = _encoder_settings(args)
    measured = range(folds.k) if args.report_folds else [args.holdout_fold]
    learned: dict[int, Scores] = {}
    reports: dict[str, Any] = {}
    for fold in measured:
        keep = fold == args.holdout_fold and not args.refit
        folder = stage / "encoder" if keep else stage / f".encoder-fold-{fold}"
        trained = train_encoder(
            resolve_model_path(settings.embedding_model),
            judgments,
            folds.train_qids({fold}),
            texts,
            folder,
            train_settings,
        )
        embedder = encoder_embedder(folder, trained.encoder_id, settings)
        learned[fold] = score(
            args.measure,
            judgments,
            folds.qids(fold),
            embedder,
            settings,
            args.cache_dir,
            f"fold {fold}",
            index_dir=shared_index if keep else None,
        )
        reports[str(fold)] = {**trained.report, "held_out_fold": fold}
        if not keep:
            shutil.rmtree(folder)
    if args.refit:
        trained = train_encoder(
            resolve_model_path(settings.embedding_model),
            judgments,
            set(folds.of),
            texts,
            stage / "encoder",
            train_settings,
        )
        shipped = {**trained.report, "held_out_fold": None}
    else:
        shipped = reports[str(args.holdout_fold)]
    return {
        **shipped,
        "measured_twins": reports if args.report_folds or args.refit else {},
    }, learned


def _ranker(
    args: argparse.Namespace,
    settings: Settings,
    judgments: Judgments,
    folds: Folds,
    encoder_dir: Path | None,
    stage: Path,
    index_dir: Path | None,
) -> dict[str, Any] | None:
    """The ranker's manifest section, or None (--no-ranker: an encoder-only model)."""
    if args.no_ranker:
        return None
    from app.learn.ranker import train_ranker

    # With a fine-tuned encoder only its held-out fold is clean for the ranker too: the
    # encoder trained on every other fold's queries (with --refit, on all of them).
    holdout = None if encoder_dir is None else args.holdout_fold
    report: dict[str, Any] = train_ranker(
        judgments.root,
        encoder_dir,
        stage,
        folds.k,
        args.seed,
        settings,
        holdout=holdout,
        cache_dir=args.cache_dir,
        index_dir=index_dir,
    )
    report["clean_folds"] = (
        list(range(folds.k)) if encoder_dir is None else ([] if args.refit else [args.holdout_fold])
    )
    return report


def _put_in_place(stage: Path, out: Path) -> None:
    """Replace `out` by the staged folder (a reader sees the old folder or the new one)."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
    stage.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    settings = get_settings()
    configure_logging(settings.log_level)
    try:
        manifest = run(args, settings)
    except JudgmentsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    summary = manifest["heldout"]["summary"]
    print(json.dumps({"out": str(args.out), "summary": summary, "run": manifest["run"]}, indent=1))
    if warning := verdict(summary):
        print(f"warning: {warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
