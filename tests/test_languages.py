"""Structured extraction for every language with a tag query, on real grammars (no mocks).

One small realistic source per language, parsed with `parse_source`; the assertions name concrete
facts: units (kind + qualname), a signature, parameters, return type, decorators, docstring, bases,
calls (name + receiver) and imports (module + names).
"""

from __future__ import annotations

import textwrap

import pytest

from coderag_tui.config import ChunkSettings
from coderag_tui.parsing.extract import parse_source
from coderag_tui.parsing.languages import detect_language, get_query, query_source
from coderag_tui.parsing.records import ParsedFile, ParsedUnit


def parse(path: str, source: str | bytes) -> ParsedFile:
    data = textwrap.dedent(source).lstrip("\n").encode() if isinstance(source, str) else source
    spec = detect_language(path, data[:256])
    assert spec is not None, path
    return parse_source(path, data, spec, ChunkSettings())


def kinds(pf: ParsedFile) -> set[tuple[str, str]]:
    return {(u.kind, u.qualname) for u in pf.units[1:]}


def unit(pf: ParsedFile, qualname: str) -> ParsedUnit:
    found = [u for u in pf.units[1:] if u.qualname == qualname]
    assert found, f"{qualname} not in {sorted(kinds(pf))}"
    return found[0]


def calls(pf: ParsedFile, qualname: str | None = None) -> set[tuple[str, str]]:
    units = pf.units if qualname is None else [unit(pf, qualname)]
    return {(c.receiver, c.name) for u in units for c in u.calls}


def imports(pf: ParsedFile) -> set[tuple[str, tuple[str, ...]]]:
    return {(i.module, i.names) for i in pf.imports}


# --------------------------------------------------------------------------- fixtures

PYTHON = '''
    """Accounts service."""
    import os, sys
    from typing import Any, Optional as Opt

    MAX_USERS = 100


    class Service(BaseService, metaclass=Meta):
        """Serves accounts."""

        @staticmethod
        def build(name: str, *args: Any, retries: int = 3) -> "Service":
            """Build a service."""
            path = os.path.join("a", name)
            return Service(helper(path))
'''

JAVASCRIPT = """
    import React, { useState, useEffect as effect } from 'react';
    import * as path from "path";
    const fs = require('fs');

    /** Renders a greeting. */
    export class Greeter extends Component {
      constructor(props) {
        super(props);
      }

      greet(name, punctuation = '!') {
        return console.log(this.prefix + name, punctuation);
      }
    }

    // Adds numbers.
    export function add(a, b) {
      return helper(a) + b;
    }

    const double = (x) => x * 2;
"""

TYPESCRIPT = """
    import { Injectable } from '@angular/core';
    import type { User } from "./models";

    /** Loads users. */
    @Injectable({ providedIn: 'root' })
    export class UserService extends BaseService implements OnInit, Disposable {
      constructor(private http: HttpClient) {
        super();
      }

      /** Fetch one user. */
      @Log()
      async getUser(id: number, opts?: Options): Promise<User> {
        return this.http.get<User>(`/users/${id}`);
      }
    }

    export interface Repo<T> extends Base {
      find(id: string): T;
    }

    export enum Color { Red, Green }
    export type Id = string | number;

    export function add(a: number, b: number): number {
      return Math.max(a, b);
    }

    export const mul = (a: number, b: number): number => a * b;
"""

TSX = """
    import React from 'react';
    import { track } from './analytics';

    interface Props { label: string }

    /** A button. */
    export const Button = ({ label }: Props): JSX.Element => {
      return <button onClick={() => analytics.track("click", label)}>{label}</button>;
    };

    export function App(): JSX.Element {
      return <Button label="ok" />;
    }
"""

GO = """
    // Package store keeps users.
    package store

    import (
        "fmt"
        str "strings"
    )

    // Store holds users.
    type Store struct {
        Base
        items map[string]int
    }

    // Getter gets things.
    type Getter interface {
        io.Reader
        Get(key string) (int, error)
    }

    // Get returns an item.
    func (s *Store) Get(key string, def int) (int, error) {
        v := fmt.Sprintf("%s", key)
        s.save(str.ToLower(v))
        return def, nil
    }

    func New(size int) *Store {
        return &Store{}
    }
"""

