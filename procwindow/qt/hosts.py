"""Host: one supervisor of the main window, with the models and controller of its scopes.

The main window shows one supervisor or several: its own (in process), and
any it is attached to (a ``serve`` here, a window of another process, one on
another machine through ssh). Each is a :class:`Host`: the supervisor, the
tree of its sessions and agents, the scope selected on it, the controller its
actions go through and the overview of its selected scope. The
main window's model (:class:`~procwindow.qt.MainWindowModel`) switches
between them as the selection moves, so every action acts on the supervisor
its scope belongs to.

A host follows its supervisor's link (``where``, ``connected``,
``add_listener``): ``connected`` turns false while the link of a
:class:`~procwindow.control.remote.RemoteSupervisor` is down.
"""

from __future__ import annotations

from typing import cast

import shiboken6
from PySide6.QtCore import Property, QObject, Signal
from PySide6.QtQml import QmlElement, QmlUncreatable

from procwindow.core import SupervisorAPI

from ._support import stored_property
from .controller import ActiveScope, ProcController
from .models import ProcModel, SessionModel
from .notify import FailureNotifier

__all__ = ["LOCAL_KEY", "LOCAL_LABEL", "Host"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: The key and label of the window's own supervisor.
LOCAL_KEY = "local"
LOCAL_LABEL = "This window"


@QmlElement
@QmlUncreatable("the application makes a Host for each supervisor it shows")
class Host(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """One supervisor the main window shows.

    ``key`` names it in the window (unique there); ``label`` is what its node
    in the session tree reads (``This window``, ``ci on build-box``) and
    ``where`` says how it is reached (a socket path, ``ssh://…``; "" in
    process). ``scopes`` are sessions (and their agents) to show before any of
    their processes start. ``notify``: tell the desktop of its failures while
    no window has the focus. ``close()`` stops its models; the supervisor is
    its owner's to close.
    """

    connectedChanged = Signal()

    def __init__(
        self,
        supervisor: SupervisorAPI,
        key: str = LOCAL_KEY,
        label: str = LOCAL_LABEL,
        *,
        scopes: dict[str, list[str]] | None = None,
        notify: bool = False,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.supervisor = supervisor
        self._key = key
        self._label = label
        self.session_model = SessionModel(supervisor, self)
        for session, agents in (scopes or {}).items():
            self.session_model.addSession(session, agents)
        self.active_scope = ActiveScope(self)
        self.controller = ProcController(supervisor, self)
        self.overview_model = ProcModel(supervisor, parent=self)
        self.notifier = FailureNotifier(supervisor, self) if notify else None
        self._where = supervisor.where
        self._connected = supervisor.connected
        self._closed = False
        self._unlisten = supervisor.add_listener(self._on_link)

    def _get_key(self) -> str:
        return self._key

    def _get_label(self) -> str:
        return self._label

    def _get_where(self) -> str:
        return self._where

    # Typed as the values they hold, for Python callers (see qt_property).
    key = cast(str, Property(str, _get_key, constant=True))
    """The host's name in this window (``local`` for the window's own supervisor)."""
    label = cast(str, Property(str, _get_label, constant=True))
    """What its node in the session tree reads."""
    where = cast(str, Property(str, _get_where, constant=True))
    """How it is reached: a socket path or ``ssh://…``; "" for the window's own."""
    connected = stored_property(bool, "_connected", connectedChanged, writable=False)
    """False while the link to its supervisor is down (it reconnects by itself)."""

    @property
    def remote(self) -> bool:
        """True when the supervisor runs in another process (reached by a link)."""
        return bool(self._where)

    def _on_link(self, what: str) -> None:
        if what not in ("connected", "disconnected") or self._closed:
            return
        up = what == "connected"
        if shiboken6.isValid(self) and up != self._connected:
            self._connected = up
            self.connectedChanged.emit()

    def close(self) -> None:
        """Stop every model of this host (idempotent); the supervisor stays open."""
        if self._closed:
            return
        self._closed = True
        self._unlisten()
        self.session_model.close()
        self.overview_model.close()
        if self.notifier is not None:
            self.notifier.close()
