"""A real OpenSSH server on 127.0.0.1, for attaching through ssh.

``sshd`` runs on a free port with throwaway host and user keys made here, for
the current user only (root may log in with a key); the client side gets an
``ssh -F`` config with that key and the host key already known. Skipped
where Debian's openssh-server is not installed (``.ci/run`` installs it).
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
#: The procwindow the far side runs: this interpreter's (the venv's).
REMOTE_PROCWINDOW = Path(sys.executable).parent / "procwindow"


@dataclass
class Sshd:
    proc: subprocess.Popen[bytes]
    port: int
    user: str
    config: Path  # the client's: ssh -F config
    log: Path

    @property
    def ssh_command(self) -> list[str]:
        return ["ssh", "-F", str(self.config)]

    def url(self, name: str = "test") -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}/{name}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "procwindow-test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    if not os.path.exists(SSHD):
        pytest.skip(f"no {SSHD} (Debian's openssh-server; .ci/run installs it)")
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.skip("no ssh client (Debian's openssh-client)")
    if not REMOTE_PROCWINDOW.exists():
        pytest.skip(f"no {REMOTE_PROCWINDOW}: procwindow is not installed in this environment")
    root = os.geteuid() == 0
    if root and not os.path.isdir("/run/sshd"):
        # sshd started by root wants its privilege separation directory (systemd
        # makes it for the service).
        try:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        except OSError as exc:
            pytest.skip(f"cannot make /run/sshd for sshd: {exc}")
    folder = tmp_path / "ssh"
    folder.mkdir(mode=0o700)
    host_key, user_key = folder / "host_key", folder / "user_key"
    _keygen(host_key)
    _keygen(user_key)
    user = getpass.getuser()
    port = _free_port()
    server_config = folder / "sshd_config"
    server_config.write_text(
        f"""\
Port {port}
ListenAddress 127.0.0.1
HostKey {host_key}
AuthorizedKeysFile {user_key}.pub
PidFile {folder / "sshd.pid"}
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin {"prohibit-password" if root else "no"}
AllowUsers {user}
UseDNS no
PrintMotd no
"""
    )
    host_pub = host_key.with_suffix(".pub").read_text().split()[:2]
    known = folder / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {' '.join(host_pub)}\n")
    client_config = folder / "ssh_config"
    client_config.write_text(
        f"""\
Host *
  IdentityFile {user_key}
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile {known}
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  LogLevel ERROR
"""
    )
    log = folder / "sshd.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(server_config)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                pytest.fail(f"sshd exited {proc.returncode}: {log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"sshd does not listen on {port}: {log.read_text()}")
                time.sleep(0.05)
        yield Sshd(proc, port, user, client_config, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
