"""The summary prompts: one system prompt, one user prompt per kind (a parent's gives its parts' summaries)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from coderag_tui.store.descriptions import StoredSummary

SYSTEM_PROMPT = """You are a code documentation expert. Write concise summaries for a RAG system
that helps developers find and understand code.

Your summaries will be:
1. Embedded as vectors for semantic search
2. Shown to LLMs as context for coding tasks
3. Used by developers to quickly understand unfamiliar code

Guidelines:
- Describe WHAT and WHY, not HOW (implementation details)
- Use terminology developers would search for
- Mention inputs, outputs, side effects, error conditions
- Keep it concise: 2-4 sentences for functions, 3-6 for classes/files
- Include the code's role in the broader system when apparent
- Never start with "This function..." - just describe what it does"""

FUNCTION_PROMPT = """Write a summary for this {language} function.

Name: {name}
Signature: {signature}
File: {file_path}
{caller_context}

```{language}
{code}
```

Summary:"""

CLASS_PROMPT = """Write a summary for this {language} class.

Name: {name}
File: {file_path}
{inheritance}

Methods:
{method_overview}

```{language}
{code}
```

Summary:"""

FILE_PROMPT = """Write a summary for this {language} file.

Path: {file_path}

Exports:
{exports_overview}

Internal functions/classes:
{internal_overview}

Imports:
{imports}

Used by: {used_by}

Summary:"""

FOLDER_PROMPT = """Write a summary for this folder of a code repository.

Path: {path}

Files:
{files_overview}

Summary:"""


def clean(text: str, limit: int = 700) -> str:
    """The model's answer as one paragraph, without a leading label or quotes."""
    text = re.sub(r"^\s*(\*\*)?summary(\*\*)?\s*:\s*", "", text.strip(), flags=re.I)
    text = " ".join(text.replace("```", " ").split()).strip("\"' ")
    if len(text) > limit:
        cut = text[:limit]
        end = cut.rfind(". ")
        text = cut[: end + 1] if end > limit // 2 else cut.rstrip() + "…"
    return text


def child_digest(children: Iterable[StoredSummary | None]) -> str:
    parts = [f"{s.key}\n{s.text}" for s in children if s is not None]
    return hashlib.sha1("\n\n".join(sorted(parts)).encode("utf-8", "replace")).hexdigest()[:16]
