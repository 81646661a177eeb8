"""Questions that ask for files: "which file handles X", "what module implements Y", "where in
the codebase is Z configured", "which files would I change to ...".

Their answer is a list of files, so they are answered by the file ranking (filerank.py through
`Searcher.search_files`), which adds up a file's evidence, rather than by unit search. "Where is
X defined" asks for one unit and stays a unit question; so do the structural questions the
router answers from the graph ("which files import X").
"""

from __future__ import annotations

import re

from coderag_tui.retrieval import router

_FILES = r"(?:files?|modules?|source\s+files?|packages?|folders?|directories|directory|scripts?)"
_FILE_QUESTION = re.compile(
    r"\b(?:"
    rf"(?:which|what)\s+(?:(?!(?:is|are|was|were|does|do|did|the|a|an)\b)\w+\s+)?{_FILES}\b"
    rf"|in\s+(?:which|what)\s+(?:(?!(?:is|are|the)\b)\w+\s+)?{_FILES}\b"
    r"|where\s+in\s+(?:the\s+)?(?:code\s*base|code|source(?:\s+tree|\s+code)?|repo(?:sitory)?|project)\b"
    rf"|(?:files?|modules?)\s+(?:would|should|do|does|must|need\s+to)\s+(?:i|we|you|one)\b"
    r")",
    re.I,
)
# "what does the file X do" or "what is in module X" ask about one file's content: a unit
# question about that file, not a ranking.
_ABOUT_ONE = re.compile(
    r"^(?:what\s+(?:does|is\s+in|is)\s+(?:the\s+)?(?:file|module)\s+\S+"
    r"|(?:what|which)\s+(?:\w+\s+)?(?:files?|modules?)\s+(?:import|imports|depend|depends)\b)",
    re.I,
)


def is_file_question(question: str) -> bool:
    """The question asks which files (modules, packages) hold something."""
    q = " ".join(question.split())
    if not q or "\n" in question.strip() or len(q.split()) > 60:
        return False  # a pasted report or snippet is not a file question, whatever it quotes
    if router.classify(q).kind in (router.STRUCTURAL, router.SYMBOL, router.SIMILARITY):
        return False
    if _ABOUT_ONE.match(q):
        return False
    return bool(_FILE_QUESTION.search(q))
