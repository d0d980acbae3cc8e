"""A learned model folder, made by `python -m app.learn`, as the service and the sync read it.

Layout (every part but the manifest optional; `LEARNED_MODEL` names the folder):

    MODEL_DIR/manifest.json   what was trained, from what data, and how it scored held out
    MODEL_DIR/encoder/        a sentence-transformers folder (the fine-tuned bi-encoder),
                              with its tokenizer and ONNX exports beside the weights
    MODEL_DIR/encoder/onnx/   its fp32 and int8 exports, named as app.embedding.choice names
                              them for `encoder_id` (so loading them exports nothing)
    MODEL_DIR/ranker/         the learned ranker: model.onnx (the LightGBM booster of
                              model.txt, run by ONNX Runtime), features.json (the feature
                              names in order), calibration.json (score -> P(relevant)); the
                              rest of it: app.ranking.model

`model_id` names the whole folder's content (the manifest's fingerprint): an index built
with one learned encoder is never read with another's query vectors. `encoder_id` names the
encoder's weights alone (manifest "encoder"."id"): the vector space, and the key of its
ONNX exports.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.errors import TerminalError

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
ONNX_DIR = "onnx"


class LearnedModelError(TerminalError):
    """LEARNED_MODEL names a folder that is not a usable learned model."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"learned model {path}: {reason}")
        self.path = str(path)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class LearnedModel:
    """A learned model folder whose manifest has been read and checked."""

    root: Path
    manifest: dict[str, Any]

    @property
    def model_id(self) -> str:
        """Short, stable id of this training run (the manifest's content)."""
        blob = json.dumps(self.manifest, sort_keys=True).encode()
        return "learned-" + hashlib.sha256(blob).hexdigest()[:12]

    @property
    def encoder_dir(self) -> Path | None:
        """The fine-tuned encoder's sentence-transformers folder, or None (base encoder)."""
        path = self.root / "encoder"
        return path if (path / "config.json").is_file() else None

    @property
    def encoder_id(self) -> str:
        """The fine-tuned encoder's vector space (a hash of its weights), or `model_id` for
        a manifest that does not name one."""
        encoder = self.manifest.get("encoder")
        found = encoder.get("id") if isinstance(encoder, dict) else None
        return str(found) if found else self.model_id

    @property
    def onnx_dir(self) -> Path:
        """Where the encoder's ONNX exports are: pass as the export cache (choose_encoder's
        `cache_dir`) with `encoder_id` as the model id."""
        return self.root / "encoder" / ONNX_DIR

    @property
    def heldout_warning(self) -> str | None:
        """`verdict` on the manifest's held-out summary: why serving this model may not help."""
        heldout = self.manifest.get("heldout")
        summary = heldout.get("summary") if isinstance(heldout, dict) else None
        return verdict(summary) if isinstance(summary, dict) else None

    @property
    def ranker_dir(self) -> Path | None:
        """The learned ranker's folder, or None (the service's fixed fusion)."""
        path = self.root / "ranker"
        # model.txt alone (a ranker trained before ONNX serving) is a ranker that
        # Ranker.load refuses with what to run, never a silent fall back to the fusion.
        return path if any((path / f).is_file() for f in ("model.txt", "model.onnx")) else None


def verdict(summary: dict[str, Any]) -> str | None:
    """A warning when the learned model ranks below today's service on the held-out queries,
    None otherwise: the manifest holds the figures, but a model that makes the ranking worse
    must not go into LEARNED_MODEL unnoticed."""
    gain, se = summary.get("gain_service"), summary.get("gain_service_se")
    if gain is None or gain >= 0:
        return None
    queries = summary.get("queries", 0)
    if se is None:  # a manifest from before the standard error was recorded
        spread = ""
    elif -gain < 2 * se:
        spread = (
            f" ± {se:.4f}; within twice its standard error: these queries cannot tell the two apart"
        )
    else:
        spread = f" ± {se:.4f}; beyond twice its standard error"
    return (
        f"the learned model ranks below today's service on {queries} held-out queries "
        f"(held-out nDCG {summary['learned_service']:.4f} against "
        f"{summary['base_service']:.4f}, gain {gain:+.4f}{spread}); serving it "
        "(LEARNED_MODEL) is not expected to improve the ranking"
    )


def load_learned_model(path: str | Path) -> LearnedModel:
    """Read and check MODEL_DIR/manifest.json.

    Raises:
        LearnedModelError: no such folder, no manifest, or one this code cannot read.
    """
    root = Path(path)
    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise LearnedModelError(root, f"no {MANIFEST} (made by `python -m app.learn`)") from e
    except (OSError, ValueError) as e:
        raise LearnedModelError(root, f"unreadable {MANIFEST}: {e}") from e
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise LearnedModelError(root, f"{MANIFEST} is not format {MANIFEST_FORMAT}")
    return LearnedModel(root=root, manifest=manifest)
