"""Learning from the shop's judgments: `python -m app.learn` (see its module docstring).

judgments.py reads a judged set and splits it into folds by query; encoder.py fine-tunes
the bi-encoder; ranker.py trains the learned ranker, cut.py chooses its relevance cut and
tree_onnx.py converts its trees for serving; heldout.py scores rankings per fold;
manifest.py writes what was done. The folder it writes is read by app.learned.
"""
