"""The supervisors a window is attached to: their links, opened, shown and closed.

``procwindow attach A B``, ``procwindow --attach A`` and a workspace file's
``attach = [...]`` name servers elsewhere (a name or socket path here, or
``ssh://[user@]host[:port][/NAME]``). Each one reached becomes a host of the
window (:meth:`procwindow.qt.mainwindow.Workspace.add_host`): a node of the session
tree with its sessions below, whose actions go to that server. One that
cannot be reached is reported in one line and the others go on: if nothing
answers there yet (no server runs, the host is down) it is shown all the same,
greyed, and reached again with backoff, as one whose link drops later is.
Detaching, or closing the window, closes the links and stops nothing there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from procwindow.control import parse_target
from procwindow.control.remote import LinkError, NoServer, RemoteSupervisor, SshFailed
from procwindow.core import ProcwindowError

if TYPE_CHECKING:
    from procwindow.qt.mainwindow import Workspace

__all__ = ["PASSING", "AlreadyShown", "Attached", "Attachments", "connect", "reach_later"]

#: Failures that may pass by themselves (no server answers there yet, the host is
#: down or refuses connections): such a server is shown, and reached again.
PASSING = (NoServer, SshFailed)


class AlreadyShown(ProcwindowError):
    """The window shows that server already."""


@dataclass(frozen=True)
class Attached:
    """A server reached: its supervisor, its key (where it is) and its label."""

    remote: RemoteSupervisor
    key: str
    label: str

    async def scopes(self) -> dict[str, list[str]]:
        """Its sessions and agents, to show before their processes start."""
        return await self.remote.sessions()


async def connect(
    target: str, *, ssh_command: Sequence[str] | None = None, remote_procwindow: str | None = None
) -> Attached:
    """Reach ``target`` ("": the default server here); LinkError (a one-line
    message) if it cannot be."""
    where = parse_target(target)
    remote = await RemoteSupervisor.connect(
        where, ssh_command=ssh_command, remote_procwindow=remote_procwindow
    )
    return Attached(remote, str(where), where.label)


def reach_later(
    target: str,
    error: LinkError,
    *,
    ssh_command: Sequence[str] | None = None,
    remote_procwindow: str | None = None,
) -> Attached:
    """``target`` could not be reached (``error``, one of PASSING): a supervisor
    for it that reaches it in the background, with backoff."""
    where = parse_target(target)
    remote = RemoteSupervisor(
        where,
        ssh_command=list(ssh_command) if ssh_command is not None else None,
        remote_procwindow=remote_procwindow,
    )
    remote.open_later(str(error))
    return Attached(remote, str(where), where.label)


class Attachments:
    """The servers one window is attached to.

    ``start(targets)`` reaches each in the background and shows it once it
    answers; ``report(message, is_error)`` hears what happened (the window's
    status line). ``detach(key)`` stops showing one and closes its link;
    ``close()`` does so for all (nothing there stops).
    """

    def __init__(
        self,
        workspace: Workspace,
        report: Callable[[str, bool], None],
        *,
        ssh_command: Sequence[str] | None = None,
        remote_procwindow: str | None = None,
    ) -> None:
        self._workspace = workspace
        self._report = report
        self._ssh_command = ssh_command
        self._remote_procwindow = remote_procwindow
        self._remotes: dict[str, RemoteSupervisor] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        workspace.detachRequested.connect(self._on_detach)
        workspace.view_model.attach_form.set_attacher(self.attach)

    @property
    def remotes(self) -> dict[str, RemoteSupervisor]:
        """The supervisors shown, by key."""
        return dict(self._remotes)

    async def show(self, attached: Attached) -> str:
        """Show a server reached already, or being reached (its link is this
        object's to close); return its label. AlreadyShown (its link closed) if
        it is shown."""
        key = attached.key
        if key in self._remotes or self._workspace.tree_model.host(key) is not None:
            await attached.remote.close()
            raise AlreadyShown(f"{attached.label} is shown already")
        self._remotes[key] = attached.remote
        try:
            scopes = await attached.scopes()
        except ProcwindowError:
            scopes = {}
        self._workspace.add_host(attached.remote, key, attached.label, scopes=scopes)
        if attached.remote.connected:
            self._report(f"Attached to {attached.label}", False)
        return attached.label

    async def attach(self, target: str) -> str:
        """Reach ``target`` and show it; its label. LinkError or AlreadyShown
        (one line each) when that cannot be (the Attach dialog shows it)."""
        attached = await connect(
            target, ssh_command=self._ssh_command, remote_procwindow=self._remote_procwindow
        )
        return await self.show(attached)

    def start(self, targets: Sequence[str]) -> None:
        """Reach each of ``targets`` in the background; show each that answers."""
        for target in targets:
            task = asyncio.get_running_loop().create_task(
                self._attach(target), name=f"procwindow attach {target}"
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _attach(self, target: str) -> None:
        try:
            await self.attach(target)
        except PASSING as exc:
            await self.show_later(target, exc)
        except LinkError as exc:
            self._report(f"cannot attach {target}: {exc}", True)
        except AlreadyShown as exc:
            self._report(str(exc), True)

    async def show_later(self, target: str, error: LinkError) -> None:
        """Show ``target``, which could not be reached (``error``): greyed, and
        reached again with backoff."""
        attached = reach_later(
            target,
            error,
            ssh_command=self._ssh_command,
            remote_procwindow=self._remote_procwindow,
        )
        try:
            await self.show(attached)
        except AlreadyShown as exc:
            self._report(str(exc), True)
            return
        self._report(f"cannot reach {attached.label} yet, trying again: {error}", True)

    def _on_detach(self, key: str) -> None:
        task = asyncio.get_running_loop().create_task(self.detach(key), name="procwindow detach")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def detach(self, key: str) -> None:
        """Stop showing the server of ``key`` and close its link."""
        remote = self._remotes.pop(key, None)
        if remote is None:
            return
        host = self._workspace.remove_host(key)
        await remote.close()
        if host is not None:
            self._report(f"Detached from {host.label}", False)

    async def close(self) -> None:
        """Stop reaching, and close every link (the window is going away)."""
        self._workspace.view_model.attach_form.set_attacher(None)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        remotes, self._remotes = list(self._remotes.values()), {}
        for remote in remotes:
            await remote.close()
