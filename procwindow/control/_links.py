"""Links: how a RemoteSupervisor reaches a server, on this machine or through ssh.

A target is a server name (``default``), a socket path (anything with a
``/``), or ``ssh://[user@]host[:port][/NAME]``. Over ssh, each connection is
one ``ssh host procwindow ctl bridge NAME`` whose stdin and stdout are one end
of a socketpair: the bridge pumps bytes between them and the server's socket
there, so the protocol is the same as on a local socket. OpenSSH does the
rest (its config, keys, agent, host-key checking): no listener or crypto of
ours. Each connection's ssh process is watched through a pidfd (no thread, no
child watcher) and reaped when it ends; its stderr's last line explains a
failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol
from urllib.parse import unquote, urlsplit

from ..core import ProcwindowError
from ._protocol import PROTOCOL_VERSION
from ._sockdir import DEFAULT_SERVER_NAME, SocketDirError, check_name, default_socket_path
from ._ssh_master import PARKED, Master, acquire, release
from ._ssh_process import SshProcess, close_warm
from .aclient import READ_LIMIT, AsyncClient
from .client import CannotConnect, ServerError

log = logging.getLogger("procwindow")

__all__ = [
    "BRIDGE_NO_SERVER",
    "CONNECT_TIMEOUT",
    "SSH_ENV",
    "Disconnected",
    "Link",
    "LinkError",
    "LocalLink",
    "NoServer",
    "RemoteNotInstalled",
    "SshFailed",
    "SshLink",
    "Target",
    "make_link",
    "parse_target",
]

#: The environment variable with the ssh command to use (split like a shell
#: would): ``PROCWINDOW_SSH="ssh -F ~/.ssh/work_config"``.
SSH_ENV = "PROCWINDOW_SSH"
#: The environment variable with the remote procwindow command (default ``procwindow``).
REMOTE_ENV = "PROCWINDOW_REMOTE"
#: Seconds a new connection may take to answer ``hello`` (ssh's handshake included).
CONNECT_TIMEOUT = 30.0
#: The exit status of ``procwindow ctl bridge`` when no server listens (ctl's).
BRIDGE_NO_SERVER = 3
#: ssh's own exit status for its failures (as opposed to the remote command's).
_SSH_FAILED = 255
#: A shell's "command not found".
_NOT_FOUND = 127
#: ssh options that come after the user's (the first value of an option wins):
#: never prompt, and notice a dead link within half a minute.
_SSH_DEFAULTS = (
    "-T",
    "-o",
    "BatchMode=yes",
    "-o",
    "ServerAliveInterval=10",
    "-o",
    "ServerAliveCountMax=3",
    "-o",
    "ConnectTimeout=15",
)


class LinkError(ProcwindowError):
    """A supervisor cannot be reached: the message is one line that says why."""


class NoServer(LinkError):
    """Nothing answers where the server should be (no ``procwindow serve``,
    window or MCP server runs with that name)."""


class SshFailed(LinkError):
    """ssh itself failed: the host is unknown or down, the key was refused,
    the host key does not match. The message ends with ssh's own last line."""


class RemoteNotInstalled(LinkError):
    """The host has no ``procwindow`` on the PATH of ssh's non-interactive shell."""


class Disconnected(LinkError):
    """The link is down (it is being restored): the action was not carried out,
    or its outcome is unknown."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where a server is: a socket path here, or a server name on an ssh host."""

    path: str | None = None
    host: str | None = None
    user: str | None = None
    port: int | None = None
    name: str = DEFAULT_SERVER_NAME

    @property
    def label(self) -> str:
        """The server, named for a person: ``ci on me@build:2222``; here, its
        name (a socket's file name without ``.sock``).

        >>> parse_target("ssh://me@build:2222/ci").label, parse_target("/run/x/api.sock").label
        ('ci on me@build:2222', 'api')
        """
        if self.host is None:
            base = os.path.basename(self.path or "")
            return base.removesuffix(".sock") or base
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{self.name} on {user}{self.host}{port}"

    def __str__(self) -> str:
        if self.host is None:
            return self.path or ""
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"ssh://{user}{self.host}{port}/{self.name}"


