"""Request bodies of the HTTP API (docs/server.md), with `repos`/`repo` to choose repositories: pydantic
models, so that FastAPI validates them and describes them in /openapi.json."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from coderag_tui.models import SearchFilters

MAX_ID = 2**63 - 1  # ids and line numbers: what SQLite's integers hold (a larger one is refused: 422)
Text = Field(min_length=1, max_length=20_000)
Repos = Field(default=None, description="repository names (GET /index/status lists them); none: all")


class BuildBody(BaseModel):
    """Index (then embed) served repositories; a server indexes only what it was started with."""

    repos: list[str] | None = Repos
    rebuild: bool = False
    embed: bool = True


class Filters(BaseModel):
    language: str | None = None
    type: str | None = Field(default=None, description="a unit kind: function, method, class, ...")
    path_prefix: str | None = None

    def to_model(self) -> SearchFilters:
        return SearchFilters(language=self.language, path_prefix=self.path_prefix, kind=self.type)


class SearchBody(BaseModel):
    query: str = Text
    filters: Filters | None = None
    limit: int = Field(default=10, ge=1, le=200)
    include_context: bool = Field(default=False, description="add each result's code and neighbours")
    repos: list[str] | None = Repos
    files: bool = Field(default=False, description="rank files instead of code units")


class ContextBody(BaseModel):
    query: str = Text
    max_tokens: int | None = Field(default=None, ge=64, le=1_000_000)
    context_style: Literal["full"] = "full"
    strategy: Literal["relevance", "importance", "breadth", "depth"] = Field(
        default="relevance", description="which pieces fill the budget first (see `coderag context --strategy`)")
    repo: str | None = Field(default=None, description="none: the repository that matches best")
    repos: list[str] | None = Field(default=None, description="two or more (or [\"*\"]: all): one context "
                                    "from all of them under one budget, each path naming its repository")


class StructuralBody(BaseModel):
    type: Literal["calls", "called_by", "tested_by", "methods_of", "files_importing"]
    target: str = Field(min_length=1, max_length=2_000, description="a symbol name, or a path for files_importing")
    repos: list[str] | None = Repos
    limit: int = Field(default=200, ge=1, le=2_000)


class AskBody(BaseModel):
    question: str = Text
    conversation_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    repo: str | None = Field(default=None, description="none: the repository that matches best")
    repos: list[str] | None = Field(default=None, description="two or more (or [\"*\"]: all): one answer "
                                    "from the code of all of them; the first keeps the conversation")
    fresh: bool = Field(default=False, description="ask the model even when the answer cache has an answer")
    attachment: str = Field(default="", max_length=4 * 1024 * 1024,
                            description="text given with the question (a log, a traceback)")
    model: str | None = Field(default=None, max_length=1_000, description="one of the server's models "
                              "(`choice` in GET /models); none: the configured one")


Paths = Field(default=None, max_length=1_000, description="repository paths (files or folders); none: all")
ModelName = Field(default=None, max_length=1_000, description="one of the server's models (`choice` in GET "
                  "/models); none: the configured one")


class EmbedBody(BaseModel):
    repos: list[str] | None = Repos


class SummariesBody(BaseModel):
    """Summaries of one repository's units and files, made by the server's model."""

    repo: str | None = Field(default=None, description="none: the only one served")
    paths: list[str] | None = Paths
    everything: bool = Field(default=False, description="every unit, not only the budget's share with a "
                             "local model")
    model: str | None = ModelName


class DescriptionsBody(BaseModel):
    repo: str | None = Field(default=None, description="none: the only one served")
    paths: list[str] | None = Paths


# a revision as git names one (a branch, a tag, a commit, HEAD~2, main@{1}); never an option
REVISION = r"^[A-Za-z0-9_][A-Za-z0-9_./~^@{}+-]{0,199}$"


class ReviewBody(BaseModel):
    """A review of the served repository: its working tree against `base`, or a unified diff."""

    repo: str | None = Field(default=None, description="none: the only one served")
    base: str = Field(default="HEAD", pattern=REVISION, description="a revision of the server's git folder")
    diff: str | None = Field(default=None, max_length=4 * 1024 * 1024,
                             description="a unified diff to review instead (its paths in the repository)")
    diff_label: str = Field(default="", max_length=200)
    max_tokens: int | None = Field(default=None, ge=64, le=1_000_000)
    similar: int = Field(default=3, ge=0, le=20)
