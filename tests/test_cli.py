"""The command line, like git and ripgrep: unknown commands, options on either side of the
command, one way to name the repository, --json and -n everywhere, checked filters, exit
codes 0/1/2, questions from stdin, 80 columns, and repository text shown, never obeyed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coderag_tui.cli import base
from coderag_tui.cli.main import build_parser, main
from coderag_tui.textsafe import is_safe, safe_line, safe_text
from tests.helpers.loopback import Loopback, openai_sse
from tests.helpers.terminal import run_on_a_terminal

ESC_NAME = "name\x1b[31mRED.py"
LONG_DIR = "src/" + "/".join(["a_rather_long_package_name_for_width_tests"] * 3)

FILES: dict[str, str | bytes] = {
    "shop/cart.py": '''from shop.tax import apply_tax


class ShoppingCart:
    """A cart of items."""

    def total(self):
        return apply_tax(sum(self.items))
''',
    "shop/tax.py": '''def apply_tax(amount):
    """Tax owed on an amount."""
    return amount * 1.2
''',
    ESC_NAME: 'def red_alert():\n    return "\x1b]52;c;cGF5bG9hZA==\x07 \x1b[2J"\n',
    f"{LONG_DIR}/module_with_a_long_name.py": '''def compute_the_total_price_of_every_item_in_the_shopping_cart_including_taxes(cart, rate):
    """Sum every item of the cart and add the tax that applies to the sum of them all."""
    return apply_tax(sum(cart)) * rate


def caller_of_the_long_function_with_a_name_that_is_long_too(cart):
    return compute_the_total_price_of_every_item_in_the_shopping_cart_including_taxes(cart, 1)
''',
}


@pytest.fixture
def repo(make_repo: Callable[..., Path], tmp_path: Path) -> tuple[Path, list[str]]:
    """An indexed fixture repository and the options that name it and its index."""
    root = make_repo(FILES)
    common = ["--repo", str(root), "--db", str(tmp_path / "index.db")]
    assert main(["index", "--no-embed", *common]) == 0
    return root, common


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def cli(args: list[str], stdin: str | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    """A real run of the installed entry point; stdin is /dev/null unless text is given."""
    return subprocess.run([sys.executable, "-m", "coderag_tui", *args], input=stdin, text=True,
                          capture_output=True, timeout=300,
                          stdin=subprocess.DEVNULL if stdin is None else None, **kw)


# --------------------------------------------------------------------------- commands


def test_unknown_command_names_the_closest_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["serach", "foo"], capsys)
    assert code == 2 and out == ""
    assert err == "coderag: error: unknown command 'serach' (did you mean 'search'?)\n"
    code, _, err = run(["frobnicate"], capsys)
    assert code == 2 and err.startswith("coderag: error: unknown command 'frobnicate' (see `coderag --help`)")
    code, _, err = run(["--repo", ".", "symbl", "x"], capsys)
    assert code == 2 and "did you mean 'symbol'?" in err
    code, out, _ = run(["help", "map"], capsys)
    assert code == 0 and out.startswith("usage: coderag map")


def test_a_path_or_a_url_opens_the_app(tmp_path: Path) -> None:
    (tmp_path / "serach").mkdir()  # an existing folder wins over a near-miss of a command
    for target in ("serach", str(tmp_path), "https://example.invalid/owner/repo.git", "./not-there"):
        out = cli([target], cwd=tmp_path)
        assert out.returncode == 2 and "the app needs a terminal" in out.stderr, (target, out.stderr)
        assert "unknown command" not in out.stderr


def test_global_options_before_or_after_the_command(repo: tuple[Path, list[str]],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root, common = repo
    outputs = []
    for args in (["status", "--json", *common], [*common, "status", "--json"],
                 ["--json", *common, "status"], ["status", str(root), "--json", *common[2:]]):
        code, out, err = run(args, capsys)
        assert code == 0, (args, err)
        outputs.append(json.loads(out))
    assert all(o == outputs[0] for o in outputs) and outputs[0]["files"] == 4
    code, _, err = run(["status", str(root / "shop"), *common], capsys)
    assert code == 2 and "two repositories given" in err


def test_every_command_that_acts_on_a_repository_takes_it_the_same_way() -> None:
    parser = build_parser()
    subs = next(a for a in parser._actions if a.dest == "command").choices
    positional = {name for name, p in subs.items() if any(a.dest == "repo_path" for a in p._actions)}
    assert {"index", "status", "watch", "mcp", "tui"} <= positional
    for name, p in subs.items():
        options = {o for a in p._actions for o in a.option_strings}
        assert {"--repo", "--config", "--db"} <= options, name
        if name not in ("tui", "mcp"):  # they print no results: the app, and a protocol on stdout
            assert "--json" in options, f"{name} takes no --json"
    help_text = parser.format_help()
    assert "before or after the command" in help_text and "0 results, 1 no results, 2 error" in help_text


def test_one_name_for_the_result_count(repo: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    _, common = repo
    for flag in ("-n", "--limit", "-k"):
        code, out, _ = run(["search", "tax", flag, "1", "--json", *common], capsys)
        assert code == 0 and len(json.loads(out)) == 1, flag
        code, out, _ = run(["symbol", "apply", flag, "1", "--json", *common], capsys)
        assert code == 0 and len(json.loads(out)) == 1, flag
    parser = build_parser()
    subs = next(a for a in parser._actions if a.dest == "command").choices
    search_help = subs["search"].format_help()
    assert "-n N, --limit N" in search_help and not re.search(r"(?<![-\w])-k\b", search_help)
    code, _, err = run(["search", "tax", "-n", "0", *common], capsys)
    assert code == 2 and "must be at least 1" in err


def test_filter_values_are_checked(repo: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    _, common = repo
    code, out, err = run(["search", "tax", "--kind", "functoin", *common], capsys)
    assert (code, out) == (2, "")
    assert err == "coderag: error: unknown kind 'functoin' (did you mean 'function'?)\n"
    code, _, err = run(["search", "tax", "--lang", "pyhton", "--json", *common], capsys)
    assert code == 2 and err == "coderag: error: unknown language 'pyhton' (did you mean 'python'?)\n"
    code, _, err = run(["search", "tax", "--kind", "zzzz", *common], capsys)
    assert code == 2 and "unknown kind 'zzzz'" in err and "function" in err
    code, out, _ = run(["search", "tax", "--kind", "Function", "--lang", "Python", "--json", *common], capsys)
    assert code == 0 and {h["kind"] for h in json.loads(out)} == {"function"}
    # a valid kind that nothing has is "no results", not an error
    code, out, _ = run(["search", "tax", "--kind", "trait", "--json", *common], capsys)
    assert (code, json.loads(out)) == (1, [])


# --------------------------------------------------------------------------- exit codes


def test_exit_codes_results_none_errors(repo: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    _, common = repo
    for args in (["search", "apply_tax"], ["symbol", "ShoppingCart"], ["callers", "apply_tax"],
                 ["callees", "ShoppingCart.total"], ["map"], ["context", "apply_tax"]):
        for fmt in ([], ["--json"]):
            code, out, err = run([*args, *fmt, *common], capsys)
            assert code == 0 and out.strip(), (args, fmt, err)
    for args in (["search", "zzqqxxvv"], ["symbol", "zzqqxxvv"], ["callers", "zzqqxxvv"]):
        code, out, err = run([*args, *common], capsys)
        assert code == 1 and out == "" and err.strip(), args
        code, out, _ = run([*args, "--json", *common], capsys)
        assert code == 1 and json.loads(out) == [], args


def test_errors_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["models", "list", "--repo", "/nonexistent"], ["status", "/nonexistent"],
                 ["search", "x", "--repo", str(tmp_path / "missing")]):
        code, out, err = run(args, capsys)
        assert code == 2 and out == "", args
        assert err.count("\n") == 1 and err.startswith("coderag: error: no such folder"), (args, err)
    out = cli(["models", "list", "--repo", "/nonexistent"])
    assert out.returncode == 2 and out.stderr.count("\n") == 1


def test_models_list_exits_0(repo: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    _, common = repo
    code, out, _ = run(["models", "list", "--json", *common], capsys)
    assert code == 0 and json.loads(out)[0]["provider"]


# --------------------------------------------------------------------------- stdin


def test_a_pipe_or_dash_gives_search_and_context_their_question(repo: tuple[Path, list[str]]) -> None:
    _, common = repo
    for args in (["search", "--json", *common], ["search", "-", "--json", *common]):
        out = cli(args, stdin="apply_tax\n")
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)[0]["name"] == "apply_tax"
    out = cli(["context", "--json", *common], stdin="how is the tax applied?")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["query"] == "how is the tax applied?"
    # no question at all: an error, not a wait for a terminal's input
    out = cli(["search", *common])
    assert out.returncode == 2 and "give a query" in out.stderr
    out = cli(["search", *common], stdin="   \n")
    assert out.returncode == 2 and "empty" in out.stderr


def test_piped_text_after_a_question_is_given_to_ask(repo: tuple[Path, list[str]], tmp_path: Path) -> None:
    _, common = repo
    server = Loopback(lambda h, n: openai_sse(h, ["It ", "overflows."]))
    try:
        config = tmp_path / "llm.toml"
        config.write_text(f'[llm]\nprovider = "openai"\nbase_url = "{server.url}/v1"\nmodel = "m"\n'
                          "retries = 0\ntimeout_s = 20\nn_ctx = 4096\nmax_tokens = 64\n")
        log = "Traceback (most recent call last):\n  File \"shop/tax.py\", line 3\nOverflowError: apply_tax\n"
        out = cli(["ask", "why?", "--json", "--config", str(config), *common], stdin=log)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["answer"] == "It overflows."
        prompt = json.loads(server.requests[0]["body"])["messages"][-1]["content"]
        assert "OverflowError: apply_tax" in prompt and prompt.rstrip().endswith("Question: why?")
        assert "shop/tax.py:1-3" in prompt  # the log's end steered retrieval to apply_tax
        # the question itself from a pipe: nothing else is added
        out = cli(["ask", "--json", "--config", str(config), *common], stdin="what does apply_tax return?")
        assert out.returncode == 0, out.stderr
        prompt = json.loads(server.requests[1]["body"])["messages"][-1]["content"]
        assert "Text the user gave" not in prompt and "Question: what does apply_tax return?" in prompt
    finally:
        server.close()


def test_given_text_keeps_its_last_lines_when_too_long() -> None:
    from coderag_tui.answering.prompts import fit_prompt
    from coderag_tui.models import ComposedContext

    class Counting:  # only what fitting asks of a provider: a window and a token count
        name = "fake"

        def context_window(self) -> int:
            return 1024

        def count_tokens(self, text: str) -> int:
            return len(text.split())

    log = "\n".join(f"line{i} " + "word " * 9 for i in range(200)) + "\nFATAL the real error"
    context = ComposedContext(query="why?", route="semantic", pieces=(), tokens=0, budget=500)
    fitted = fit_prompt("why?", context, "", [], Counting(), 128, attachment=log)  # type: ignore[arg-type]
    prompt = fitted.messages[-1].content
    assert "FATAL the real error" in prompt and "line0 " not in prompt
    assert fitted.attachment_lines_dropped > 100 and fitted.prompt_tokens <= 1024 - 128


# --------------------------------------------------------------------------- width


def test_output_fits_80_columns(repo: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    _, common = repo
    long_fn = "compute_the_total_price_of_every_item_in_the_shopping_cart_including_taxes"
    for args in (["search", "total price of every item in the cart"], ["search", long_fn],
                 ["symbol", long_fn], ["callers", long_fn], ["callees", "caller_of_the_long_function"],
                 ["map"], ["models", "list"]):
        code, out, err = run([*args, *common], capsys)
        assert code == 0 and out.strip(), (args, err)
        # (a model's path stays on one line: it is copied whole into a config or --model)
        too_long = [line for line in out.splitlines() if len(line) > 80
                    and not (args[0] == "models" and Path(line.strip()).is_file())]
        assert not too_long, (args, too_long)
    code, out, _ = run(["search", long_fn, *common], capsys)
    first = out.splitlines()[0]
    assert first.endswith("/") and "/".join(first.split("/")[1:-1]) in LONG_DIR  # broken after a slash
    assert f"{LONG_DIR}/module_with_a_long_name.py:1-3" in out.replace("\n    ", "")


def test_the_width_follows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "132")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert base.width() == 132
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert base.width() == 80


# --------------------------------------------------------------------------- text from a repository


def test_textsafe_escapes_what_a_terminal_would_obey() -> None:
    assert safe_line(ESC_NAME) == "name\\x1b[31mRED.py"
    assert safe_line("a\tb\nc\rd\x7f\x9b\u202ee") == "a\\tb\\nc\\rd\\x7f\\x9b\\u202ee"
    assert safe_line("caf\udce9.py") == "caf\\xe9.py"  # a byte that was not UTF-8
    assert safe_text("x = 1\r\n\ty = '\x1b]52;c;aGk=\x07'\n") == "x = 1\n\ty = '\\x1b]52;c;aGk=\\x07'\n"
    assert safe_line("plain ünïcode, 日本, [bold]") == "plain ünïcode, 日本, [bold]"
    assert is_safe("ok\n\tok") and not is_safe("\x1b") and not is_safe("\u2067")


def test_repository_text_is_shown_never_obeyed(repo: tuple[Path, list[str]],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _, common = repo
    for args in (["symbol", "red_alert"], ["search", "red_alert"], ["map"], ["context", "red_alert"],
                 ["callers", "apply_tax"]):
        code, out, err = run([*args, *common], capsys)
        assert code == 0, (args, err)
        assert "\x1b" not in out and "\x07" not in out, args
        if args[0] != "callers":
            assert "name\\x1b[31mRED.py" in out, args
    code, out, _ = run(["context", "red_alert", *common], capsys)
    assert "\\x1b]52;c;cGF5bG9hZA==\\x07" in out and "\\x1b[2J" in out  # the code's own bytes
    # JSON stays faithful: the encoder escapes, the reader gets the real name back
    code, out, _ = run(["symbol", "red_alert", "--json", *common], capsys)
    assert "\x1b" not in out and json.loads(out)[0]["path"] == ESC_NAME
    # on a terminal too (a real process on a pseudo-terminal)
    pytest.importorskip("pty")
    _, out = run_on_a_terminal([sys.executable, "-m", "coderag_tui", "symbol", "red_alert", *common])
    shown = out.decode()
    assert "name\\x1b[31mRED.py" in shown and "\x1b" not in shown


def test_an_error_about_repository_text_is_escaped(repo: tuple[Path, list[str]],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _, common = repo
    code, _, err = run(["symbol", "\x1b[2Jnothing", *common], capsys)
    assert code == 1 and "\x1b" not in err and "\\x1b[2J" in err
    code, _, err = run(["\x1b[2Jserch"], capsys)
    assert code == 2 and "\x1b" not in err