RUST = """
    use std::collections::HashMap;
    use crate::util::{parse, Config as Cfg};

    /// A point in space.
    #[derive(Debug, Clone)]
    pub struct Point {
        x: f64,
        y: f64,
    }

    /// Things with an area.
    pub trait Shape: Debug {
        fn area(&self) -> f64;
    }

    impl Point {
        /// Make a point.
        pub fn new(x: f64, y: f64) -> Self {
            let mut cache = HashMap::new();
            cache.insert(1, 2);
            Point { x, y }
        }
    }

    impl Shape for Point {
        fn area(&self) -> f64 {
            self.x.abs() * compute(self.y)
        }
    }

    #[test]
    fn it_works() {
        assert_eq!(2, 2);
    }
"""

JAVA = """
    package com.example.app;

    import java.util.List;
    import java.util.*;
    import static org.junit.Assert.assertEquals;

    /**
     * A user service.
     */
    @Service
    public class UserService extends BaseService implements Runnable, Closeable {
        private final Repo repo;

        /** Builds it. */
        public UserService(Repo repo) {
            this.repo = repo;
        }

        @Override
        public List<User> find(String name, int limit) throws IOException {
            helper(name);
            return repo.findAll(name, limit);
        }

        interface Callback extends Listener {
            void call(int code);
        }
    }
"""

C = """
    #include <stdio.h>
    #include "util/list.h"

    #define MAX(a, b) ((a) > (b) ? (a) : (b))

    /* A linked list node. */
    struct node {
        int value;
        struct node *next;
    };

    typedef struct {
        int x;
        int y;
    } point_t;

    // Adds two numbers.
    static int add(int a, int b) {
        printf("%d\\n", a);
        return list_push(&head, a + b);
    }

    char *dup_str(const char *s, size_t n);

    int main(void) {
        node->ops->run(1);
        return add(1, 2);
    }
"""

CPP = """
    #include <vector>
    #include "shape.hpp"
    using std::string;

    namespace geo {

    /// A circle.
    class Circle : public Shape, private Named {
    public:
        explicit Circle(double r) : r_(r) {}
        [[nodiscard]] double area() const override { return 3.14 * std::pow(r_, 2); }
        double perimeter(double scale) const;

    private:
        double r_;
    };

    double Circle::perimeter(double scale) const {
        this->log("perimeter");
        return helper(scale);
    }

    template <typename T>
    T maxOf(T a, T b) {
        return a > b ? a : b;
    }

    }  // namespace geo
"""

CSHARP = """
    using System;
    using System.Collections.Generic;
    using Json = Newtonsoft.Json;

    namespace App.Services
    {
        /// <summary>Stores users.</summary>
        [Serializable]
        public class UserRepo : BaseRepo<User>, IRepo
        {
            public UserRepo(string conn) : base(conn) { }

            [HttpGet("{id}")]
            public async Task<User> GetAsync(int id, CancellationToken ct)
            {
                var user = await _db.Users.FindAsync(id);
                Log(user);
                return new User(id);
            }
        }

        public interface IRepo : IBase
        {
            void Save(User u);
        }
    }
"""

RUBY = """
    require "json"
    require_relative "../lib/helper"

    # Utilities.
    module Util
      # A user.
      class User < ActiveRecord::Base
        include Comparable

        def initialize(name, age = 0)
          @name = name
        end

        # Greets someone.
        def greet(other, *rest)
          puts "hi"
          other.wave(1, 2)
          JSON.parse(@name)
        end

        def self.build(**kw)
          new(**kw)
        end
      end
    end
"""

