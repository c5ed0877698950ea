"""What the Qt adapters share: the supervisor they default to, the asyncio loop,
the task that feeds supervisor events to a model, and the values ``data()``
answers for roles a model does not serve."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from PySide6.QtCore import Property, QObject, QSize, Qt, QTimer, Signal

from procwindow.core import InvalidScope
from procwindow.core.rules import check_scope_name, scope_pattern

if TYPE_CHECKING:
    from procwindow.core import Event, Subscription, SupervisorAPI

__all__ = [
    "EventPump",
    "Later",
    "Lifeline",
    "connect_all",
    "constant_property",
    "current_loop",
    "default_supervisor",
    "empty_data",
    "format_bytes",
    "plural",
    "qt_property",
    "resolve_supervisor",
    "scope_events",
    "scope_properties",
    "set_default_supervisor",
    "set_stored",
    "stored_property",
]

log = logging.getLogger("procwindow.qt")

T = TypeVar("T")


def qt_property(
    type_: type | str,
    fget: Callable[[Any], T],
    fset: Callable[[Any, T], None] | None = None,
    *,
    notify: Signal,
) -> T:
    """A Qt ``Property``, typed for Python callers as the value it holds.

    PySide's stubs type ``model.session`` as a ``Property`` object; through this,
    type checkers see a ``str``, as Python code reading or setting it gets.
    ``type_`` is a Python type or a Qt type name (``"qint64"``).
    """
    if fset is None:
        return cast(T, Property(type_, fget, notify=notify))  # type: ignore[arg-type]
    return cast(T, Property(type_, fget, fset, notify=notify))  # type: ignore[arg-type]


def stored_property(
    type_: type | str,
    attr: str,
    notify: Signal,
    *,
    writable: bool = True,
    on_change: Callable[[Any], None] | None = None,
) -> Any:
    """A Qt ``Property`` kept in ``self.<attr>`` that emits ``notify`` only on change.

    Replaces the hand-written getter/setter pair::

        sessionChanged = Signal()
        session = stored_property(str, "_session", sessionChanged)

    ``on_change(self)`` runs after the value changed, before ``notify`` fires.
    ``writable=False`` gives a read-only property (Python code sets the
    attribute and calls :func:`set_stored` to notify).
    """

    def fget(self: Any) -> Any:
        return getattr(self, attr)

    def fset(self: Any, value: Any) -> None:
        if getattr(self, attr) == value:
            return
        setattr(self, attr, value)
        if on_change is not None:
            on_change(self)
        notify.__get__(self, type(self)).emit()

    if writable:
        return Property(type_, fget, fset, notify=notify)  # type: ignore[arg-type]
    return Property(type_, fget, notify=notify)  # type: ignore[arg-type]


def constant_property(type_: type, attr: str) -> Any:
    """A constant Qt ``Property`` that reads ``self.<attr>`` (an object a view-model
    made or was given: its models, its forms)::

        outputModel = constant_property(OutputModel, "_output")
    """
    return Property(type_, lambda self: getattr(self, attr), constant=True)


def scope_properties(session_changed: Signal, agent_changed: Signal) -> tuple[str, str]:
    """The ``session`` and ``agent`` Qt properties of an object with a scope.

    They read ``self._session`` and ``self._agent``; setting one calls
    ``self.setScope(session, agent)`` with the other unchanged, so that a class
    has one place where its scope changes::

        session, agent = scope_properties(sessionChanged, agentChanged)
    """

    def set_session(self: Any, session: str) -> None:
        self.setScope(session, self._agent)

    def set_agent(self: Any, agent: str) -> None:
        self.setScope(self._session, agent)

    session = Property(str, lambda self: self._session, set_session, notify=session_changed)
    agent = Property(str, lambda self: self._agent, set_agent, notify=agent_changed)
    # Typed as the values they hold, for Python callers (see qt_property).
    return cast(str, session), cast(str, agent)


def scope_events(session: str, agent: str) -> str | None:
    """The event pattern of the procs of ``(session, agent)`` (``agent == ""``:
    any agent), or None when they are no names that can hold processes."""
    try:
        check_scope_name("session", session)
        if agent:
            check_scope_name("agent", agent)
    except InvalidScope:
        return None
    return scope_pattern(session, agent or None)


def connect_all(connections: list[tuple[Any, Callable[..., None]]]) -> list[Callable[[], None]]:
    """Connect each ``(signal, slot)`` pair; return what disconnects each again."""
    undo: list[Callable[[], None]] = []
    for signal, slot in connections:
        signal.connect(slot)
        undo.append(functools.partial(signal.disconnect, slot))
    return undo


def set_stored(obj: Any, attr: str, value: object, notify: Signal) -> bool:
    """Set ``obj.<attr>`` and emit ``notify`` (a class-level Signal) if it changed."""
    if getattr(obj, attr) == value:
        return False
    setattr(obj, attr, value)
    notify.__get__(obj, type(obj)).emit()
    return True


_default: SupervisorAPI | None = None


def set_default_supervisor(supervisor: SupervisorAPI | None) -> None:
    """The supervisor used by models and controllers created without one.

    QML creates registered types with no arguments (``ProcModel { session: "s1" }``),
    so an application that lets QML create them sets this once, before loading QML.
    """
    global _default
    _default = supervisor


def default_supervisor() -> SupervisorAPI | None:
    """The supervisor set by :func:`set_default_supervisor`, or None."""
    return _default


def resolve_supervisor(supervisor: SupervisorAPI | None, owner: str) -> SupervisorAPI:
    """``supervisor``, else the default one; a clear error when there is neither."""
    if supervisor is not None:
        return supervisor
    if _default is None:
        raise RuntimeError(
            f"{owner} needs a Supervisor: pass one, or call "
            "procwindow.qt.set_default_supervisor() before QML creates it"
        )
    return _default


def current_loop() -> asyncio.AbstractEventLoop:
    """The asyncio loop the Qt adapters schedule their tasks on (qasync's).

    The running loop when called from a coroutine, else the loop set with
    ``asyncio.set_event_loop`` (an application builds its models before it starts
    the loop, the way qasync's examples do).
    """
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    # Not running: get_event_loop returns the loop that was set, without a warning.
    return asyncio.get_event_loop()


class EventPump:
    """Feeds a handler the supervisor events of one pattern, from a task on the loop.

    The task reads the subscription and hands the handler every event that is
    queued at that moment as one list, so a burst costs one model update. It
    holds the handler weakly: a model that is garbage-collected is not kept
    alive by its own subscription, and its pump then stops at the next event.
    ``close()`` ends the subscription and cancels the task; it is idempotent.
    ``proc``: only that proc's events.
    """

    def __init__(
        self,
        supervisor: SupervisorAPI,
        pattern: str,
        handler: Callable[[list[Event]], None],
        *,
        proc: int | None = None,
    ) -> None:
        self.pattern = pattern
        self._subscription = supervisor.subscribe(pattern, proc=proc)
        # A bound method dies with its instance at once: weakly ref the instance.
        ref: Callable[[], Callable[[list[Event]], None] | None] = (
            weakref.WeakMethod(handler) if hasattr(handler, "__self__") else weakref.ref(handler)
        )
        self._task: asyncio.Task[None] = current_loop().create_task(
            _pump(self._subscription, ref), name=f"procwindow.qt events {pattern}"
        )

    @property
    def task(self) -> asyncio.Task[None]:
        """The task reading the subscription (done once closed)."""
        return self._task

    @property
    def closed(self) -> bool:
        """True once the subscription ended (closed here, or by the supervisor's close)."""
        return self._subscription.closed

    def close(self) -> None:
        """End the subscription and cancel the task."""
        self._subscription.close()
        # Cancelling schedules a callback: not possible once the loop is closed,
        # and then the task can never run again anyway.
        if not self._task.done() and not self._task.get_loop().is_closed():
            self._task.cancel()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<EventPump {self.pattern!r} {state}>"


async def _pump(
    subscription: Subscription, handler_ref: Callable[[], Callable[[list[Event]], None] | None]
) -> None:
    async for first in subscription:
        batch = [first]
        while (event := subscription.get_nowait()) is not None:
            batch.append(event)
        handler = handler_ref()
        if handler is None:  # the model is gone
            subscription.close()
            return
        try:
            handler(batch)
        except Exception:
            # A bug in one update must not stop the model from hearing later events.
            log.exception("procwindow.qt: handling events for %s failed", subscription.pattern)
        del handler


class Lifeline:
    """The closables of one QObject, closed when the object is destroyed or collected.

    Connected to ``destroyed`` (a QML-owned or parent-owned object deleted by C++)
    and to a ``weakref.finalize`` (a Python-owned object collected), through a
    plain function that holds this Lifeline and not the QObject.
    """

    def __init__(self, owner: QObject) -> None:
        self._items: list[EventPump] = []
        self._callbacks: list[Callable[[], None]] = []
        owner.destroyed.connect(functools.partial(_close_lifeline, self))
        weakref.finalize(owner, _close_lifeline, self)

    def hold(self, pump: EventPump) -> EventPump:
        """Close ``pump`` with the owner; return it."""
        self._items.append(pump)
        return pump

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (a listener's remover) with the owner's end."""
        self._callbacks.append(callback)

    def release(self, pump: EventPump | None) -> None:
        """Close ``pump`` now (a model that changes scope closes its old pump)."""
        if pump is None:
            return
        pump.close()
        with contextlib.suppress(ValueError):
            self._items.remove(pump)

    def close(self) -> None:
        """Close everything held."""
        items, self._items = self._items, []
        for item in items:
            item.close()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


def _close_lifeline(lifeline: Lifeline, *_: object) -> None:
    lifeline.close()


_ALIGN_TEXT = int((Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter).value)


def empty_data(role: int) -> object:
    """What ``data()``/``headerData()`` answer for a role they do not serve.

    An invalid QVariant would be the usual answer, but PySide can only make one
    from a Python ``None``, and returning ``None`` from a Qt virtual loses a
    reference to it on some PySide releases (DESIGN.md). So: an empty value of
    the type Qt expects for the role, and an empty string for any other.
    """
    match role:
        case Qt.ItemDataRole.SizeHintRole:
            return QSize()
        case Qt.ItemDataRole.TextAlignmentRole:
            return _ALIGN_TEXT
        case _:
            return ""


_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def format_bytes(n: int) -> str:
    """A byte count for people: ``"512 B"``, ``"12.3 MiB"``.

    >>> format_bytes(512), format_bytes(12_900_000)
    ('512 B', '12.3 MiB')
    """
    if n < 1024:
        return f"{max(n, 0)} B"
    value = float(n)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def plural(count: int, one: str, many: str) -> str:
    """``"1 line"``, ``"3 lines"``: ``one`` for a count of 1, else ``many`` after the count.

    >>> plural(1, "line", "lines"), plural(0, "line", "lines")
    ('1 line', '0 lines')
    """
    return f"{count} {one if count == 1 else many}"


class Later:
    """Runs ``slot`` once, soon: after the events queued now, as QML's ``Qt.callLater``.

    Requests made before it runs are one run; ``stop()`` cancels a pending run.
    """

    def __init__(self, owner: QObject, slot: Callable[[], None]) -> None:
        self._owner = owner
        self._slot = slot
        self._pending = False

    def start(self) -> None:
        """Run ``slot`` soon (once, however often this is called before it runs)."""
        if not self._pending:
            self._pending = True
            # A zero timeout is a queued call, behind the events already posted.
            QTimer.singleShot(0, self._owner, self._run)

    def stop(self) -> None:
        """Do not run ``slot`` for the requests made so far."""
        self._pending = False

    def _run(self) -> None:
        if self._pending:
            self._pending = False
            self._slot()
