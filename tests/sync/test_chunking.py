"""Chunking in the model's own tokens, with the packaged tokenizer's truncation switched off."""

from __future__ import annotations

from typing import Any

from tokenizers import Tokenizer

from app.core.catalog import Product
from app.embedding import resolve_model_path
from app.sync.chunking import ProductChunker, signature_model
from app.sync.state import SyncCheckpoint
from tests.synctools import long_text


def _product(description: str, price: float = 10.0) -> Product:
    return Product(7, 1, "Trail Runner", description, "sports", "Stride", price)


def test_packaged_tokenizer_truncates_but_ours_does_not(embedder: Any) -> None:
    text = long_text("shoe", 12)
    packaged = Tokenizer.from_file(f"{resolve_model_path('')}/tokenizer.json")
    assert len(packaged.encode(text).ids) == 128  # the trap: silently capped
    assert len(embedder.tokenizer().encode(text).ids) > 300


def test_chunks_fit_the_budget_and_cover_the_whole_description(embedder: Any) -> None:
    tok = embedder.tokenizer()
    chunker = ProductChunker(tok, embedder.model_id, max_tokens=64, overlap_tokens=0)
    text = long_text("shoe", 12)
    chunks = chunker.chunk(_product(text))
    assert len(chunks) > 4
    for chunk in chunks:
        assert chunk.text.startswith("Trail Runner\n")
        assert len(tok.encode(chunk.text, add_special_tokens=False).ids) <= 64
    body = " ".join(c.text.split("\n", 1)[1] for c in chunks)
    assert body.split() == text.split()  # nothing dropped, nothing repeated (overlap 0)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))


def test_chunk_ids_are_keyed_by_content_not_price(embedder: Any) -> None:
    chunker = ProductChunker(embedder.tokenizer(), embedder.model_id, 64, 8)
    text = long_text("shoe", 4)
    a = chunker.chunk(_product(text, price=10.0))
    b = chunker.chunk(_product(text, price=99.0))
    c = chunker.chunk(_product(text + " One more sentence."))
    assert [x.point_id for x in a] == [x.point_id for x in b]
    assert [x.point_id for x in a][:-1] == [x.point_id for x in c][: len(a) - 1]
    assert a[-1].point_id != c[-1].point_id
    other_model = ProductChunker(embedder.tokenizer(), "another-model", 64, 8)
    assert other_model.chunk(_product(text))[0].point_id != a[0].point_id


def test_empty_description_still_indexes_the_name(embedder: Any) -> None:
    chunker = ProductChunker(embedder.tokenizer(), embedder.model_id, 64, 8)
    chunks = chunker.chunk(_product(""))
    assert [c.text for c in chunks] == ["Trail Runner"]


def test_a_description_that_fits_is_one_chunk_exactly_as_the_splitter_cuts_it(
    embedder: Any,
) -> None:
    # The chunker skips the splitter when the description fits (one tokenisation instead of
    # many): the chunks, hence the point ids, must be the splitter's own, at the boundary too.
    from semantic_text_splitter import TextSplitter

    tok = embedder.tokenizer()
    chunker = ProductChunker(tok, embedder.model_id, max_tokens=64, overlap_tokens=8)
    header_tokens = len(tok.encode("Trail Runner", add_special_tokens=False).ids)
    capacity = 64 - header_tokens - 1
    splitter = TextSplitter.from_huggingface_tokenizer(tok, capacity, overlap=8)
    words = long_text("shoe", 12).split()
    sizes = set()
    for n in range(1, len(words)):
        text = " ".join(words[:n])
        size = len(tok.encode(text, add_special_tokens=False).ids)
        if size > capacity + 3:
            break
        sizes.add(size)
        expected = [f"Trail Runner\n{piece}" for piece in splitter.chunks(text)]
        assert [c.text for c in chunker.chunk(_product(text))] == expected
    assert min(sizes) <= capacity < max(sizes)  # both sides of the boundary were checked


def test_the_model_is_read_back_from_a_signature_and_a_checkpoint() -> None:
    tok = Tokenizer.from_file(f"{resolve_model_path('')}/tokenizer.json")
    signature = ProductChunker(tok, "learned-encoder-0a1b+int8", 64, 8).signature
    assert signature_model(signature) == "learned-encoder-0a1b+int8"
    # A checkpoint from before KEY_FORMAT (and before `model_id` was recorded).
    old = "v2-name-header|all-MiniLM-L6-v2+int8|bm25-v1|64|8|p2-chunk-count"
    assert signature_model(old) == "all-MiniLM-L6-v2+int8"
    cp = SyncCheckpoint.from_dict({"completed": "1", "signature": old})
    assert cp is not None and cp.model == "all-MiniLM-L6-v2+int8"
    recorded = SyncCheckpoint.from_dict({"completed": "1", "signature": old, "model_id": "m"})
    assert recorded is not None and recorded.model == "m"
