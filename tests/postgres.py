"""A real PostgreSQL server for tests: the distribution's `postgresql` package (scripts/install.sh),
started with initdb + pg_ctl in a temporary directory, as the package's unprivileged `postgres`
user (the server refuses to run as root), listening on 127.0.0.1 at a free port.

One server per session; every test that asks gets a database of its own, so tests share no state.
`postgres_instance_dir()` writes a DAGSTER_HOME whose dagster.yaml is deploy/dagster.yaml with
`storage: postgres` (dagster-postgres) pointing at such a database: what the Docker and Kubernetes
deploys run on, here on one machine for tests that drive the real daemon and webserver."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.helpers import free_port

DEPLOY_SETTINGS = Path(__file__).resolve().parents[1] / "deploy" / "dagster.yaml"
SERVER_USER = "postgres"  # created by the Debian package


def postgres_bin() -> Path:
    """The newest PostgreSQL under /usr/lib/postgresql/<version>/bin (Debian's layout)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda path: int(Path(path).parts[-3]))
    if not found:
        raise RuntimeError("no PostgreSQL server: install the `postgresql` package (scripts/install.sh does)")
    return Path(found[-1]).parent


@dataclass
class PostgresServer:
    host: str
    port: int
    user: str
    directory: Path

    def dsn(self, database: str = "postgres") -> str:
        """For libpq and psycopg2."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"

    def url(self, database: str = "postgres") -> str:
        """For dagster-postgres: SQLAlchemy 2.1 reads a bare `postgresql://` as psycopg 3, which
        dagster-postgres does not install (it depends on psycopg2), so the driver is named."""
        return f"postgresql+psycopg2://{self.user}@{self.host}:{self.port}/{database}"

    def create_database(self, prefix: str = "test") -> str:
        """A new, empty database; returns its name."""
        import psycopg2

        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        connection = psycopg2.connect(self.dsn())
        try:
            connection.autocommit = True  # CREATE DATABASE cannot run inside a transaction
            with connection.cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{name}"')
        finally:
            connection.close()
        return name


def as_server_user(command: list[str]) -> list[str]:
    """The command run as `postgres` when we are root (tests and CI are), else as ourselves."""
    return ["runuser", "-u", SERVER_USER, "--", *command] if os.geteuid() == 0 else command


def start_postgres() -> PostgresServer:
    """initdb a cluster in a fresh directory and start it on a free port; trust auth on loopback."""
    binaries = postgres_bin()
    directory = Path(tempfile.mkdtemp(prefix="hf-postgres-"))  # not pytest's tmp: root-only (0700) parents
    if os.geteuid() == 0:
        server = pwd.getpwnam(SERVER_USER)
        os.chown(directory, server.pw_uid, server.pw_gid)
    data, log = directory / "data", directory / "server.log"
    init = [str(binaries / "initdb"), "-D", str(data), "-U", SERVER_USER, "--auth=trust", "-E", "UTF8"]
    proc = subprocess.run(
        as_server_user([*init, "--no-instructions"]), cwd=directory, capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(f"initdb failed: {proc.stderr or proc.stdout}")
    for _attempt in range(5):  # a port taken between free_port() and the bind: try another
        port = free_port()
        options = f"-h 127.0.0.1 -p {port} -k {directory} -c fsync=off -c max_connections=200"
        start = [str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"]
        proc = subprocess.run(as_server_user(start), cwd=directory, capture_output=True, text=True, timeout=120)
        if proc.returncode == 0:
            return PostgresServer(host="127.0.0.1", port=port, user=SERVER_USER, directory=directory)
        time.sleep(0.2)
    raise RuntimeError(f"pg_ctl start failed: {proc.stderr or proc.stdout}\n{log.read_text()[-2000:]}")


def stop_postgres(server: PostgresServer) -> None:
    stop = [str(postgres_bin() / "pg_ctl"), "-D", str(server.directory / "data"), "-m", "fast", "-w", "stop"]
    subprocess.run(as_server_user(stop), cwd=server.directory, capture_output=True, timeout=120)
    shutil.rmtree(server.directory, ignore_errors=True)


def write_postgres_instance(home: Path, url: str, overrides: dict | None = None) -> Path:
    """DAGSTER_HOME `home` with deploy/dagster.yaml's settings plus `storage: postgres` at `url`."""
    settings = yaml.safe_load(DEPLOY_SETTINGS.read_text())
    settings["storage"] = {"postgres": {"postgres_url": url}}
    settings.update(overrides or {})
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    return home


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = start_postgres()
    try:
        yield server
    finally:
        stop_postgres(server)


@pytest.fixture
def postgres_database(postgres_server) -> str:
    """The name of a database of this test's own (`postgres_server.url(name)` for Dagster)."""
    return postgres_server.create_database()


@pytest.fixture
def postgres_instance_dir(postgres_server, tmp_path) -> Callable[..., Path]:
    """make(home=tmp_path/'dagster_home', overrides=None) -> a DAGSTER_HOME on a new database."""

    def make(home: Path | None = None, overrides: dict | None = None) -> Path:
        url = postgres_server.url(postgres_server.create_database("dagster"))
        return write_postgres_instance(home or tmp_path / "dagster_home", url, overrides)

    return make
