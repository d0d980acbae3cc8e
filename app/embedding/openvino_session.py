"""The fp32 export run by OpenVINO in bf16, for documents on a CPU with AMX.

On such a CPU (the `amx_bf16` flag) OpenVINO runs the export's matrix products in bf16 on
the AMX tiles: faster than ONNX Runtime's int8 export and closer to torch's vectors, so bf16
vectors share the fp32 vector space (no id suffix, unlike int8's `+int8`). Figures:
BENCHMARKS.md, "Bootstrap of a real catalog against torch".

Without AMX bf16 was never measured faster; the choice (app.embedding.choice) takes this
engine only where the flag is, and only when the `openvino` package imports.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import openvino

# The CPU flag bf16 is measured fast on (AMX); AVX512_BF16 alone was never measured here.
BF16_FLAG = "amx_bf16"


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None


class OpenVinoSession:
    """A compiled model as an OnnxEncoder `Session`: each calling thread runs its batch on
    its own infer request (a request is not thread-safe; `infer` releases the GIL);
    `threads` is the threads per batch."""

    def __init__(self, compiled: openvino.CompiledModel, threads: int) -> None:
        self._compiled = compiled
        self._local = threading.local()
        self.input_names = [i.get_any_name() for i in compiled.inputs]
        self.dim = int(compiled.outputs[0].get_partial_shape()[-1].get_length())
        self.threads = threads

    def run(self, feeds: dict[str, npt.NDArray[np.int64]]) -> npt.NDArray[np.float32]:
        request: Any = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        result = request.infer(feeds)
        # The request reuses its output buffer on the next call: copy it out.
        return np.array(result[0], dtype=np.float32, copy=True)


def open_openvino(path: Path, threads: int, streams: int) -> OpenVinoSession:
    """`path` (an ONNX file) compiled for this CPU in bf16: `streams` batches at once on
    `threads` threads in all (each stream threads // streams)."""
    import openvino as ov

    streams = max(1, streams)
    compiled = ov.Core().compile_model(
        str(path),
        "CPU",
        {
            "INFERENCE_PRECISION_HINT": "bf16",
            "NUM_STREAMS": str(streams),
            "INFERENCE_NUM_THREADS": str(max(threads, streams)),
            # The sync shares the process (and its cores) with request threads: no pinning.
            "ENABLE_CPU_PINNING": "NO",
        },
    )
    return OpenVinoSession(compiled, max(1, threads // streams))
