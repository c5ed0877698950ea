"""Driving the QML window as a person does: find items, click them, press keys, look.

Items are found by ``objectName`` in the window's item tree (popups live there
too, in the overlay). Clicks and keys go to the ``QQuickWindow`` through
``QTest``, at the item's position in the window, exactly as a real pointer's
events would arrive.

``QTest`` delivers an event and then processes pending events, and with qasync
that runs other tasks' steps: from inside the scenario's own task step asyncio
refuses ("Cannot enter into task ... while another task is being executed") and
the step is lost. So every input helper is a coroutine that makes the ``QTest``
call from a plain loop callback, outside any task, and waits for it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QWheelEvent
from PySide6.QtQuick import QQuickItem, QQuickWindow
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.core.helpers import py, until

__all__ = [
    "SCREENSHOTS",
    "click",
    "find_item",
    "find_items",
    "image_stats",
    "key",
    "move_mouse_away",
    "py",
    "save_screenshot",
    "settle",
    "type_text",
    "until",
    "until_equal",
    "wheel",
]

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "build" / "screenshots"


def _walk(item: QQuickItem) -> Iterator[QQuickItem]:
    todo = [item]
    while todo:
        current = todo.pop()
        yield current
        todo.extend(reversed(current.childItems()))


def find_items(window: QQuickWindow, prefix: str) -> list[QQuickItem]:
    """Visible items whose objectName starts with ``prefix``."""
    return [
        item
        for item in _walk(window.contentItem())
        if item.objectName().startswith(prefix) and item.isVisible()
    ]


def find_item(window: QQuickWindow, name: str) -> QQuickItem | None:
    """The visible item named ``name``, or None."""
    for item in _walk(window.contentItem()):
        if item.objectName() == name and item.isVisible():
            return item
    return None


async def item(window: QQuickWindow, name: str, timeout: float = 10.0) -> QQuickItem:
    """Wait for the visible item named ``name`` and return it."""
    found: list[QQuickItem] = []

    def look() -> bool:
        it = find_item(window, name)
        if it is not None:
            found.append(it)
        return it is not None

    await until(look, timeout=timeout, what=f"item {name!r}")
    return found[-1]


def center(item_: QQuickItem) -> QPoint:
    """The middle of an item, in window coordinates."""
    point = item_.mapToScene(QPointF(item_.width() / 2, item_.height() / 2))
    return point.toPoint()


async def outside_task(action: Callable[[], None]) -> None:
    """Run ``action`` from a plain loop callback (not inside a task step); wait for it."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def call() -> None:
        try:
            action()
        except BaseException as exc:  # handed to the awaiting scenario
            done.set_exception(exc)
        else:
            done.set_result(None)

    loop.call_soon(call)
    await done


async def click(
    window: QQuickWindow,
    item_: QQuickItem,
    button: Qt.MouseButton = Qt.MouseButton.LeftButton,
    modifiers: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier,
    at: QPointF | None = None,
) -> None:
    """Click ``item_`` (at its middle, or at ``at`` in its own coordinates)."""
    assert item_.isVisible(), f"{item_.objectName()} is not visible"
    assert item_.isEnabled(), f"{item_.objectName()} is disabled"
    pos = center(item_) if at is None else item_.mapToScene(at).toPoint()
    await outside_task(lambda: QTest.mouseClick(window, button, modifiers, pos))


async def move_mouse_away(window: QQuickWindow) -> None:
    """Park the pointer in a corner, so that no hover effect or tooltip shows."""
    corner = QPoint(2, window.height() - 2)
    await outside_task(lambda: QTest.mouseMove(window, corner))


async def key(
    window: QQuickWindow,
    code: Qt.Key,
    modifiers: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier,
) -> None:
    """Press and release one key in ``window``."""
    await outside_task(lambda: QTest.keyClick(window, code, modifiers))


async def type_text(window: QQuickWindow, text: str) -> None:
    """Type ``text`` into the focused item of ``window``."""

    def type_all() -> None:
        for char in text:
            QTest.keyClick(window, char)

    await outside_task(type_all)


async def wheel(window: QQuickWindow, item_: QQuickItem, notches: int) -> None:
    """Turn the mouse wheel over ``item_``: positive notches scroll up (back)."""
    pos = QPointF(center(item_))
    event = QWheelEvent(
        pos,
        QPointF(window.mapToGlobal(pos.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * notches),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    # Flickable reads the timestamps to tell wheel steps apart.
    event.setTimestamp(int(time.monotonic() * 1000))
    await outside_task(lambda: QApplication.sendEvent(window, event))


async def until_equal(
    get: Callable[[], object], expected: object, timeout: float = 10.0, what: str = ""
) -> None:
    """Poll ``get()`` until it equals ``expected``; the failure says what it last was."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while (last := get()) != expected:
        if loop.time() > end:
            raise AssertionError(f"{what or 'value'}: expected {expected!r}, last saw {last!r}")
        await asyncio.sleep(0.01)


async def settle(seconds: float = 0.05) -> None:
    """Let the loop run (timers, bindings, rendering) for a moment."""
    await asyncio.sleep(seconds)


def image_stats(image: QImage) -> tuple[int, float]:
    """(distinct colours, share of pixels that differ from the corner pixel), sampled."""
    background = image.pixel(0, image.height() - 1)
    colours: set[int] = set()
    differ = total = 0
    for y in range(0, image.height(), 3):
        for x in range(0, image.width(), 3):
            pixel = image.pixel(x, y)
            colours.add(pixel)
            differ += pixel != background
            total += 1
    return len(colours), differ / max(total, 1)


def save_screenshot(window: QQuickWindow, name: str) -> tuple[Path, QImage]:
    """Grab ``window`` into build/screenshots/<name>.png; return the path and image."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    image = window.grabWindow()
    path = SCREENSHOTS / f"{name}.png"
    assert image.save(str(path)), f"cannot write {path}"
    return path, image


def prop(obj: object, name: str) -> object:
    """A QObject property by name (QML properties included)."""
    return obj.property(name)  # type: ignore[attr-defined]


Predicate = Callable[[], object]