PHP = """
    <?php
    namespace App\\Http;

    use App\\Models\\User;
    use Illuminate\\Support\\{Str, Arr};
    require_once __DIR__ . '/bootstrap.php';

    /**
     * Handles users.
     */
    #[Route('/users')]
    final class UserController extends Controller implements Responder
    {
        use Loggable;

        public function __construct(private UserRepo $repo) {}

        /** Show one. */
        public function show(int $id, ?string $format = null): ?User
        {
            $user = $this->repo->find($id);
            self::log($user);
            return new User($id);
        }
    }

    function top_level($a) { return strlen($a); }
"""

KOTLIN = """
    package com.example.app

    import kotlinx.coroutines.launch
    import java.util.*

    /** A repository. */
    @Repository
    class UserRepo(private val db: Db) : BaseRepo<User>(db), Closeable {
        /** Finds a user. */
        @Throws(IOException::class)
        suspend fun find(id: Int, name: String = ""): User? {
            val u = db.query(id)
            log(u)
            return User(id)
        }
    }

    interface Repo : Base {
        fun save(u: User)
    }

    enum class Color {
        RED
    }

    fun String.shout(): String = uppercase()
"""

SWIFT = """
    import Foundation
    import UIKit

    /// A user store.
    @MainActor
    public final class UserStore: BaseStore, Codable {
        private var users: [User] = []

        init(name: String) {
            super.init()
        }

        /// Finds a user.
        @discardableResult
        public func find(id: Int, named name: String = "") async throws -> User? {
            let u = repo.lookup(id: id)
            log(u)
            return User(id: id)
        }
    }

    protocol Repo: AnyObject {
        func save(_ u: User) -> Bool
    }

    struct Point: Equatable {
        var x: Int
    }

    extension UserStore: Sequence {
        func count() -> Int { return users.count }
    }
"""

SCALA = """
    package com.example

    import scala.collection.mutable
    import scala.util.{Try, Success}

    /** A user service. */
    @deprecated("use V2", "1.0")
    class UserService(repo: Repo) extends Base with Logging {
      /** Finds a user. */
      def find(id: Int, name: String = ""): Option[User] = {
        val u = repo.lookup(id)
        log(u)
        Some(User(id))
      }
    }

    trait Logging {
      def log(m: Any): Unit = println(m)
    }

    object UserService extends App {
      def apply(): UserService = new UserService(null)
    }
"""

BASH = """
    #!/usr/bin/env bash
    source ./lib/common.sh
    . "$HOME/.env"

    # Builds the project.
    build() {
        local target="$1"
        make -C "$target" all
        log_info "built" "$target"
    }

    function deploy {
        build "$1"
        rsync -a dist/ "$HOST:/srv"
    }

    deploy "$@"
"""

MARKDOWN = """
    # Project Title

    Intro paragraph.

    ## Install

    Run `pip install coderag`.

    ### From source

    Clone it.
"""

SOURCES = {
    "python": ("pkg/service.py", PYTHON),
    "javascript": ("web/greeter.js", JAVASCRIPT),
    "typescript": ("web/user.service.ts", TYPESCRIPT),
    "tsx": ("web/Button.tsx", TSX),
    "go": ("store/store.go", GO),
    "rust": ("src/point.rs", RUST),
    "java": ("src/com/example/app/UserService.java", JAVA),
    "c": ("src/list.c", C),
    "cpp": ("src/circle.cpp", CPP),
    "csharp": ("App/UserRepo.cs", CSHARP),
    "ruby": ("lib/util.rb", RUBY),
    "php": ("app/UserController.php", PHP),
    "kotlin": ("app/UserRepo.kt", KOTLIN),
    "swift": ("Sources/UserStore.swift", SWIFT),
    "scala": ("src/UserService.scala", SCALA),
    "bash": ("scripts/deploy.sh", BASH),
    "markdown": ("docs/README.md", MARKDOWN),
}


# --------------------------------------------------------------------------- every language


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_query_compiles_and_fixture_parses_cleanly(language: str) -> None:
    assert query_source(language) is not None
    assert get_query(language) is not None  # compiles: an impossible pattern raises QueryError
    path, source = SOURCES[language]
    pf = parse(path, source)
    assert pf.language == language
    assert pf.structured
    assert not pf.has_errors
    assert len(pf.units) > 1
    assert pf.chunks
    assert all(u.name for u in pf.units)
    assert all(1 <= u.start_line <= u.end_line <= pf.lines for u in pf.units)


