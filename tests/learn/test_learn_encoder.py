"""`python -m app.learn` on a tiny generated judged set: a loadable model folder, folds that
never leak, exports the service can load without exporting, the same result twice.

The real model is fine-tuned (a few steps on CPU); no dev data is read.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import re
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from app.core.config import Settings
from app.embedding.learned import encoder_embedder
from app.eval.folds import fold_of
from app.learn.__main__ import main
from app.learn.encoder import EncoderSettings, batches, examples
from app.learn.heldout import exact_dense, score_judged, score_queries
from app.learn.judgments import Folds, load_judgments
from app.learned import load_learned_model, verdict
from tests.fixtures.tables.make_tables import HERE
from tests.learn.tiny_judgments import write_tiny_judgments
from tests.live_server import ServerThread

FOLDS = 4
ARGS = ["--folds", str(FOLDS), "--batch-size", "8", "--max-steps", "4", "--no-ranker"]


def _train(tmp: Path, judgments: Path, name: str, *extra: str) -> dict[str, Any]:
    out = tmp / name
    argv = ["--judgments", str(judgments), "--out", str(out), "--cache-dir", str(tmp / "cache")]
    assert main(argv + ARGS + list(extra)) == 0
    manifest: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return manifest


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("learn")
    judgments = write_tiny_judgments(tmp / "judged")
    return tmp, judgments, _train(tmp, judgments, "model")


def test_the_manifest_records_data_folds_training_and_heldout_scores(
    trained: tuple[Path, Path, dict[str, Any]],
) -> None:
    tmp, judgments, manifest = trained
    assert manifest["format"] == 1
    assert manifest["base_model"] == "all-MiniLM-L6-v2"
    data = manifest["data"]
    assert (data["products"], data["queries"], data["judgments_count"]) == (32, 16, 96)
    assert data["fingerprint"] == load_judgments(judgments).fingerprint
    assert manifest["folds"]["k"] == FOLDS and sum(manifest["folds"]["queries"]) == 16
    encoder = manifest["encoder"]
    assert encoder["held_out_fold"] == 0 and encoder["steps"] == 4
    assert encoder["settings"]["seed"] == EncoderSettings().seed
    # Fold 0 is scored for today's service and the fine-tune; the others not at all.
    rows = manifest["heldout"]["folds"]
    assert sorted(rows[0]) == ["base", "fold", "learned_encoder", "queries"]
    assert all(sorted(r) == ["fold", "queries"] for r in rows[1:])
    summary = manifest["heldout"]["summary"]
    assert summary["folds"] == [0] and summary["queries"] == rows[0]["queries"]
    # Each gain with its spread over the queries: what `verdict` reads to warn.
    gain = summary["learned_service"] - summary["base_service"]
    assert summary["gain_service"] == pytest.approx(gain, abs=1e-4)
    assert summary["gain_service_se"] >= 0
    assert (verdict(summary) is None) == (summary["gain_service"] >= 0)
    assert manifest["run"]["peak_rss_mb"] > 0
    assert "ranker" not in manifest
    learned = load_learned_model(tmp / "model")
    assert learned.encoder_dir is not None and learned.ranker_dir is None
    assert learned.encoder_id == encoder["id"]


def test_the_encoder_never_trained_on_its_heldout_fold(
    trained: tuple[Path, Path, dict[str, Any]],
) -> None:
    _, judgments, manifest = trained
    judged = load_judgments(judgments)
    folds = Folds.split(judged.queries, FOLDS)
    held_out = folds.qids(0)
    train = folds.train_qids({0})
    assert held_out and train and not held_out & train
    assert held_out | train == {q.qid for q in judged.queries}
    assert manifest["encoder"]["training_queries"] == len(train)
    assert manifest["heldout"]["folds"][0]["queries"] == len(held_out)
    # No held-out query's text reaches the training pairs.
    texts = {p.id: p.name for p in judged.products}
    pairs = examples(judged, train, texts, EncoderSettings())
    held_texts = {q.query for q in judged.queries if q.qid in held_out}
    assert pairs and not {e.query for e in pairs} & held_texts
    # Folds are a function of the qid alone.
    assert all(folds.of[q] == fold_of(q, FOLDS) for q in folds.of)


def test_the_folder_loads_with_sentence_transformers_and_its_int8_export_agrees(
    trained: tuple[Path, Path, dict[str, Any]],
) -> None:
    from sentence_transformers import SentenceTransformer

    tmp, _, _ = trained
    learned = load_learned_model(tmp / "model")
    assert learned.encoder_dir is not None
    texts = ["cordless drill", "White garden hose\nA flexible water hose for the garden."]
    torch_vectors = SentenceTransformer(str(learned.encoder_dir)).encode(
        texts, normalize_embeddings=True
    )
    exports = sorted(p.name for p in learned.onnx_dir.iterdir())
    # int8 asked for explicitly: "auto" picks fp32 on a CPU without AVX2/VNNI/AMX.
    settings = Settings(_env_file=None, embedding_encoder="onnx-int8")
    embedder = encoder_embedder(learned.encoder_dir, learned.encoder_id, settings)
    # The service's engine choice found the training's exports: it exported nothing.
    assert sorted(p.name for p in learned.onnx_dir.iterdir()) == exports
    assert embedder.encoder == "onnx-int8"
    assert embedder.onnx is not None and embedder.onnx.model_path.parent == learned.onnx_dir
    vectors = embedder.embed(texts)
    assert float(np.min(np.sum(vectors * torch_vectors, axis=1))) >= 0.99


def test_the_same_seed_gives_the_same_model_and_scores(
    trained: tuple[Path, Path, dict[str, Any]],
) -> None:
    tmp, judgments, first = trained
    again = _train(tmp, judgments, "again")
    assert again["heldout"] == first["heldout"]
    assert again["encoder"]["id"] == first["encoder"]["id"]
    assert again["encoder"]["loss_first"] == first["encoder"]["loss_first"]


def test_a_model_that_ranks_worse_is_named_by_the_run_and_by_sync_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real fine-tune at a learning rate that wrecks the encoder, then the service serving
    it (LEARNED_MODEL, a real uvicorn over the committed `cow_aged` table): the run ends
    with the warning on stderr, and /sync/status carries it, not only the start-up log."""
    judgments = write_tiny_judgments(tmp_path / "judged")
    manifest = _train(tmp_path, judgments, "worse", "--learning-rate", "0.5")
    assert manifest["heldout"]["summary"]["gain_service"] < 0
    warning = load_learned_model(tmp_path / "worse").heldout_warning
    assert warning is not None and "ranks below today's service on" in warning
    assert f"warning: {warning}" in capsys.readouterr().err
    table = tmp_path / "cow_aged"
    shutil.copytree(HERE / "cow_aged", table)
    settings = Settings(
        hudi_table_path=str(table),
        data_dir=str(tmp_path / "data"),
        learned_model=str(tmp_path / "worse"),
        max_chunk_tokens=64,
        chunk_overlap_tokens=8,
        openai_api_key=None,
        api_key=None,
    )
    with ServerThread(settings) as server, httpx.Client(base_url=server.url, timeout=60) as c:
        deadline = time.monotonic() + 120
        while c.get("/ready").status_code != 200:
            assert time.monotonic() < deadline, c.get("/sync/status").text
            time.sleep(0.2)
        status = c.get("/sync/status").json()
    assert status["model"]["heldout_warning"] == warning