def parse_target(text: str | None) -> Target:
    """A target from the command line: None or ``""`` is the default server here.

    >>> parse_target("ssh://me@build:2222/ci")
    Target(path=None, host='build', user='me', port=2222, name='ci')
    >>> str(parse_target("ssh://build"))
    'ssh://build/default'
    """
    if not text:
        return Target(path=_socket_of(DEFAULT_SERVER_NAME))
    if text.startswith("ssh://"):
        return _parse_ssh(text)
    if "://" in text:
        raise LinkError(f"{text}: only ssh:// reaches another machine")
    if "/" in text:
        return Target(path=text)
    try:
        check_name(text)
    except SocketDirError as exc:
        raise LinkError(str(exc)) from None
    return Target(path=_socket_of(text), name=text)


def _socket_of(name: str) -> str:
    try:
        return default_socket_path(name, create=False)
    except ProcwindowError as exc:
        raise NoServer(str(exc)) from None


def _parse_ssh(text: str) -> Target:
    try:
        url = urlsplit(text)
        port = url.port
    except ValueError as exc:
        raise LinkError(f"{text}: {exc}") from None
    host = url.hostname
    if not host or url.query or url.fragment or url.password is not None:
        raise LinkError(f"{text}: give ssh://[user@]host[:port][/NAME]")
    name = unquote(url.path.strip("/")) or DEFAULT_SERVER_NAME
    try:
        check_name(name)
    except SocketDirError as exc:
        raise LinkError(f"{text}: {exc}") from None
    user = unquote(url.username) if url.username else None
    return Target(host=host, user=user, port=port, name=name)


class Link(Protocol):
    """Opens connections to one server."""

    @property
    def where(self) -> str:
        """The server, for messages."""
        ...

    async def open(self) -> AsyncClient:
        """A new connection whose ``hello`` was answered; LinkError if none."""
        ...

    async def aclose(self) -> None:
        """Let go of whatever helps the connections (ssh processes): call
        after closing every connection."""
        ...

    def warm_up(self) -> None:
        """Make the next link to this server quick to open, if it can be."""
        ...

    @property
    def server_pid(self) -> int | None:
        """The server's pid as its last ``hello`` gave it (a new one: it restarted)."""
        ...


class VersionMismatch(LinkError):
    """The server speaks no protocol version this client speaks.

    ``client`` is the version this client speaks, ``server`` those the server does.
    """

    def __init__(self, where: str, server: Sequence[int]) -> None:
        spoken = ", ".join(str(v) for v in server) or "none it says"
        super().__init__(
            f"{where}: this client speaks protocol {PROTOCOL_VERSION}, the server speaks"
            f" {spoken}: use the same procwindow on both sides"
        )
        self.client = PROTOCOL_VERSION
        self.server = tuple(server)


async def _hello(client: AsyncClient, where: str) -> int | None:
    """Ask the server which protocol versions it speaks (LinkError when this
    client speaks none of them, or it does not answer as a procwindow server);
    the server's pid."""
    try:
        reply = await client.call("hello")
    except ServerError as exc:
        if exc.type == "ConnectionClosed":
            raise  # the link knows why (an ssh bridge with no server behind it…)
        client.abort()
        raise LinkError(f"{where}: the server refused hello: {exc.message}") from None
    spoken = spoken_versions(reply)
    if spoken is None:
        client.abort()
        raise LinkError(f"{where}: the server does not answer as procwindow does")
    if PROTOCOL_VERSION not in spoken:
        client.abort()
        raise VersionMismatch(where, spoken)
    pid = reply.get("pid")
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


def spoken_versions(hello: object) -> list[int] | None:
    """The protocol versions a ``hello`` reply says the server speaks (servers
    before version 5 name one, ``protocol``); None for a reply that is no hello's."""
    if not isinstance(hello, dict):
        return None
    versions = hello.get("protocols", [hello.get("protocol")])
    if not isinstance(versions, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in versions
    ):
        return None
    return versions or None