# --------------------------------------------------------------------------- per language


def test_python() -> None:
    pf = parse(*SOURCES["python"])
    assert {("constant", "MAX_USERS"), ("class", "Service"), ("method", "Service.build")} <= kinds(
        pf
    )
    build = unit(pf, "Service.build")
    assert build.signature == 'def build(name: str, *args: Any, retries: int = 3) -> "Service"'
    assert len(build.params) == 3
    assert build.return_type == '"Service"'
    assert build.decorators == ("@staticmethod",)
    assert build.docstring == "Build a service."
    assert unit(pf, "Service").bases == ("BaseService",)
    assert unit(pf, "Service").docstring == "Serves accounts."
    assert {("os.path", "join"), ("", "Service"), ("", "helper")} <= calls(pf, "Service.build")
    assert imports(pf) == {("os", ()), ("sys", ()), ("typing", ("Any", "Optional"))}


def test_javascript() -> None:
    pf = parse(*SOURCES["javascript"])
    assert {
        ("class", "Greeter"),
        ("method", "Greeter.constructor"),
        ("method", "Greeter.greet"),
        ("function", "add"),
        ("function", "double"),
    } <= kinds(pf)
    greet = unit(pf, "Greeter.greet")
    assert greet.signature == "greet(name, punctuation = '!')"
    assert len(greet.params) == 2
    assert unit(pf, "Greeter").bases == ("Component",)
    assert unit(pf, "Greeter").docstring == "Renders a greeting."
    assert unit(pf, "add").docstring == "Adds numbers."
    assert unit(pf, "double").params == ("x",)
    assert ("console", "log") in calls(pf, "Greeter.greet")
    assert ("", "helper") in calls(pf, "add")
    assert imports(pf) == {
        ("react", ("React", "useState", "useEffect")),
        ("path", ("path",)),
        ("fs", ("fs",)),
    }


def test_typescript() -> None:
    pf = parse(*SOURCES["typescript"])
    assert {
        ("class", "UserService"),
        ("method", "UserService.constructor"),
        ("method", "UserService.getUser"),
        ("interface", "Repo"),
        ("method", "Repo.find"),
        ("enum", "Color"),
        ("type", "Id"),
        ("function", "add"),
        ("function", "mul"),
    } <= kinds(pf)
    svc = unit(pf, "UserService")
    assert svc.bases == ("BaseService", "OnInit", "Disposable")
    assert svc.decorators == ("@Injectable({ providedIn: 'root' })",)
    assert svc.docstring == "Loads users."
    get = unit(pf, "UserService.getUser")
    assert get.signature == "async getUser(id: number, opts?: Options): Promise<User>"
    assert get.params == ("id: number", "opts?: Options")
    assert get.return_type == "Promise<User>"
    assert get.decorators == ("@Log()",)
    assert get.docstring == "Fetch one user."
    assert unit(pf, "Repo").bases == ("Base",)
    assert unit(pf, "mul").return_type == "number"
    assert ("this.http", "get") in calls(pf, "UserService.getUser")
    assert ("Math", "max") in calls(pf, "add")
    assert imports(pf) == {("@angular/core", ("Injectable",)), ("./models", ("User",))}


def test_tsx() -> None:
    pf = parse(*SOURCES["tsx"])
    assert {("interface", "Props"), ("function", "Button"), ("function", "App")} <= kinds(pf)
    button = unit(pf, "Button")
    assert button.params == ("{ label }: Props",)
    assert button.return_type == "JSX.Element"
    assert button.docstring == "A button."
    assert unit(pf, "App").return_type == "JSX.Element"
    assert ("analytics", "track") in calls(pf, "Button")
    assert imports(pf) == {("react", ("React",)), ("./analytics", ("track",))}


