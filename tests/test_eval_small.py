"""A small retrieval eval on real code, runnable in CI (a few minutes on 2 cores).

The code of a PyPI sdist (downloaded at test time; bench/harness/eval_small.py) with every
docstring removed is indexed and embedded with the bundled model; each query is the first line
of a docstring, and the gold is the function, method or class it documented. We print file- and
function-level Acc@1/5/10 for bm25-only, vector-only and hybrid, and assert hybrid against the
baseline recorded in tests/data/eval_small_baseline.json (re-record with
`python -m tests.test_eval_small --record`, or both evals with `python -m bench.eval_languages
--variants windows --record`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench.harness import Unreachable
from bench.harness.eval_small import BASELINE, PACKAGE, VERSION, run_eval

MARGIN = 4.0  # points of Acc@k a change may lose before the test fails


@pytest.mark.slow
def test_eval_small(tmp_path: Path) -> None:
    try:
        scores, text, n = run_eval(tmp_path)
    except Unreachable as exc:
        pytest.skip(str(exc))
    print(f"\n{PACKAGE}=={VERSION}: {n} docstring queries over the code with docstrings removed\n{text}")
    assert n >= 50
    baseline = json.loads(BASELINE.read_text())
    assert baseline["package"] == f"{PACKAGE}=={VERSION}"
    for metric, value in baseline["scores"]["hybrid"].items():
        assert scores["hybrid"][metric] >= value - MARGIN, (metric, scores["hybrid"][metric], value)
    # fusing must not lose to either retriever alone at the function level
    for k in (5, 10):
        assert scores["hybrid"][f"func@{k}"] >= max(scores["bm25"][f"func@{k}"], scores["vector"][f"func@{k}"]) - 2.0


if __name__ == "__main__":  # record the baseline
    import tempfile

    if "--record" not in sys.argv:
        raise SystemExit("usage: python -m tests.test_eval_small --record")
    with tempfile.TemporaryDirectory() as d:
        scores, text, n = run_eval(Path(d))
    print(text)
    BASELINE.parent.mkdir(parents=True, exist_ok=True)
    BASELINE.write_text(json.dumps({"package": f"{PACKAGE}=={VERSION}", "queries": n, "scores": scores},
                                   indent=2) + "\n")
    print(f"recorded {BASELINE}")