class LocalLink:
    """Connections to a Unix socket on this machine."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.server_pid: int | None = None

    @property
    def where(self) -> str:
        return self.path

    async def open(self) -> AsyncClient:
        try:
            client = await AsyncClient.connect(self.path)
        except CannotConnect as exc:
            raise NoServer(str(exc)) from None
        try:
            self.server_pid = await asyncio.wait_for(_hello(client, self.path), CONNECT_TIMEOUT)
        except (ServerError, TimeoutError) as exc:
            client.abort()
            raise NoServer(f"{self.path}: the server does not answer ({exc})") from None
        return client

    async def aclose(self) -> None:
        pass

    def warm_up(self) -> None:
        pass  # a Unix socket connects in microseconds


class SshLink:
    """Connections to server ``name`` on ``host`` through the system's ssh.

    ``ssh_command``: the ssh command and options before ours (default: the
    split ``$PROCWINDOW_SSH``, else ``ssh``), e.g. ``["ssh", "-F", config]``.
    ``remote_procwindow``: the procwindow command on the host (default
    ``$PROCWINDOW_REMOTE``, else ``procwindow``), e.g. a venv's absolute path.
    """

    def __init__(
        self,
        target: Target,
        *,
        ssh_command: list[str] | None = None,
        remote_procwindow: str | None = None,
    ) -> None:
        assert target.host is not None
        self.target = target
        self.ssh_command = list(ssh_command or shlex.split(os.environ.get(SSH_ENV, "")) or ["ssh"])
        self.remote_procwindow = (
            remote_procwindow or os.environ.get(REMOTE_ENV) or "procwindow"
        ).strip()
        self._procs: set[SshProcess] = set()
        #: The host's ssh master this link's connections ride on (``_ssh_master``).
        self._master: Master | None = None
        self.server_pid: int | None = None
        self._closed = False
        #: Opening a connection ahead, to park on the master (``warm_up``).
        self._warming: asyncio.Task[None] | None = None
        #: warm_up was asked for: each open parks again what another link took.
        self._warm_wanted = False

    @property
    def where(self) -> str:
        return str(self.target)

    def _options(self) -> list[str]:
        """The ssh command and its options, up to the host."""
        t = self.target
        argv = [*self.ssh_command, *_SSH_DEFAULTS]
        if t.port:
            argv += ["-p", str(t.port)]
        if t.user:
            argv += ["-l", t.user]
        return argv

    def argv(self, via: Sequence[str] = ()) -> list[str]:
        """The ssh command line of one connection (``via``: on a master)."""
        t = self.target
        remote = [*shlex.split(self.remote_procwindow), "ctl", "bridge", t.name]
        assert t.host is not None
        return [*self._options(), *via, "--", t.host, shlex.join(remote)]

    async def _via(self) -> list[str]:
        """The options that put the next connection on the host's master; none
        (a connection of its own) where no master can be had."""
        master = self._master
        if master is not None and not master.alive:  # the link was cut
            self._master = None
            await release(master)
            master = None
        if master is None:
            assert self.target.host is not None
            master = await acquire(tuple(self._options()), self.target.host, CONNECT_TIMEOUT)
            if self._closed:  # closed while the master started: it is not ours to keep
                if master is not None:
                    await release(master)
                raise LinkError(f"{self.where}: the link is closed")
            if self._master is not None:  # an open beside this one took it first
                if master is not None:
                    await release(master)
                master = self._master
            self._master = master
        return master.options() if master is not None else []

    async def open(self) -> AsyncClient:
        if self._closed:
            raise LinkError(f"{self.where}: the link is closed")
        via = await self._via()
        master = self._master
        warm = master.take(self.argv()[-1]) if master is not None else None
        if warm is not None:
            client, helper, pid = warm
            if client.usable and not helper.done.done():
                self._adopt(helper)
                self.server_pid = pid
            else:
                await close_warm(client, helper)
                warm = None
        if warm is None:
            client, helper = await self._connect(via)
            self._adopt(helper)
        if self._warm_wanted:
            self.warm_up()  # park again what was taken
        return client

    def warm_up(self) -> None:
        """Open connections ahead and park them on the host's master, for the
        next link to this server to take (``open``): a second attach then starts
        no ssh session. PARKED per server and host, and only while this link is
        the master's one user: an sshd serves 10 sessions on one connection
        (MaxSessions), and several attached servers would use them up ahead."""
        self._warm_wanted = True
        master = self._master
        if master is None or self._closed:
            return
        master.warmers[id(self)] = self.warm_up
        if self._warming is not None or master.users > 1:
            return
        if master.parked(self.argv()[-1]) < PARKED:
            self._warming = asyncio.get_running_loop().create_task(self._warm(master))

    async def _warm(self, master: Master) -> None:
        command = self.argv()[-1]
        try:
            while (
                master.parked(command) < PARKED
                and master.users == 1
                and not self._closed
                and master.alive
            ):
                client, helper = await self._connect(master.options())
                warm = (client, helper, self.server_pid)
                if self._closed or not master.park(command, warm, partial(close_warm, *warm[:2])):
                    await close_warm(client, helper)
                    return
        except Exception as exc:  # none ahead, then: the next link opens its own
            log.debug("no connection ahead to %s: %s", self.where, exc)
        finally:
            self._warming = None

    def _adopt(self, helper: SshProcess) -> None:
        self._procs.add(helper)
        helper.done.add_done_callback(lambda _: self._procs.discard(helper))

    async def _connect(self, via: list[str]) -> tuple[AsyncClient, SshProcess]:
        """A new connection whose ``hello`` was answered, and its ssh process."""
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                # As fast as posix_spawn and thread-free; asyncio's subprocesses
                # would start a watcher thread per ssh on Python 3.11.
                proc = subprocess.Popen(  # noqa: ASYNC220
                    self.argv(via),
                    stdin=theirs.fileno(),
                    stdout=theirs.fileno(),
                    stderr=subprocess.PIPE,
                    start_new_session=True,  # Ctrl+C in our terminal is ours to handle
                )
            except OSError as exc:
                raise SshFailed(
                    f"cannot run {self.ssh_command[0]}: {exc.strerror or exc}"
                ) from None
            finally:
                theirs.close()
            helper = SshProcess(proc, loop)
        except BaseException:
            ours.close()
            raise

        async def opener(limit: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await asyncio.open_unix_connection(sock=ours, limit=limit)

        try:
            client = await AsyncClient.connect(self.where, limit=READ_LIMIT, opener=opener)
        except BaseException:
            ours.close()
            await helper.finish()
            raise
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                self.server_pid = await _hello(client, self.where)
        except (ServerError, TimeoutError) as exc:
            client.abort()
            raise await self._diagnose(helper, exc) from None
        except BaseException:
            client.abort()
            await helper.finish(0)
            raise
        return client, helper

    async def _diagnose(self, helper: SshProcess, exc: Exception) -> LinkError:
        """Why the connection failed, from ssh's exit status and its last line."""
        if isinstance(exc, TimeoutError):
            await helper.finish(0)
            return SshFailed(f"{self.where}: no answer within {CONNECT_TIMEOUT:g} s")
        status = await helper.finish(CONNECT_TIMEOUT)
        line = helper.last_line
        host = self.target.host
        if status == _SSH_FAILED:
            return SshFailed(f"ssh {host} failed: {line or 'exit status 255'}")
        if status == _NOT_FOUND:
            if "/" in self.remote_procwindow:  # a path: the shell looked nowhere else
                return RemoteNotInstalled(
                    f"{host} has no {self.remote_procwindow!r}"
                    f" ({line or 'no such file'}); check the path given to --remote-procwindow"
                )
            return RemoteNotInstalled(
                f"{host} has no {self.remote_procwindow!r} on the PATH of ssh's shell"
                f" ({line or 'command not found'}); give its path with --remote-procwindow"
            )
        if status == BRIDGE_NO_SERVER:
            return NoServer(f"{host}: {line or f'no procwindow server named {self.target.name}'}")
        why = line or (exc.message if isinstance(exc, ServerError) else str(exc))
        return LinkError(f"ssh {host}: the bridge ended (exit status {status}): {why}")

    async def aclose(self) -> None:
        self._closed = True
        if self._warming is not None:
            self._warming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._warming
        procs = list(self._procs)
        if procs:
            await asyncio.gather(*(p.finish() for p in procs), return_exceptions=True)
        master, self._master = self._master, None
        if master is not None:
            master.warmers.pop(id(self), None)
            await release(master)

    def pids(self) -> list[int]:
        """The pids of its ssh processes now, its master's first (tests cut the
        link by killing them)."""
        pids = [p.proc.pid for p in self._procs if not p.done.done()]
        if self._master is not None and self._master.proc.poll() is None:
            pids.insert(0, self._master.proc.pid)
        return pids


def make_link(
    target: str | Target | None,
    *,
    ssh_command: list[str] | None = None,
    remote_procwindow: str | None = None,
) -> LocalLink | SshLink:
    """The link to a target (see :func:`parse_target`)."""
    t = target if isinstance(target, Target) else parse_target(target)
    if t.host is not None:
        return SshLink(t, ssh_command=ssh_command, remote_procwindow=remote_procwindow)
    assert t.path is not None
    return LocalLink(t.path)
