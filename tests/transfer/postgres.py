"""A real PostgreSQL server for the tests: initdb and pg_ctl on a temporary folder, on a
loopback port, as a user that is not root (PostgreSQL refuses to run as root)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


def binaries() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Postgres:
    folder: Path
    port: int
    user: str

    def uri(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"


def _as_user(user: str | None, args: list[str]) -> list[str]:
    return args if user is None else ["runuser", "-u", user, "--", *args]


def start(bin_dir: Path) -> tuple[Postgres, str | None]:
    """Start a server; returns it and the system user it runs as (None: this one)."""
    run_as = "postgres" if os.geteuid() == 0 else None
    if run_as is not None:
        pwd.getpwnam(run_as)  # Debian's package creates it
    folder = Path(tempfile.mkdtemp(prefix="capsule-pg-"))
    if run_as is not None:
        shutil.chown(folder, run_as)
    data, port = folder / "data", _free_port()
    role = run_as or pwd.getpwuid(os.geteuid()).pw_name
    subprocess.run(
        _as_user(
            run_as, [str(bin_dir / "initdb"), "-D", str(data), "-U", role, "--auth=trust", "-E", "UTF8", "--no-sync"]
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
    subprocess.run(
        _as_user(
            run_as,
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(folder / "log"),
                "-w",
                "-t",
                "60",
                "start",
            ],
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    return Postgres(folder, port, role), run_as


def stop(bin_dir: Path, server: Postgres, run_as: str | None) -> None:
    subprocess.run(
        _as_user(run_as, [str(bin_dir / "pg_ctl"), "-D", str(server.folder / "data"), "-m", "fast", "-w", "stop"]),
        capture_output=True,
        timeout=120,
    )
    shutil.rmtree(server.folder, ignore_errors=True)
