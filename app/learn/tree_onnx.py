"""A LightGBM model as an ONNX tree ensemble, which the service runs on ONNX Runtime.

    python -m app.learn.tree_onnx RANKER_DIR      (a ranker trained before this existed)

Training needs LightGBM; serving does not: the service already runs ONNX Runtime for its
encoder, and its `TreeEnsemble` (ai.onnx.ml opset 5, double splits and leaf weights) gives
LightGBM's raw scores bit for bit, faster on a request's few dozen rows than LightGBM's
Python `predict`, and keeps LightGBM and SciPy out of the API image (BENCHMARKS.md).

The conversion reads LightGBM's text format (`Booster.save_model`) itself, so it needs the
`onnx` package (the `embed` extra, as training does) and not LightGBM. What it keeps exact:
- a split sends `x <= threshold` left, as LightGBM's numerical decision does;
- NaN follows LightGBM: to the default side where the split learnt one for missing values,
  else it reads as 0.0 (so it goes left exactly when 0.0 <= threshold);
- a one-leaf tree (LightGBM's first round on constant data) becomes a split whose two
  sides are that leaf, since an ONNX tree's root must be a node.
What it refuses (our rankers never train them): categorical splits, zero-as-missing, linear
trees, several classes or trees per round, random-forest averaging.
A binary model's sigmoid is not in the graph: its metadata names it (`objective`,
`sigmoid`) and `app.ranking.trees` applies it as LightGBM does.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ML_DOMAIN, ML_OPSET = "ai.onnx.ml", 5
# ONNX Runtime 1.20 (our oldest pin) reads IR 10; onnx writes the newest it knows.
IR_VERSION = 10
_CATEGORICAL, _DEFAULT_LEFT = 1, 2
_MISSING_ZERO, _MISSING_NAN = 1, 2  # LightGBM's missing types; 0 is none


class UnsupportedModelError(ValueError):
    """A LightGBM model this converter cannot express exactly."""


@dataclass
class _Nodes:
    """The ensemble's arrays, in TreeEnsemble's attribute layout."""

    roots: list[int] = field(default_factory=list)
    features: list[int] = field(default_factory=list)
    splits: list[float] = field(default_factory=list)
    true_ids: list[int] = field(default_factory=list)
    true_leafs: list[int] = field(default_factory=list)
    false_ids: list[int] = field(default_factory=list)
    false_leafs: list[int] = field(default_factory=list)
    nan_true: list[int] = field(default_factory=list)
    leaf_weights: list[float] = field(default_factory=list)


def _fields(block: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in block.splitlines() if "=" in line)


def _numbers(value: str, kind: type[int] | type[float]) -> list:  # type: ignore[type-arg]
    return [kind(v) for v in value.split()]


def _add_tree(nodes: _Nodes, tree: dict[str, str], number: int) -> None:
    if int(tree.get("num_cat", "0")) or int(tree.get("is_linear", "0")):
        raise UnsupportedModelError(f"tree {number}: categorical or linear")
    leaves = _numbers(tree["leaf_value"], float)
    node0, leaf0 = len(nodes.features), len(nodes.leaf_weights)
    nodes.roots.append(node0)
    nodes.leaf_weights.extend(leaves)
    if int(tree["num_leaves"]) == 1:
        nodes.features.append(0)
        nodes.splits.append(0.0)
        for ids, leafs in (
            (nodes.true_ids, nodes.true_leafs),
            (nodes.false_ids, nodes.false_leafs),
        ):
            ids.append(leaf0)
            leafs.append(1)
        nodes.nan_true.append(1)
        return
    thresholds = _numbers(tree["threshold"], float)
    decisions = _numbers(tree["decision_type"], int)
    nodes.features.extend(_numbers(tree["split_feature"], int))
    nodes.splits.extend(thresholds)
    # LightGBM's child index: >= 0 an internal node of this tree, < 0 leaf ~child.
    for key, ids, leafs in (
        ("left_child", nodes.true_ids, nodes.true_leafs),
        ("right_child", nodes.false_ids, nodes.false_leafs),
    ):
        for child in _numbers(tree[key], int):
            ids.append(node0 + child if child >= 0 else leaf0 + ~child)
            leafs.append(int(child < 0))
    for threshold, decision in zip(thresholds, decisions, strict=True):
        missing = (decision >> 2) & 3
        if decision & _CATEGORICAL or missing == _MISSING_ZERO:
            raise UnsupportedModelError(f"tree {number}: decision type {decision}")
        if missing == _MISSING_NAN:
            nodes.nan_true.append(int(bool(decision & _DEFAULT_LEFT)))
        else:  # LightGBM reads NaN as 0.0 where the split learnt no side for it
            nodes.nan_true.append(int(threshold >= 0.0))


def lightgbm_text_to_onnx(text: str) -> bytes:
    """A serialized ONNX model of one LightGBM model (its `save_model` text): input `X`
    (n, features) double, output `Y` (n, 1) double, the raw score.

    Raises:
        UnsupportedModelError: a model this cannot convert exactly (see the module doc).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    head, _, rest = text.partition("\nTree=")
    header = _fields(head)
    per_round = int(header.get("num_class", "1")), int(header.get("num_tree_per_iteration", "1"))
    if per_round != (1, 1):
        raise UnsupportedModelError("several classes or trees per round")
    if "average_output" in head.split():
        raise UnsupportedModelError("random-forest averaging")
    n_features = int(header["max_feature_idx"]) + 1
    objective = header.get("objective", "").split()
    nodes = _Nodes()
    blocks = ("Tree=" + rest).split("end of trees", 1)[0].split("\nTree=")
    for number, block in enumerate(b for b in blocks if b.strip()):
        _add_tree(nodes, _fields(block), number)
    if not nodes.roots:
        raise UnsupportedModelError("no trees")

    def doubles(values: list[float]) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(values, dtype=np.float64))

    ensemble = helper.make_node(
        "TreeEnsemble",
        ["X"],
        ["Y"],
        domain=ML_DOMAIN,
        tree_roots=nodes.roots,
        nodes_featureids=nodes.features,
        nodes_splits=doubles(nodes.splits),
        nodes_modes=numpy_helper.from_array(np.zeros(len(nodes.features), dtype=np.uint8)),
        nodes_truenodeids=nodes.true_ids,
        nodes_trueleafs=nodes.true_leafs,
        nodes_falsenodeids=nodes.false_ids,
        nodes_falseleafs=nodes.false_leafs,
        nodes_missing_value_tracks_true=nodes.nan_true,
        leaf_targetids=[0] * len(nodes.leaf_weights),
        leaf_weights=doubles(nodes.leaf_weights),
        n_targets=1,
        aggregate_function=1,  # SUM: a boosted model's score is its trees' sum
        post_transform=0,  # NONE: the raw score, as LightGBM's raw_score
    )
    graph = helper.make_graph(
        [ensemble],
        "lightgbm",
        [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [None, n_features])],
        [helper.make_tensor_value_info("Y", TensorProto.DOUBLE, [None, 1])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(ML_DOMAIN, ML_OPSET)], ir_version=IR_VERSION
    )
    sigmoid = next((o.split(":", 1)[1] for o in objective[1:] if o.startswith("sigmoid:")), "")
    helper.set_model_props(
        model, {"objective": objective[0] if objective else "", "sigmoid": sigmoid}
    )
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def convert_file(model_txt: Path, out: Path) -> None:
    """Write `out` (ONNX) from a LightGBM text model file."""
    out.write_bytes(lightgbm_text_to_onnx(model_txt.read_text(encoding="utf-8")))


def main(argv: list[str] | None = None) -> int:
    from app.ranking.model import BOOSTER_FILES

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("ranker_dir", type=Path, help="MODEL_DIR/ranker")
    args = parser.parse_args(argv)
    for text_file, onnx_file in BOOSTER_FILES:
        source = args.ranker_dir / text_file
        if source.is_file():
            convert_file(source, args.ranker_dir / onnx_file)
            print(f"{source} -> {args.ranker_dir / onnx_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
