"""A trained tree ensemble as the service runs it: ONNX Runtime over the ONNX file that
training writes beside LightGBM's (app.learn.tree_onnx), so the API needs no LightGBM."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import numpy.typing as npt

from app.embedding.onnx_encoder import cpu_session


class TreeModel:
    """One ensemble; `predict` is what LightGBM's `predict` gives (the sigmoid of a binary
    model's raw score, the raw score otherwise). Thread-safe: ONNX Runtime's `run` is."""

    def __init__(self, path: Path) -> None:
        """Raises ValueError: not an ensemble this converter wrote (or unreadable)."""
        try:
            # A request scores a few dozen rows: one thread, and no pool spinning beside it.
            self._session = cpu_session(path, 1, spinning=False)
        except Exception as e:  # ONNX Runtime raises its own exception types
            raise ValueError(f"{path.name}: {e}") from e
        inputs = self._session.get_inputs()
        if len(inputs) != 1 or not isinstance(inputs[0].shape[1], int):
            raise ValueError(f"{path.name}: not a tree ensemble of fixed width")
        self.num_features: int = inputs[0].shape[1]
        props = self._session.get_modelmeta().custom_metadata_map
        # LightGBM's binary output: 1 / (1 + exp(-sigmoid x raw)).
        self._sigmoid = (
            float(props.get("sigmoid") or 1.0) if props.get("objective") == "binary" else None
        )

    def predict(self, matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        if len(matrix) == 0:
            return np.zeros(0)
        x = np.ascontiguousarray(matrix, dtype=np.float64)
        raw = np.asarray(self._session.run(None, {"X": x})[0], dtype=np.float64)[:, 0]
        if self._sigmoid is None:
            return raw
        # libm's exp, as LightGBM's C++ calls it: numpy's vector exp differs in the last bit.
        scale = self._sigmoid
        return np.fromiter((1.0 / (1.0 + math.exp(-scale * v)) for v in raw), np.float64, len(raw))
