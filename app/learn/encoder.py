"""Fine-tune the bi-encoder on judged (query, product) pairs, save it, export it to ONNX.

The loss is sentence-transformers' MultipleNegativesRankingLoss: each query must pick its
judged-relevant product out of the batch's other products (in-batch negatives) and, with
`hard_negatives` and where the query has one, a product judged irrelevant for it (a hard
negative: the shop's own search showed it for that query, which is why it was judged). Off
by default: on Home Depot they moved nothing and cost a third text per step (BENCHMARKS.md,
"Learning"). Grades are read relative to the set's top grade: a pair is a positive at >=
`positive_share` of it and a hard negative at <= `negative_share` (Home Depot 0..2: >= 1.67
and <= 0.67; CrowdFlower 0..3: 3 and 0-1). Unjudged products are never used as negatives:
Home Depot judges ~6 of 54,667 products per query, so an unjudged top candidate is as
likely a missed match as a wrong one.

A product is embedded as the sync embeds it: its first chunk's text (name, then the start of
the description). The loop is a plain torch loop over the loss module (sentence-transformers'
Trainer needs `datasets` and `accelerate`, which the service does not ship), seeded, logging
progress with an ETA.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.embedding.onnx_export import export_fp32, exportable, quantize_int8
from app.learn.judgments import Judgments
from app.learned import ONNX_DIR
from app.sync.progress import Progress

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from torch import Tensor

    from app.sync.chunking import ProductChunker

logger = logging.getLogger(__name__)


# One forward pads a column to its longest text; length-sorted slices pad less for the same
# loss (docs/learning.md has the step times; more slices cost more than they save).
LENGTH_SLICES = 4


@dataclass(frozen=True, slots=True)
class EncoderSettings:
    """What a fine-tune depends on besides the data (recorded in the manifest)."""

    epochs: int = 1
    batch_size: int = 64
    learning_rate: float = 2e-5
    warmup_share: float = 0.1
    # MultipleNegativesRankingLoss' scale (1 / temperature): its default.
    scale: float = 20.0
    positive_share: float = 0.8
    negative_share: float = 0.35
    hard_negatives: bool = False
    # Tokens read per text while training (queries and titles are far shorter; long
    # descriptions are cut, as the chunker would cut them at 200).
    max_seq_length: int = 128
    max_steps: int = 0  # 0: every batch of every epoch
    seed: int = 13


@dataclass(frozen=True, slots=True)
class Example:
    query: str
    positive: str
    negative: str | None


@dataclass(frozen=True, slots=True)
class TrainedEncoder:
    """A saved fine-tune: its folder, the id its vectors go by, and what training did."""

    path: Path
    encoder_id: str
    report: dict[str, Any]


def examples(
    judgments: Judgments,
    train_qids: set[str],
    product_text: dict[int, str],
    settings: EncoderSettings,
) -> list[Example]:
    """One example per judged-relevant pair of a training query, with a hard negative when
    the query has a product judged irrelevant (they take turns, seeded)."""
    rng = random.Random(settings.seed)
    top = judgments.top_grade
    out: list[Example] = []
    for q in judgments.queries:
        if q.qid not in train_qids:
            continue
        grades = judgments.qrels[q.qid]
        positives = sorted(p for p, g in grades.items() if g >= settings.positive_share * top)
        negatives = sorted(p for p, g in grades.items() if g <= settings.negative_share * top)
        rng.shuffle(negatives)
        for n, pid in enumerate(positives):
            if pid not in product_text:
                continue
            neg = negatives[n % len(negatives)] if settings.hard_negatives and negatives else None
            out.append(
                Example(
                    q.query,
                    product_text[pid],
                    product_text.get(neg) if neg is not None else None,
                )
            )
    return out


def batches(items: list[Example], size: int, rng: random.Random) -> list[list[Example]]:
    """Shuffled batches in which no query or product text appears twice (a second copy
    would be scored as a negative of its own query), triplets and pairs kept apart (the
    loss takes one shape per batch), none under a quarter of `size`."""
    out: list[list[Example]] = []
    for group in (
        [e for e in items if e.negative is not None],
        [e for e in items if e.negative is None],
    ):
        pending = group[:]
        rng.shuffle(pending)
        while pending:
            batch: list[Example] = []
            seen: set[str] = set()
            deferred: list[Example] = []
            for e in pending:
                texts = {e.query, e.positive, e.negative or ""} - {""}
                if len(batch) < size and not texts & seen:
                    batch.append(e)
                    seen |= texts
                else:
                    deferred.append(e)
            out.append(batch)
            pending = deferred
    # A query with many more positives than the rest ends as a tail of one-query batches
    # (CrowdFlower: ~23 per query, up to 60): no in-batch negatives, a loss of ~0. Dropped.
    out = [b for b in out if len(b) >= max(2, size // 4)]
    rng.shuffle(out)
    return out


def first_chunk_texts(products: Iterable[Any], chunker: ProductChunker) -> dict[int, str]:
    """product id -> the text of its first chunk, as the sync embeds it."""
    return {p.id: chunker.chunk(p)[0].text for p in products}


def train_encoder(
    base_path: str,
    judgments: Judgments,
    train_qids: set[str],
    product_text: dict[int, str],
    out_dir: Path,
    settings: EncoderSettings,
) -> TrainedEncoder:
    """Fine-tune `base_path` on the training queries' pairs; save to `out_dir` with ONNX
    exports (fp32, int8) in `out_dir/onnx`, named as the service's export cache names them."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers import get_linear_schedule_with_warmup

    random.seed(settings.seed)
    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    items = examples(judgments, train_qids, product_text, settings)
    if not items:
        raise ValueError("no judged-relevant pairs among the training queries")
    plan = [b for _ in range(settings.epochs) for b in batches(items, settings.batch_size, rng)]
    if settings.max_steps:
        plan = plan[: settings.max_steps]
    model = SentenceTransformer(base_path, device="cpu")
    full_length = int(model.max_seq_length or 256)
    model.max_seq_length = min(settings.max_seq_length, full_length)
    loss = MultipleNegativesRankingLoss(model, scale=settings.scale)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    schedule = get_linear_schedule_with_warmup(
        optimizer, int(settings.warmup_share * len(plan)), len(plan)
    )
    triplets = sum(1 for e in items if e.negative is not None)
    used = sum(len(b) for b in plan)
    logger.info(
        "encoder: %d pairs (%d with a hard negative) from %d queries; %d in %d steps of <= %d",
        len(items),
        triplets,
        len(train_qids),
        used,
        len(plan),
        settings.batch_size,
    )
    started = time.monotonic()
    progress = Progress(logger, "encoder training (steps)", len(plan), every_s=15.0)
    losses: list[float] = []
    model.train()
    for batch in plan:
        columns = [[e.query for e in batch], [e.positive for e in batch]]
        if batch[0].negative is not None:
            columns.append([e.negative or "" for e in batch])
        queries = model(model.preprocess(columns[0]))["sentence_embedding"]
        products = [_embed_by_length(model, column) for column in columns[1:]]
        value = loss.compute_loss_from_embeddings([queries, *products], None)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(float(value.detach()))
        progress.advance(1)
    model.eval()
    model.max_seq_length = full_length
    seconds = time.monotonic() - started
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save(str(out_dir))
    encoder_id = weights_id(out_dir)
    exports = export_onnx(model, encoder_id, out_dir / ONNX_DIR)
    tail = losses[-max(1, len(losses) // 10) :]
    report = {
        "id": encoder_id,
        "base_model": base_path,
        "settings": asdict(settings),
        "pairs": len(items),
        "pairs_with_hard_negative": triplets,
        "pairs_trained": used,
        "training_queries": len(train_qids),
        "steps": len(plan),
        "train_seconds": round(seconds, 1),
        "loss_first": round(losses[0], 4),
        "loss_last_tenth": round(sum(tail) / len(tail), 4),
        "onnx": {name: str(path.relative_to(out_dir)) for name, path in exports.items()},
    }
    return TrainedEncoder(out_dir, encoder_id, report)


def _embed_by_length(model: SentenceTransformer, texts: list[str]) -> Tensor:
    """The texts' embeddings (with gradients), in order, from LENGTH_SLICES forwards over
    the texts sorted by length: each slice pads to its own longest text, not the batch's.
    The embeddings are the same (attention and mean pooling skip padding)."""
    import torch

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    size = -(-len(texts) // LENGTH_SLICES)
    parts = [
        model(model.preprocess([texts[i] for i in order[start : start + size]]))[
            "sentence_embedding"
        ]
        for start in range(0, len(texts), size)
    ]
    back = torch.empty(len(order), dtype=torch.long)
    back[torch.tensor(order)] = torch.arange(len(order))
    return torch.cat(parts)[back]


def weights_id(folder: Path) -> str:
    """The id a fine-tune's vectors go by: a hash of its weights (and nothing else, so the
    same encoder under a retrained ranker keeps its index)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin")):
        digest.update(path.read_bytes())
    return "learned-encoder-" + digest.hexdigest()[:12]


def export_onnx(model: SentenceTransformer, encoder_id: str, onnx_dir: Path) -> dict[str, Path]:
    """The fp32 and int8 exports under the names app.embedding.choice looks up for
    `encoder_id` in `onnx_dir`, so a service pointed there finds them and exports nothing."""
    if not exportable(model):
        logger.warning("encoder: layout not exportable as plain mean-pool; no ONNX exports")
        return {}
    fp32 = export_fp32(model, encoder_id, onnx_dir)
    return {"fp32": fp32, "int8": quantize_int8(fp32)}
