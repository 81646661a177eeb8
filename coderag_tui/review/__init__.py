"""Code review context for a diff: the changes, what the index knows around each, packed into a budget.

    review = build_review(service, ReviewOptions(base="HEAD", max_tokens=8000))
    print(review.markdown())          # or review.to_json()

diff (git or a file) -> both sides parsed (sources) -> unit changes (changes) ->
index context per change (gather) -> token budget (pack) -> Markdown / JSON (render);
`ask.ask_review` streams a model's review of it.
"""

from coderag_tui.review.build import DEFAULT_BUDGET, Review, ReviewOptions, build_review
from coderag_tui.review.changes import FileSides, UnitChange, classify
from coderag_tui.review.diff import FileDiff, Hunk, parse_unified_diff

__all__ = [
    "DEFAULT_BUDGET",
    "FileDiff",
    "FileSides",
    "Hunk",
    "Review",
    "ReviewOptions",
    "UnitChange",
    "build_review",
    "classify",
    "parse_unified_diff",
]