def test_go() -> None:
    pf = parse(*SOURCES["go"])
    assert {
        ("struct", "Store"),
        ("interface", "Getter"),
        ("method", "Getter.Get"),
        ("method", "Store.Get"),
        ("function", "New"),
    } <= kinds(pf)
    get = unit(pf, "Store.Get")
    assert get.scope == ("Store",)
    assert get.signature == "func (s *Store) Get(key string, def int) (int, error)"
    assert get.params == ("key string", "def int")
    assert get.return_type == "(int, error)"
    assert get.docstring == "Get returns an item."
    assert unit(pf, "Store").docstring == "Store holds users."
    assert unit(pf, "Store").bases == ("Base",)
    assert unit(pf, "Getter").bases == ("io.Reader",)
    assert unit(pf, "New").return_type == "*Store"
    assert {("fmt", "Sprintf"), ("s", "save"), ("str", "ToLower")} <= calls(pf, "Store.Get")
    assert imports(pf) == {("fmt", ()), ("strings", ("str",))}


def test_rust() -> None:
    pf = parse(*SOURCES["rust"])
    assert {
        ("struct", "Point"),
        ("trait", "Shape"),
        ("method", "Shape.area"),
        ("impl", "Point"),
        ("method", "Point.new"),
        ("method", "Point.area"),
        ("function", "it_works"),
    } <= kinds(pf)
    point = [u for u in pf.units if u.kind == "struct"][0]
    assert point.decorators == ("#[derive(Debug, Clone)]",)
    assert point.docstring == "A point in space."
    new = unit(pf, "Point.new")
    assert new.signature == "pub fn new(x: f64, y: f64) -> Self"
    assert len(new.params) == 2
    assert new.return_type == "Self"
    assert new.docstring == "Make a point."
    trait_impl = [u for u in pf.units if u.kind == "impl" and u.bases]
    assert trait_impl and trait_impl[0].bases == ("Shape",)
    assert unit(pf, "Shape").bases == ("Debug",)
    assert unit(pf, "it_works").decorators == ("#[test]",)
    assert {("HashMap", "new"), ("cache", "insert")} <= calls(pf, "Point.new")
    assert {("self.x", "abs"), ("", "compute")} <= calls(pf, "Point.area")
    assert imports(pf) == {("std::collections", ("HashMap",)), ("crate::util", ("parse", "Config"))}


def test_java() -> None:
    pf = parse(*SOURCES["java"])
    assert {
        ("class", "UserService"),
        ("constructor", "UserService.UserService"),
        ("method", "UserService.find"),
        ("interface", "UserService.Callback"),
        ("method", "UserService.Callback.call"),
    } <= kinds(pf)
    svc = unit(pf, "UserService")
    assert svc.bases == ("BaseService", "Runnable", "Closeable")
    assert svc.decorators == ("@Service",)
    assert svc.docstring == "A user service."
    find = unit(pf, "UserService.find")
    assert find.signature == "public List<User> find(String name, int limit) throws IOException"
    assert find.params == ("String name", "int limit")
    assert find.return_type == "List<User>"
    assert find.decorators == ("@Override",)
    assert unit(pf, "UserService.UserService").docstring == "Builds it."
    assert unit(pf, "UserService.Callback").bases == ("Listener",)
    assert {("repo", "findAll"), ("", "helper")} <= calls(pf, "UserService.find")
    assert imports(pf) == {
        ("java.util", ("List",)),
        ("java.util", ()),
        ("org.junit.Assert", ("assertEquals",)),
    }


def test_c() -> None:
    pf = parse(*SOURCES["c"])
    assert {
        ("macro", "MAX"),
        ("struct", "node"),
        ("struct", "point_t"),
        ("function", "add"),
        ("function", "dup_str"),
        ("function", "main"),
    } <= kinds(pf)
    add = unit(pf, "add")
    assert add.signature == "static int add(int a, int b)"
    assert add.params == ("int a", "int b")
    assert add.return_type == "int"
    assert add.docstring == "Adds two numbers."
    assert unit(pf, "node").docstring == "A linked list node."
    assert unit(pf, "dup_str").params == ("const char *s", "size_t n")
    assert unit(pf, "MAX").params == ("a", "b")
    assert {("", "printf"), ("", "list_push")} <= calls(pf, "add")
    assert ("node->ops", "run") in calls(pf, "main")
    assert imports(pf) == {("stdio.h", ()), ("util/list.h", ())}