def test_both_measures_score_dense_as_the_catalog_search_does(
    trained: tuple[Path, Path, dict[str, Any]],
) -> None:
    """Neither measure searches the index for `dense`: the judged products by cosine, and
    the catalog's exact ranking from cached vectors, both score what the retriever's dense
    search gives when its top 100 holds the catalog (and its graph is exact)."""
    from app.embedding import embedder_for
    from app.eval.index import build_chunk_index, chunker_for
    from app.eval.ndcg import condensed_ndcg_at_k
    from app.eval.runner import ranked_ids
    from app.retrieval import Retriever

    _, judgments, _ = trained
    judged = load_judgments(judgments)
    # Half the products in several chunks (a description past one chunk's body), so a
    # product's best chunk is what ranks it.
    extra = "Sold with a manual, spare parts and a two year warranty; ships in a box. " * 4
    products = [
        dataclasses.replace(p, description=f"{p.description} {extra}") if p.id % 2 else p
        for p in judged.products
    ]
    judged = dataclasses.replace(judged, products=products)
    # fp32: int8 quantizes activations per batch, and the two measures batch differently;
    # close judged products then swap places (docs/troubleshooting.md, "int8 vectors depend").
    settings = Settings(
        _env_file=None, embedding_encoder="onnx-fp32", similarity_threshold=0.0, max_chunk_tokens=48
    )
    embedder = embedder_for(settings)
    chunker = chunker_for(settings, embedder)
    assert sum(len(chunker.chunk(p)) for p in products) > 1.4 * len(products)
    qids = [q.qid for q in judged.queries]
    store = build_chunk_index(judged.products, settings, embedder)
    try:
        dense = Retriever(embedder, store, settings.model_copy(update={"retrieval_mode": "dense"}))
        rankings = [ranked_ids(dense, 100, q.query) for q in judged.queries]
    finally:
        store.close()
    queries = [q.query for q in judged.queries]
    chunks = [(p.id, c.text) for p in products for c in chunker.chunk(p)]
    assert exact_dense(chunks, queries, embedder, settings) == rankings
    searched = {
        q.qid: condensed_ndcg_at_k(ranked, judged.qrels[q.qid], 10)
        for q, ranked in zip(judged.queries, rankings, strict=True)
    }
    only_judged = score_judged(judged, qids, embedder, settings, None, "judged")
    assert only_judged.per_query["dense"] == pytest.approx(searched)
    catalog = score_queries(judged, qids, embedder, settings, None, "catalog")
    assert catalog.per_query["dense"] == pytest.approx(searched)
    assert set(catalog.per_query["service"]) == set(qids)


