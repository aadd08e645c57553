"""Fixtures for the ledger: a SQLite file per test and, where the binaries exist, a real
PostgreSQL server started once per session on a loopback port (skipped cleanly otherwise)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from labcoat.ledger import Ledger


def _postgres_bin() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3])
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_server():
    """Admin URL of a throwaway PostgreSQL cluster, or a skip when it cannot be started."""
    pytest.importorskip(
        "psycopg", reason="psycopg 3 is not installed (pip install 'labcoat[postgres]')"
    )
    bindir = _postgres_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries are not installed (apt-get install postgresql)")
    as_user: list[str] = []
    root = tempfile.mkdtemp(prefix="labcoat-pg-")
    if os.geteuid() == 0:  # the server refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
        try:
            import pwd

            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to start the server as")
        os.chown(root, pw.pw_uid, pw.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log = os.path.join(root, "data"), os.path.join(root, "server.log")
    port = _free_port()
    init = subprocess.run(
        [
            *as_user,
            str(bindir / "initdb"),
            "-D",
            data,
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
        ],
        capture_output=True,
        text=True,
        cwd=root,
    )
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"initdb failed: {init.stderr.strip()[-300:]}")
    options = (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off "
        "-c max_connections=60"
    )
    start = subprocess.run(
        [
            *as_user,
            str(bindir / "pg_ctl"),
            "-D",
            data,
            "-o",
            options,
            "-l",
            log,
            "-w",
            "-t",
            "60",
            "start",
        ],
        capture_output=True,
        text=True,
        cwd=root,
    )
    if start.returncode != 0:
        tail = Path(log).read_text()[-300:] if os.path.exists(log) else start.stderr
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"PostgreSQL did not start: {tail.strip()}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(
            [*as_user, str(bindir / "pg_ctl"), "-D", data, "-m", "immediate", "stop"],
            capture_output=True,
            cwd=root,
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_database(postgres_server):
    """One database for the session; each test gets the ledger schema fresh (see pg_url)."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{postgres_server}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{postgres_server}/{name}"


@pytest.fixture
def pg_url(pg_database):
    """A PostgreSQL ledger location with no ledger in it yet; emptied again afterwards."""
    import psycopg

    from labcoat.ledger.store.connection import PG_SCHEMA

    def drop():
        with psycopg.connect(pg_database, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {PG_SCHEMA} CASCADE")

    drop()
    yield pg_database
    drop()


@pytest.fixture
def ledger_path(tmp_path) -> Path:
    return tmp_path / ".labcoat" / "ledger.db"


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path):
    """A fresh ledger location on each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def ledger(location):
    with Ledger(location) as opened:
        yield opened


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """A working directory with no ledger configured, so defaults resolve inside tmp_path."""
    monkeypatch.delenv("LABCOAT_LEDGER", raising=False)
    monkeypatch.delenv("LABCOAT_RUN_ID", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path
