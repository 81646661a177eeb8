"""Cross-file graph edges in real fixture repositories, one per structured language:
a call in one file resolves to its definition in another file through the import."""

from __future__ import annotations

import pytest

CASES = {
    "python": ({"lib/geometry.py": "def area(w, h):\n    return w * h\n",
                "app/main.py": "from lib.geometry import area\n\n\ndef run():\n    return area(2, 3)\n"},
               ("run", "area"), ("app/main.py", "lib/geometry.py")),
    "javascript": ({"src/geometry.js": "export function area(w, h) {\n  return w * h;\n}\n",
                    "src/main.js": "import { area } from './geometry.js';\n\nexport function run() {\n  return area(2, 3);\n}\n"},
                   ("run", "area"), ("src/main.js", "src/geometry.js")),
    "typescript": ({"src/geometry.ts": "export function area(w: number, h: number): number {\n  return w * h;\n}\n",
                    "src/main.ts": "import { area } from './geometry';\n\nexport function run(): number {\n  return area(2, 3);\n}\n"},
                   ("run", "area"), ("src/main.ts", "src/geometry.ts")),
    "go": ({"geometry/area.go": "package geometry\n\nfunc Area(w, h int) int {\n\treturn w * h\n}\n",
            "cmd/main.go": "package main\n\nimport \"example.com/demo/geometry\"\n\nfunc Run() int {\n\treturn geometry.Area(2, 3)\n}\n"},
           ("Run", "Area"), ("cmd/main.go", "geometry/area.go")),
    "rust": ({"src/geometry.rs": "pub fn area(w: u32, h: u32) -> u32 {\n    w * h\n}\n",
              "src/main.rs": "use crate::geometry::area;\n\nfn run() -> u32 {\n    area(2, 3)\n}\n"},
             ("run", "area"), ("src/main.rs", "src/geometry.rs")),
    "java": ({"src/com/demo/Geometry.java": "package com.demo;\n\npublic class Geometry {\n    public static int area(int w, int h) {\n        return w * h;\n    }\n}\n",
              "src/com/demo/App.java": "package com.demo;\n\nimport com.demo.Geometry;\n\npublic class App {\n    int run() {\n        return Geometry.area(2, 3);\n    }\n}\n"},
             ("App.run", "Geometry.area"), ("src/com/demo/App.java", "src/com/demo/Geometry.java")),
    "c": ({"src/geometry.h": "int area(int w, int h);\n",
           "src/geometry.c": "#include \"geometry.h\"\n\nint area(int w, int h) {\n    return w * h;\n}\n",
           "src/main.c": "#include \"geometry.h\"\n\nint run(void) {\n    return area(2, 3);\n}\n"},
          ("run", "area"), ("src/main.c", "src/geometry.h")),
    "cpp": ({"src/geometry.hpp": "namespace geo {\nint area(int w, int h);\n}\n",
             "src/geometry.cpp": "#include \"geometry.hpp\"\n\nnamespace geo {\nint area(int w, int h) {\n    return w * h;\n}\n}\n",
             "src/main.cpp": "#include \"geometry.hpp\"\n\nint run() {\n    return geo::area(2, 3);\n}\n"},
            ("run", "area"), ("src/main.cpp", "src/geometry.hpp")),
    "csharp": ({"src/Geometry.cs": "namespace Demo {\n    public static class Geometry {\n        public static int Area(int w, int h) { return w * h; }\n    }\n}\n",
                "src/App.cs": "using Demo;\n\nnamespace Demo {\n    public class App {\n        public int Run() { return Geometry.Area(2, 3); }\n    }\n}\n"},
               ("Run", "Area"), None),
    "ruby": ({"lib/geometry.rb": "module Geometry\n  def self.area(w, h)\n    w * h\n  end\nend\n",
              "lib/app.rb": "require_relative 'geometry'\n\ndef run\n  Geometry.area(2, 3)\nend\n"},
             ("run", "area"), ("lib/app.rb", "lib/geometry.rb")),
    "php": ({"src/Geometry.php": "<?php\nnamespace Demo;\n\nclass Geometry {\n    public static function area($w, $h) { return $w * $h; }\n}\n",
             "src/App.php": "<?php\nnamespace Demo;\n\nuse Demo\\Geometry;\n\nfunction run() {\n    return Geometry::area(2, 3);\n}\n"},
            ("run", "area"), None),
    "kotlin": ({"src/demo/Geometry.kt": "package demo\n\nfun area(w: Int, h: Int): Int {\n    return w * h\n}\n",
                "src/demo/App.kt": "package demo\n\nimport demo.area\n\nfun run(): Int {\n    return area(2, 3)\n}\n"},
               ("run", "area"), None),
    "swift": ({"Sources/Geometry.swift": "func area(_ w: Int, _ h: Int) -> Int {\n    return w * h\n}\n",
               "Sources/App.swift": "func run() -> Int {\n    return area(2, 3)\n}\n"},
              ("run", "area"), None),
    "scala": ({"src/demo/Geometry.scala": "package demo\n\nobject Geometry {\n  def area(w: Int, h: Int): Int = w * h\n}\n",
               "src/demo/App.scala": "package demo\n\nimport demo.Geometry\n\nobject App {\n  def run(): Int = Geometry.area(2, 3)\n}\n"},
              ("run", "area"), None),
    "bash": ({"lib/geometry.sh": "area() {\n  echo $(( $1 * $2 ))\n}\n",
              "bin/run.sh": "#!/bin/bash\nsource lib/geometry.sh\n\nrun() {\n  area 2 3\n}\n"},
             ("run", "area"), None),
}