def test_the_ranker_over_the_fine_tune_and_the_eval_use_its_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """With the ranker: it trains over the fine-tuned encoder's index (the one its held-out
    report built) and carries its cut; app.eval --model embeds with that encoder under its
    weights' id (a folder name such as "encoder" would be every fine-tune's vector-cache
    key)."""
    judgments = write_tiny_judgments(tmp_path / "judged")
    out, cache = tmp_path / "model", tmp_path / "cache"
    argv = ["--judgments", str(judgments), "--out", str(out), "--cache-dir", str(cache)]
    caplog.set_level(logging.INFO, logger="app.eval.index")
    assert main(argv + [a for a in ARGS if a != "--no-ranker"]) == 0
    # Two catalogs indexed: today's service and the fine-tune; the ranker opened the latter.
    indexed = [r for r in caplog.records if r.getMessage().startswith("indexed 32 products")]
    assert len(indexed) == 2
    manifest = json.loads((out / "manifest.json").read_text())
    encoder_id = manifest["encoder"]["id"]
    assert manifest["ranker"]["clean_folds"] == [0]
    assert (out / "ranker" / "cut.json").is_file()
    assert (out / "ranker" / "classifier.onnx").is_file()
    from app.eval.__main__ import main as eval_main

    capsys.readouterr()
    eval_args = ["--dataset", str(judgments), "--model", str(out), "--cache-dir", str(cache)]
    assert eval_main([*eval_args, "--folds", str(FOLDS), "--fold", "0"]) == 0
    printed = capsys.readouterr().out
    # The engine (`+int8` where `auto` picks it on this CPU) names the vector space too.
    engine = re.search(rf"model {re.escape(encoder_id)}(\+int8)?,", printed)
    assert engine, printed
    assert "P(relevant) <" in printed
    suffix = "_int8" if engine.group(1) else ""
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [f"all-MiniLM-L6-v2{suffix}.npz", f"{encoder_id}{suffix}.npz"]
    )


def test_hard_negatives_are_judged_irrelevant_and_batched_apart(tmp_path: Path) -> None:
    judged = load_judgments(write_tiny_judgments(tmp_path / "judged"))
    texts = {p.id: p.name for p in judged.products}
    train = {q.qid for q in judged.queries}
    # Off by default: pairs only.
    assert all(e.negative is None for e in examples(judged, train, texts, EncoderSettings()))
    settings = EncoderSettings(hard_negatives=True)
    triplets = examples(judged, train, texts, settings)
    assert triplets and all(e.negative is not None for e in triplets)
    irrelevant = {
        (q.query, texts[p])
        for q in judged.queries
        for p, g in judged.qrels[q.qid].items()
        if g <= settings.negative_share * judged.top_grade
    }
    assert all((e.query, e.negative) in irrelevant for e in triplets)
    # A batch is all triplets or all pairs (the loss takes one shape), never a text twice.
    mixed = triplets[:6] + examples(judged, train, texts, EncoderSettings())[6:]
    for batch in batches(mixed, 4, random.Random(0)):
        assert len({e.negative is None for e in batch}) == 1
        texts_in = [t for e in batch for t in (e.query, e.positive, e.negative) if t]
        assert len(texts_in) == len(set(texts_in))
