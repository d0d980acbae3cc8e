"""app.eval: the nDCG arithmetic on a hand-computed case, and the CLI on the demo set."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from app.eval.__main__ import main
from app.eval.data import load_qrels
from app.eval.metrics import dcg, ndcg_at_k


def test_ndcg_matches_a_hand_computed_example() -> None:
    judged = {1: 3.0, 2: 2.0, 3: 1.0}
    # Ranking 2, 9 (unjudged), 1: gains 3, 0, 7 at log2 ranks 1, log2(3), 2.
    got = 3 / 1 + 0 / math.log2(3) + 7 / 2
    ideal = 7 / 1 + 3 / math.log2(3) + 1 / 2
    assert dcg([2, 0, 3]) == pytest.approx(got)
    assert ndcg_at_k([2, 9, 1], judged, k=10) == pytest.approx(got / ideal)
    assert ndcg_at_k([1, 2, 3], judged) == pytest.approx(1.0)
    # Only the first k count, and a query with nothing relevant scores 0.
    assert ndcg_at_k([9, 1], judged, k=1) == 0.0
    assert ndcg_at_k([1], {1: 0.0}) == 0.0


def test_qrels_reader_rejects_a_malformed_line(tmp_path: Path) -> None:
    bad = tmp_path / "qrels.tsv"
    bad.write_text("q1\t1\t3\nq1 2 3\n")
    with pytest.raises(ValueError, match=":2: expected 3"):
        load_qrels(bad)


def test_eval_on_the_demo_set_is_no_worse_than_the_baseline(
    capsys: pytest.CaptureFixture[str], embedder: object
) -> None:
    assert main([]) == 0
    printed = capsys.readouterr().out.splitlines()
    out = dict(line.rsplit(None, 1) for line in printed if "nDCG@10" in line)
    ours, baseline = float(out["nDCG@10 chunked+grouped"]), float(out["nDCG@10 whole-text dense"])
    assert ours > 0.9 and baseline > 0.9
    # Measured 0.9522 vs 0.9522: chunking and grouping cost nothing (the bar).
    assert ours >= baseline
    # Query understanding costs the 30 judged queries nothing (none states a constraint).
    assert float(out["nDCG@10 understood"]) >= float(out["nDCG@10 as written"]) == ours
    # The labelled constraint set: parse accuracy, and no product outside a stated budget.
    report = {line[:25].strip(): line[25:].strip() for line in printed}
    assert report["constraint queries"] == "56"
    right, total = report["parse accuracy"].split("(")[1].rstrip(")").split("/")
    assert int(total) == 56 and int(right) >= 55  # measured 55/56
    assert report["products outside budget"].startswith("0 of ")
