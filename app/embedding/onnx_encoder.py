"""Sentence vectors from an ONNX export: tokenize, run the encoder, mean-pool, normalise.

Used for documents (the sync: big batches, all cores) and for queries (one short text per
request: one thread, no spinning). The two differ in their session options and in how many
batches run at once. The export runs on ONNX Runtime (`open_session`) or, for documents on
a CPU with AMX, on OpenVINO in bf16 (app.embedding.openvino_session): both are a `Session`.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Encoding, Tokenizer

logger = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]


def available_cores() -> int:
    """Cores this process may run on (a container's cpuset, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class Session(Protocol):
    """What OnnxEncoder runs: the encoder's last hidden state of a batch of token ids."""

    input_names: list[str]
    dim: int
    threads: int  # per batch

    def run(self, feeds: dict[str, npt.NDArray[np.int64]]) -> npt.NDArray[np.float32]: ...


class OrtSession:
    """An ONNX Runtime session as a `Session` (`run` is thread-safe and releases the GIL)."""

    def __init__(self, session: onnxruntime.InferenceSession) -> None:
        self._session = session
        self.input_names = [i.name for i in session.get_inputs()]
        self.dim = int(session.get_outputs()[0].shape[-1])
        self.threads = int(session.get_session_options().intra_op_num_threads)

    def run(self, feeds: dict[str, npt.NDArray[np.int64]]) -> npt.NDArray[np.float32]:
        return np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)


def cpu_session(path: Path, threads: int, *, spinning: bool) -> onnxruntime.InferenceSession:
    """An ONNX Runtime CPU session with `threads` intra-op threads (any ONNX file: the
    encoder's exports, the ranker's trees).

    Spinning: ORT's worker threads busy-wait after each op for the next one. That buys a
    little latency and costs a core per thread for as long as they spin, also between
    requests; a server sharing its cores with the sync and the HTTP loop turns it off.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def open_session(path: Path, threads: int, *, spinning: bool) -> OrtSession:
    """An encoder export as a `Session` (`cpu_session`'s options)."""
    return OrtSession(cpu_session(path, threads, spinning=spinning))


class OnnxEncoder:
    """Equal to sentence-transformers' mean-pooled, normalised output of the same weights.

    Texts are sorted by length and batched, so a batch pads to similar lengths instead of
    to its longest member; the output comes back in input order.

    `parallel` batches run at once, each from its own Python thread on the one session (its
    `run` is thread-safe and releases the GIL). With a 1-thread session that is
    one batch per core: measured on 2 cores (BENCHMARKS.md, issue 11), 12% more chunks per
    CPU-second than one batch at a time on 2 intra-op threads, which wait for each other
    at every op of a small model.
    """

    def __init__(
        self,
        session: Session,
        tokenizer: Tokenizer,
        max_len: int,
        batch_size: int,
        model_path: Path,
        *,
        parallel: int = 1,
    ) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self.max_len = max_len
        self._tokenizer.enable_truncation(max_len)
        self._tokenizer.no_padding()
        self._names = session.input_names
        self.batch_size = batch_size
        self.model_path = model_path
        self.dim = session.dim
        self.intra_op_threads = session.threads
        self.parallel = max(1, parallel)
        # Threads that ONNX Runtime keeps busy in a large embed() call.
        self.threads = self.intra_op_threads * self.parallel
        self._pool = (
            ThreadPoolExecutor(self.parallel, thread_name_prefix="onnx-batch")
            if self.parallel > 1
            else None
        )

    def plain_tokenizer(self) -> Tokenizer:
        """A copy of this encoder's tokenizer without truncation (for counting tokens)."""
        from tokenizers import Tokenizer

        tok = Tokenizer.from_str(self._tokenizer.to_str())
        tok.no_truncation()
        return tok

    def embed(self, texts: list[str]) -> Vectors:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(texts)
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        batches = [
            order[start : start + self.batch_size]
            for start in range(0, len(order), self.batch_size)
        ]
        if self._pool is None or len(batches) == 1:
            for rows in batches:
                out[rows] = self._run([encodings[i] for i in rows])
            return out
        # Longest first: the batches that end the call are the short ones, so the core
        # that runs out of work first waits the least for the other. In ascending order
        # the longest batch ran last, alone (a cost model on the bench's chunks: 256-chunk
        # calls on 2 cores 8.5% over ideal, longest first 2.1%; BENCHMARKS.md issue 11).
        batches.reverse()
        runs = self._pool.map(lambda rows: self._run([encodings[i] for i in rows]), batches)
        for rows, vectors in zip(batches, runs, strict=True):
            out[rows] = vectors
        return out

    def _run(self, encodings: list[Encoding]) -> Vectors:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            types[row, :n] = e.type_ids
            mask[row, :n] = 1
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run({n: arrays[n] for n in self._names})
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)
