"""Embedding a ProcWindow in a Qt program, and loading the window's QML module.

A host application that already runs qasync and a
:class:`~procwindow.core.Supervisor` opens a ProcWindow on one scope::

    from procwindow.qt.window import open_proc_window

    window = open_proc_window(supervisor, "build", "compiler")

The QML is the module :data:`QML_MODULE` (``import Procwindow.Ui``), found under
:func:`procwindow._paths.qml_dir` (``qml/Procwindow/Ui/`` in a checkout); the
Python types it uses are ``import Procwindow``, registered by :mod:`procwindow.qt`.
:func:`prepare_engine` adds the import path to an engine, and
:func:`load_component` compiles a type of the module once per engine.

Importing this module loads Qt and :mod:`procwindow.qt`, and nothing of the
``procwindow`` application (its command line, control socket or demo workspace).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtGui import QGuiApplication
from PySide6.QtQml import QQmlComponent, QQmlEngine
from PySide6.QtQuick import QQuickWindow
from PySide6.QtQuickControls2 import QQuickStyle

from procwindow._paths import qml_dir
from procwindow.core import SupervisorAPI

from .controller import ActiveScope, ProcController, StatsSampler
from .models import OutputModel, ProcModel
from .viewmodel import ProcWindowModel

__all__ = [
    "QML_MODULE",
    "QUICK_STYLE",
    "close_proc_windows",
    "ensure_style",
    "find_proc_window",
    "load_component",
    "open_proc_window",
    "prepare_engine",
    "proc_windows",
    "window_model",
]

#: The Qt Quick Controls style: a non-native one, so the customised controls
#: look the same everywhere.
QUICK_STYLE = "Fusion"
#: The URI of the window's QML module (``qml/Procwindow/Ui/qmldir``).
QML_MODULE = "Procwindow.Ui"


def ensure_style() -> None:
    """Use :data:`QUICK_STYLE` unless the environment or the host chose a style."""
    if not os.environ.get("QT_QUICK_CONTROLS_STYLE") and not QQuickStyle.name():
        QQuickStyle.setStyle(QUICK_STYLE)


def prepare_engine(engine: QQmlEngine) -> None:
    """Let ``engine`` import :data:`QML_MODULE` (and the type information beside it)."""
    path = str(qml_dir())
    if path not in engine.importPathList():
        engine.addImportPath(path)


def load_component(engine: QQmlEngine, type_name: str) -> QQmlComponent:
    """``type_name`` of :data:`QML_MODULE`, compiled once per engine and owned by it.

    Deleting a QQmlComponent deletes the objects it created, so it must live as
    long as any of them does: as the engine's child it does. Raises RuntimeError
    with the QML errors if the type does not load.
    """
    name = f"{QML_MODULE}.{type_name}"
    component = engine.findChild(QQmlComponent, name)
    if component is None:
        prepare_engine(engine)
        component = QQmlComponent(engine)
        component.loadFromModule(QML_MODULE, type_name)
        if component.isError():
            message = component.errorString()
            component.deleteLater()
            raise RuntimeError(f"cannot load {name}:\n{message}")
        component.setObjectName(name)
        component.setParent(engine)
    return component


@dataclass(eq=False)
class _OpenWindow:
    """A ProcWindow and its models (children of the window, deleted with it)."""

    window: QQuickWindow
    view_model: ProcWindowModel
    proc_model: ProcModel
    output_model: OutputModel
    stats: StatsSampler
    engine: QQmlEngine
    supervisor: SupervisorAPI

    def release(self) -> None:
        """Stop the models, close the window and delete it (idempotent)."""
        self._release(close=True)

    def on_finished(self) -> None:
        # The window is closing already: closing it again from its own handler
        # would re-enter QWindow::close.
        self._release(close=False)

    def _release(self, *, close: bool) -> None:
        if _open_windows.pop(id(self), None) is None:
            return
        self.view_model.close()
        self.proc_model.close()
        self.output_model.close()
        self.stats.procId = -1
        if close:
            self.window.close()
        self.window.deleteLater()


_open_windows: dict[int, _OpenWindow] = {}
# Engines open_proc_window made for itself, held until Qt deletes them. (Parenting
# one to the application instead crashes the first JS handler that runs in it.)
_own_engines: set[QQmlEngine] = set()


def open_proc_window(
    supervisor: SupervisorAPI,
    session: str,
    agent: str = "",
    engine: QQmlEngine | None = None,
    *,
    active_scope: ActiveScope | None = None,
    pinned: bool | None = None,
    where: str = "",
) -> QQuickWindow:
    """Open a ProcWindow on ``(session, agent)`` of ``supervisor`` and return it.

    ``agent=""`` shows every agent of the session. The window gets its own
    models, controller and :class:`~procwindow.qt.ProcWindowModel`, and deletes
    them, and itself, when it is closed (its ``finished`` signal then fires).
    Pass the host's ``engine`` to share it (else the window gets one of its own,
    deleted with it), and an :class:`~procwindow.qt.ActiveScope` for the window
    to follow while unpinned (without one it stays on its scope). ``where``
    names a supervisor that is not the host's own (``ci on build-box``): the
    title and the header say it. Call it with
    qasync's loop set as the asyncio event loop.

    >>> window = open_proc_window(supervisor, "build", "compiler")  # doctest: +SKIP
    >>> window.title()  # doctest: +SKIP
    'Processes - build/compiler'
    """
    ensure_style()
    owns_engine = engine is None
    if engine is None:
        engine = QQmlEngine()
        _own_engines.add(engine)
        engine.destroyed.connect(functools.partial(_own_engines.discard, engine))
    try:
        component = load_component(engine, "ProcWindow")
    except RuntimeError:
        if owns_engine:
            engine.deleteLater()
        raise
    proc_model = ProcModel(supervisor, session, agent)
    output_model = OutputModel(supervisor)
    output_model.darkBackground = True
    stats = StatsSampler(supervisor)
    controller = ProcController(supervisor)
    view_model = ProcWindowModel(
        proc_model, output_model, stats, controller, active_scope, pinned=pinned, where=where
    )
    properties: dict[str, Any] = {"viewModel": view_model}
    window = component.createWithInitialProperties(properties)
    if not isinstance(window, QQuickWindow):
        view_model.close()
        proc_model.close()
        output_model.close()
        if owns_engine:
            engine.deleteLater()
        raise RuntimeError("cannot create a ProcWindow:\n" + component.errorString())
    # The models go with the window, after its items (which bind to them).
    for obj in (view_model, proc_model, output_model, stats, controller):
        obj.setParent(window)
    if owns_engine:
        window.destroyed.connect(engine.deleteLater)
    handle = _OpenWindow(window, view_model, proc_model, output_model, stats, engine, supervisor)
    _open_windows[id(handle)] = handle
    window.finished.connect(handle.on_finished)  # type: ignore[attr-defined]
    window.show()
    window.requestActivate()
    return window


def proc_windows() -> list[QQuickWindow]:
    """The ProcWindows open now, oldest first."""
    return [handle.window for handle in _open_windows.values()]


def window_model(window: QObject) -> ProcWindowModel:
    """The :class:`~procwindow.qt.ProcWindowModel` of an open ProcWindow (LookupError if none)."""
    for handle in _open_windows.values():
        if handle.window is window:
            return handle.view_model
    raise LookupError(f"not an open ProcWindow: {window!r}")


def find_proc_window(
    engine: QQmlEngine, session: str, agent: str, supervisor: SupervisorAPI | None = None
) -> QQuickWindow | None:
    """The open ProcWindow of ``engine`` that shows ``(session, agent)`` (of
    ``supervisor``, when given), raised; or None."""
    for handle in _open_windows.values():
        model = handle.proc_model
        if supervisor is not None and handle.supervisor is not supervisor:
            continue
        if handle.engine is engine and (model.session, model.agent) == (session, agent):
            if QGuiApplication.platformName() not in ("offscreen", "minimal"):
                handle.window.raise_()  # those two platforms warn that they cannot
            handle.window.requestActivate()
            return handle.window
    return None


def close_proc_windows(
    engine: QQmlEngine | None = None, supervisor: SupervisorAPI | None = None
) -> None:
    """Close (and release) every open ProcWindow, or those of ``engine`` (and
    of ``supervisor``)."""
    for handle in list(_open_windows.values()):
        if supervisor is not None and handle.supervisor is not supervisor:
            continue
        if engine is None or handle.engine is engine:
            handle.release()