def test_cpp() -> None:
    pf = parse(*SOURCES["cpp"])
    assert {
        ("namespace", "geo"),
        ("class", "geo.Circle"),
        ("method", "geo.Circle.Circle"),
        ("method", "geo.Circle.area"),
        ("method", "geo.Circle.perimeter"),
        ("function", "geo.maxOf"),
    } <= kinds(pf)
    circle = unit(pf, "geo.Circle")
    assert circle.bases == ("Shape", "Named")
    assert circle.docstring == "A circle."
    area = unit(pf, "geo.Circle.area")
    assert area.decorators == ("[[nodiscard]]",)
    assert area.return_type == "double"
    assert area.signature == "double area() const override"
    # the out-of-line definition is scoped by its class
    defs = [u for u in pf.units if u.qualname == "geo.Circle.perimeter"]
    assert any(u.signature == "double Circle::perimeter(double scale) const" for u in defs)
    assert all(len(u.params) == 1 for u in defs)
    assert unit(pf, "geo.maxOf").return_type == "T"
    assert ("std", "pow") in calls(pf, "geo.Circle.area")
    assert {("this", "log"), ("", "helper")} <= calls(pf)
    assert imports(pf) == {("vector", ()), ("shape.hpp", ()), ("std", ("string",))}


def test_csharp() -> None:
    pf = parse(*SOURCES["csharp"])
    assert {
        ("namespace", "App.Services"),
        ("class", "App.Services.UserRepo"),
        ("constructor", "App.Services.UserRepo.UserRepo"),
        ("method", "App.Services.UserRepo.GetAsync"),
        ("interface", "App.Services.IRepo"),
        ("method", "App.Services.IRepo.Save"),
    } <= kinds(pf)
    repo = unit(pf, "App.Services.UserRepo")
    assert repo.bases == ("BaseRepo<User>", "IRepo")
    assert repo.decorators == ("[Serializable]",)
    assert repo.docstring == "<summary>Stores users.</summary>"
    get = unit(pf, "App.Services.UserRepo.GetAsync")
    assert get.signature == "public async Task<User> GetAsync(int id, CancellationToken ct)"
    assert len(get.params) == 2
    assert get.return_type == "Task<User>"
    assert get.decorators == ('[HttpGet("{id}")]',)
    assert {("_db.Users", "FindAsync"), ("", "Log"), ("", "User")} <= calls(pf, get.qualname)
    assert imports(pf) == {
        ("System", ()),
        ("System.Collections.Generic", ()),
        ("Newtonsoft.Json", ("Json",)),
    }


def test_ruby() -> None:
    pf = parse(*SOURCES["ruby"])
    assert {
        ("module", "Util"),
        ("class", "Util.User"),
        ("method", "Util.User.initialize"),
        ("method", "Util.User.greet"),
        ("method", "Util.User.build"),
    } <= kinds(pf)
    user = unit(pf, "Util.User")
    assert user.bases == ("ActiveRecord::Base", "Comparable")
    assert user.docstring == "A user."
    assert unit(pf, "Util").docstring == "Utilities."
    greet = unit(pf, "Util.User.greet")
    assert greet.signature == "def greet(other, *rest)"
    assert greet.params == ("other", "*rest")
    assert greet.docstring == "Greets someone."
    assert {("other", "wave"), ("JSON", "parse"), ("", "puts")} <= calls(pf, "Util.User.greet")
    assert imports(pf) == {("json", ()), ("../lib/helper", ())}


