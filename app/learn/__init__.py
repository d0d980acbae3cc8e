"""Learning from the shop's judgments: `python -m app.learn` (see its module docstring).

judgments.py reads a judged set and splits it into folds by query; encoder.py fine-tunes
the bi-encoder; heldout.py scores rankings per fold; manifest.py writes what was done.
The folder it writes is read by app.learned.
"""