@pytest.mark.parametrize("language", sorted(CASES))
def test_call_resolves_across_files(language, make_repo, open_service):
    files, (caller, callee), imports = CASES[language]
    service = open_service(make_repo(files, name=language))
    langs = {lang.language for lang in service.status().languages}
    assert language in langs or (language == "c" and "c" in langs)
    rows = service.db.rows(
        "SELECT s.qualname, t.qualname, tf.path FROM edges e JOIN units s ON s.id=e.src "
        "JOIN units t ON t.id=e.dst JOIN files tf ON tf.id=t.file_id WHERE e.kind='CALLS'")
    assert any(s.endswith(caller) and t.endswith(callee) and "main" not in path and "App" not in path
               and "app" not in path and "run" not in path for s, t, path in rows), rows
    callers = service.callers(callee.split(".")[-1])
    assert any(e.unit is not None and e.unit.qualname.endswith(caller) for e in callers)
    if imports is not None:
        edges = service.db.rows(
            "SELECT sf.path, tf.path FROM edges e JOIN units s ON s.id=e.src JOIN files sf ON sf.id=s.file_id "
            "JOIN units t ON t.id=e.dst JOIN files tf ON tf.id=t.file_id WHERE e.kind='IMPORTS'")
        assert imports in edges, edges


VIEWS = "class View:\n    def as_view(self):\n        return self\n\n\ndef helper():\n    return 1\n"
TEST_VIEWS = '''import pkg.views


def test_subclass():
    class Index(pkg.views.View):
        pass
    return Index().as_view()


def test_local_view():
    class View(Index):
        pass

    def helper():
        return 2
    return View(), helper()


def test_other():
    return helper()


class Index:
    pass
'''


def _local_graph(service):
    return set(service.db.rows(
        "SELECT s.qualname, e.kind, coalesce(tf.path || ':' || t.qualname, '?' || e.name) FROM edges e "
        "JOIN units s ON s.id=e.src LEFT JOIN units t ON t.id=e.dst LEFT JOIN files tf ON tf.id=t.file_id "
        "WHERE e.kind IN ('CALLS','INHERITS')"))


def test_a_class_local_to_a_test_is_seen_only_inside_it(make_repo, open_service):
    """A definition inside a function is visible inside that function only: the test's local
    `class View` is not the `View` another test subclasses, nor a caller of the library's."""
    repo = make_repo({"pkg/__init__.py": "", "pkg/views.py": VIEWS, "tests/test_views.py": TEST_VIEWS})
    service = open_service(repo)
    graph = _local_graph(service)
    assert ("test_subclass.Index", "INHERITS", "pkg/views.py:View") in graph
    assert ("test_local_view.View", "INHERITS", "tests/test_views.py:Index") in graph  # the top-level one
    assert ("test_local_view", "CALLS", "tests/test_views.py:test_local_view.View") in graph
    assert ("test_local_view", "CALLS", "tests/test_views.py:test_local_view.helper") in graph
    assert ("test_other", "CALLS", "pkg/views.py:helper") in graph  # not test_local_view's helper
    into_locals = {src for src, _, dst in graph if dst.startswith("tests/test_views.py:test_local_view.")}
    assert into_locals == {"test_local_view"}
    # an incremental update re-resolves to the same graph as a fresh build
    (repo / "tests/test_views.py").write_text(TEST_VIEWS + "\n\ndef test_more():\n    return helper()\n")
    service.index()
    assert _local_graph(service) == _local_graph(open_service(repo))
