"""A Python import names a real package: `import flask` in a test or an example is
`src/flask/__init__.py`, not a module called flask.py inside a test package, a copy in an
example folder, or a folder of templates called flask (flask's own tree has the first)."""

from __future__ import annotations

from pathlib import Path

from coderag_tui.config import EmbedSettings, IndexSettings, Settings
from coderag_tui.indexing.indexer import Indexer
from coderag_tui.store import read
from coderag_tui.store.backend import open_store
from coderag_tui.store.db import open_database

REPO = {
    "src/flask/__init__.py": "from flask.app import Flask\n",
    "src/flask/app.py": "class Flask:\n    def route(self, rule):\n        return rule\n",
    # flask's tests/test_apps/cliapp/inner1/inner2/flask.py: a module of a test package
    "tests/test_apps/cliapp/__init__.py": "",
    "tests/test_apps/cliapp/inner1/__init__.py": "",
    "tests/test_apps/cliapp/inner1/inner2/__init__.py": "",
    "tests/test_apps/cliapp/inner1/inner2/flask.py": "def create_app():\n    return None\n",
    "tests/test_basic.py": "import flask\nfrom flask import Flask\n\n\ndef test_app():\n    return Flask()\n",
    # an example's own copy, and a folder of templates named like packages
    "examples/site/flask.py": "def shim():\n    return 1\n",
    "examples/tutorial/app.py": "import flask\nimport widgets\n\n\ndef make():\n    return flask.Flask()\n",
    "examples/tutorial/templates/flask/base.html": "<html>{% block body %}{% endblock %}</html>\n",
    "examples/tutorial/templates/widgets/form.html": "<form>{{ form }}</form>\n",
    # a module next to its importer (a script's sibling) is still the closest
    "scripts/tool.py": "import helpers\n",
    "scripts/helpers.py": "def run():\n    return 0\n",
    "helpers.py": "def run():\n    return 1\n",
}


def imports_of(tmp_path: Path) -> dict[tuple[str, str], str | None]:
    root = tmp_path / "repo"
    for path, text in REPO.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    db = open_database(tmp_path / "index.db")
    try:
        Indexer(db, root, Settings(index=IndexSettings(workers=1), embed=EmbedSettings(enabled=False))).run()
    finally:
        db.close()
    store = open_store(tmp_path / "index.db")
    try:
        ids = [u.id for u in (read.file_unit(store, p) for p in read.file_index_states(store, "")) if u]
        return {(e.source.path, e.name): e.unit.path if e.unit else None
                for e in read.callees(store, ids, kinds=("IMPORTS",)) if e.source}
    finally:
        store.close()


def test_python_imports_resolve_to_real_packages(tmp_path: Path) -> None:
    found = imports_of(tmp_path)
    assert found[("tests/test_basic.py", "flask")] == "src/flask/__init__.py"
    assert found[("examples/tutorial/app.py", "flask")] == "src/flask/__init__.py"
    assert found[("src/flask/__init__.py", "flask.app")] == "src/flask/app.py"
    assert found[("examples/tutorial/app.py", "widgets")] is None  # only templates: no module
    assert found[("scripts/tool.py", "helpers")] == "scripts/helpers.py"
