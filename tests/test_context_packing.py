"""How a context spends its budget: short gap markers that citations still read, and the split
between the primaries and what surrounds them."""

from __future__ import annotations

from coderag_tui.answering.citations import given_lines
from coderag_tui.config import ContextSettings
from coderag_tui.retrieval.packing import Candidate, pack, shares_for


def _big(start: int = 10, n: int = 400) -> Candidate:
    lines = [(start, "def big(a, b):")] + [(start + i, f"    step_{i}()") for i in range(1, n)]
    return Candidate("primary", "primary", "m.py", start, start + n - 1, "function big", 1.0, "python", lines,
                     head=1, focus=(start + 300, start + 305))


def test_a_shrunk_piece_marks_its_gaps_briefly_and_citations_read_them() -> None:
    piece = pack([_big()], 300, ContextSettings())[0]
    markers = [ln for ln in piece.text.splitlines() if ln.lstrip().startswith("⋯")]
    assert markers and all(len(m) <= len("⋯ 100-300 above") for m in markers)
    shown = {10 + int(ln.strip().removeprefix("step_").removesuffix("()")) for ln in piece.text.splitlines()
             if ln.strip().startswith("step_")} | {10}
    assert given_lines(piece) == shown  # the lines behind each marker are counted, not shown
    # a marker for lines an earlier piece shows says so
    shown_first = Candidate("primary", "primary", "m.py", 10, 60, "function a", 1.0, "python",
                            [(n, f"    a_{n}()") for n in range(10, 61)])
    overlapping = Candidate("neighbours", "caller", "m.py", 30, 80, "b calls a", 0.5, "python",
                            [(n, f"    a_{n}()") for n in range(30, 81)])
    caller = next(p for p in pack([shown_first, overlapping], 2000, ContextSettings()) if p.role == "caller")
    assert caller.text.splitlines()[0] == "⋯ 30-60 above"
    assert given_lines(caller) == set(range(61, 81))


def test_old_long_gap_markers_still_parse() -> None:
    from coderag_tui.models import ContextPiece

    text = "\n".join(["def f():", "    ⋯ (lines 2-9 left out)", "    return 1", "    ⋯ (line 11 shown above)",
                      "    x = 2"])
    assert given_lines(ContextPiece("m.py", 1, 12, "primary", "f", text, 0)) == {1, 10, 12}


def test_a_general_question_leaves_the_callers_and_outlines_a_third_of_the_budget() -> None:
    callers = [Candidate("neighbours", "caller", f"c{i}.py", 1, 25, f"c{i} calls big", 0.5 - i / 100, "python",
                         [(n, f"    call_{i}_{n}(big(1, 2))") for n in range(1, 26)], max_lines=25)
               for i in range(12)]
    outline = Candidate("extended", "parent", "m.py", 1, 900, "outline of m", 0.3, "python",
                        text="\n".join(f"def member_{i}(x):  # line {i}" for i in range(60)))
    for kind in ("general", "architecture"):
        pieces = pack([_big(n=2000), *callers, outline], 4000, shares_for(kind, ContextSettings()))
        around = sum(p.tokens for p in pieces if p.role != "primary")
        assert around >= 0.35 * 4000, kind
        assert any(p.role == "parent" for p in pieces), kind