def test_php() -> None:
    pf = parse(*SOURCES["php"])
    assert {
        ("class", "UserController"),
        ("method", "UserController.__construct"),
        ("method", "UserController.show"),
        ("function", "top_level"),
    } <= kinds(pf)
    ctl = unit(pf, "UserController")
    assert ctl.bases == ("Controller", "Responder", "Loggable")
    assert ctl.decorators == ("#[Route('/users')]",)
    assert ctl.docstring == "Handles users."
    show = unit(pf, "UserController.show")
    assert show.signature == "public function show(int $id, ?string $format = null): ?User"
    assert len(show.params) == 2
    assert show.return_type == "?User"
    assert show.docstring == "Show one."
    assert {("$this->repo", "find"), ("self", "log"), ("", "User")} <= calls(pf, show.qualname)
    assert imports(pf) == {
        ("App\\Models", ("User",)),
        ("Illuminate\\Support", ("Str", "Arr")),
        ("/bootstrap.php", ()),
    }


def test_kotlin() -> None:
    pf = parse(*SOURCES["kotlin"])
    assert {
        ("class", "UserRepo"),
        ("method", "UserRepo.find"),
        ("interface", "Repo"),
        ("method", "Repo.save"),
        ("enum", "Color"),
        ("function", "String.shout"),
    } <= kinds(pf)
    repo = unit(pf, "UserRepo")
    assert repo.bases == ("BaseRepo<User>", "Closeable")
    assert repo.decorators == ("@Repository",)
    assert repo.docstring == "A repository."
    assert repo.params == ("private val db: Db",)
    find = unit(pf, "UserRepo.find")
    assert find.signature == 'suspend fun find(id: Int, name: String = ""): User?'
    assert find.params == ("id: Int", "name: String")
    assert find.return_type == "User?"
    assert find.decorators == ("@Throws(IOException::class)",)
    assert find.docstring == "Finds a user."
    assert unit(pf, "Repo").bases == ("Base",)
    assert {("db", "query"), ("", "log"), ("", "User")} <= calls(pf, "UserRepo.find")
    assert imports(pf) == {("kotlinx.coroutines.launch", ("launch",)), ("java.util", ())}


def test_swift() -> None:
    pf = parse(*SOURCES["swift"])
    assert {
        ("class", "UserStore"),
        ("constructor", "UserStore.init"),
        ("method", "UserStore.find"),
        ("protocol", "Repo"),
        ("method", "Repo.save"),
        ("struct", "Point"),
        ("extension", "UserStore"),
        ("method", "UserStore.count"),
    } <= kinds(pf)
    store = [u for u in pf.units if u.kind == "class"][0]
    assert store.bases == ("BaseStore", "Codable")
    assert store.decorators == ("@MainActor",)
    assert store.docstring == "A user store."
    find = unit(pf, "UserStore.find")
    assert (
        find.signature == 'public func find(id: Int, named name: String = "") async throws -> User?'
    )
    assert find.params == ("id: Int", "named name: String")
    assert find.return_type == "User?"
    assert find.decorators == ("@discardableResult",)
    assert find.docstring == "Finds a user."
    assert unit(pf, "Repo.save").return_type == "Bool"
    assert {("repo", "lookup"), ("", "log"), ("", "User")} <= calls(pf, "UserStore.find")
    assert imports(pf) == {("Foundation", ()), ("UIKit", ())}


def test_scala() -> None:
    pf = parse(*SOURCES["scala"])
    assert {
        ("class", "UserService"),
        ("method", "UserService.find"),
        ("trait", "Logging"),
        ("method", "Logging.log"),
        ("object", "UserService"),
        ("method", "UserService.apply"),
    } <= kinds(pf)
    svc = [u for u in pf.units if u.kind == "class"][0]
    assert svc.bases == ("Base", "Logging")
    assert svc.decorators == ('@deprecated("use V2", "1.0")',)
    assert svc.docstring == "A user service."
    find = unit(pf, "UserService.find")
    assert find.signature == 'def find(id: Int, name: String = ""): Option[User]'
    assert len(find.params) == 2
    assert find.return_type == "Option[User]"
    assert find.docstring == "Finds a user."
    assert {("repo", "lookup"), ("", "log"), ("", "Some")} <= calls(pf, "UserService.find")
    assert imports(pf) == {
        ("scala.collection.mutable", ("mutable",)),
        ("scala.util", ("Try", "Success")),
    }


def test_bash() -> None:
    pf = parse(*SOURCES["bash"])
    assert kinds(pf) == {("function", "build"), ("function", "deploy")}
    build = unit(pf, "build")
    assert build.signature == "build()"
    assert build.docstring == "Builds the project."
    assert {("", "make"), ("", "log_info")} <= calls(pf, "build")
    assert ("", "build") in calls(pf, "deploy")
    assert imports(pf) == {("./lib/common.sh", ()), ("$HOME/.env", ())}


def test_markdown_sections_named_by_heading() -> None:
    pf = parse(*SOURCES["markdown"])
    assert kinds(pf) == {
        ("section", "Project Title"),
        ("section", "Project Title.Install"),
        ("section", "Project Title.Install.From source"),
    }
    assert unit(pf, "Project Title.Install").signature == "## Install"
    assert pf.chunks and "Intro paragraph." in pf.chunks[0].text


# --------------------------------------------------------------------------- robustness


@pytest.mark.parametrize(
    ("path", "source"),
    [
        (
            "broken.py",
            "class Ok:\n    def fine(self):\n        return 1\n\ndef broken(:\n    pass\n",
        ),
        ("broken.go", "package x\n\nfunc Ok() int {\n    return 1\n}\n\nfunc Broken( {\n"),
        ("broken.ts", "export class Ok {\n  run(): void {}\n}\n\nfunction broken( {\n"),
        ("Broken.java", "class Ok {\n    void run() {}\n}\n\nclass Broken { void x( }\n"),
    ],
)
def test_syntax_errors_still_yield_units(path: str, source: str) -> None:
    pf = parse(path, source.encode())
    assert pf.has_errors
    assert any(u.name == "Ok" for u in pf.units)
    assert pf.chunks


@pytest.mark.parametrize("language", sorted(SOURCES))
def test_invalid_utf8_does_not_raise(language: str) -> None:
    path, source = SOURCES[language]
    data = (
        textwrap.dedent(source).lstrip("\n").encode()
        + b"\n\xff\xfe\xc3(\x80 garbage \xed\xa0\x80\n"
    )
    pf = parse(path, data)
    assert pf.chunks
    assert len(pf.units) > 1


@pytest.mark.parametrize(
    ("path", "source", "name"),
    [
        (
            "lib/util.lua",
            "-- Utilities.\nlocal M = {}\n\nfunction M.greet(name)\n  print('hi ' .. name)\nend\n\n"
            "local function helper(x)\n  return x * 2\nend\n\nreturn M\n",
            "helper",
        ),
        (
            "lib/app.clj",
            '(ns app.greeter)\n\n(defn greet [name]\n  (println "hi" name))\n',
            None,
        ),
    ],
)
def test_language_without_query_uses_generic_path(path: str, source: str, name: str | None) -> None:
    spec = detect_language(path)
    assert spec is not None and not spec.structured
    pf = parse(path, source.encode())
    assert not pf.structured
    assert pf.units[0].kind == "file"
    assert pf.chunks and pf.chunks[0].text.strip()
    if name is not None:
        assert any(u.name == name for u in pf.units[1:])


def test_markdown_without_headings_still_chunks() -> None:
    pf = parse("notes.md", b"Just some prose.\n\nAnother paragraph with `code`.\n")
    assert pf.chunks
    assert pf.units[0].kind == "file"


def test_trailing_comment_is_not_a_docstring() -> None:
    pf = parse(
        "mod.py",
        """
        LIMIT = 1  # trailing note
        def first():
            pass


        class A:  # noqa
            def method(self):
                pass


        # Real doc.
        def documented():
            pass
        """,
    )
    assert unit(pf, "first").docstring == ""
    assert unit(pf, "A.method").docstring == ""
    assert unit(pf, "documented").docstring == "Real doc."
