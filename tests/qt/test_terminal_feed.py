"""When the terminal view fetches a screen: one fetch at a time, none while idle,
fewer while a watched screen stays the same; a fake supervisor counts them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest
from PySide6.QtCore import QObject

from procwindow.core import NoTerminal, ScreenText
from procwindow.qt._terminal_feed import WATCH_MS, ScreenFeed

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")


class FakeScreens:
    """``screen()`` as a supervisor answers it: after ``delay`` s, a screen that
    changes with every call if ``changing``."""

    def __init__(self, delay: float = 0.0, changing: bool = False) -> None:
        self.delay = delay
        self.changing = changing
        self.calls = 0
        self.running = 0
        self.most = 0
        self.gone = False

    async def screen(self, proc_id: int, *, styled: bool = False) -> ScreenText:
        self.calls += 1
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.running -= 1
        if self.gone:
            raise NoTerminal(proc_id, "its terminal is closed")
        return SAME._replace(lines=(str(self.calls),)) if self.changing else SAME


SAME = ScreenText(1, 10, ("same",), (0, 0), True, False, ())


class Seen:
    """What the feed handed on; ``last`` starts as ``SAME``: a first fetch of it is no change."""

    def __init__(self) -> None:
        self.screens: list[ScreenText] = []
        self.gone: list[Exception] = []
        self.last: ScreenText | None = SAME

    def on_screen(self, screen: ScreenText) -> bool:
        self.screens.append(screen)
        changed, self.last = screen != self.last, screen
        return changed


@pytest.fixture
def make() -> Iterator[Callable[[FakeScreens, Seen], ScreenFeed]]:
    """``make(fake, seen)``: a feed on a fake supervisor, stopped at teardown."""
    owner = QObject()
    feeds: list[ScreenFeed] = []

    def new(fake: FakeScreens, seen: Seen) -> ScreenFeed:
        feed = ScreenFeed(owner, fake, seen.on_screen, seen.gone.append)  # type: ignore[arg-type]
        feeds.append(feed)
        return feed

    yield new
    for feed in feeds:
        feed.stop()


Make = Callable[[FakeScreens, Seen], ScreenFeed]


def test_idle_costs_nothing_and_pokes_in_a_burst_are_one_fetch(qrun: QRun, make: Make) -> None:
    fake, seen = FakeScreens(), Seen()
    feed = make(fake, seen)
    feed.follow(7)
    qrun(asyncio.sleep(0.1))
    assert fake.calls == 0  # not poked: not fetched
    for _ in range(20):
        feed.poke(watch_ms=0)
    qrun(asyncio.sleep(0.1))
    assert fake.calls == 1  # and it found no change: no watch


def test_one_fetch_at_a_time_and_a_poke_meanwhile_is_not_lost(qrun: QRun, make: Make) -> None:
    fake, seen = FakeScreens(delay=0.05), Seen()
    feed = make(fake, seen)
    feed.follow(7)
    feed.poke(watch_ms=0)
    qrun(asyncio.sleep(0.01))
    assert fake.running == 1
    feed.poke(watch_ms=0, echo=True)  # while it runs: once it is done
    qrun(asyncio.sleep(0.2))
    assert fake.calls == 2 and fake.most == 1


def test_a_watch_backs_off_while_the_screen_stays_the_same(qrun: QRun, make: Make) -> None:
    counts: dict[bool, int] = {}
    for changing in (False, True):
        fake, seen = FakeScreens(changing=changing), Seen()
        feed = make(fake, seen)
        feed.follow(7)
        feed.poke()
        qrun(asyncio.sleep(WATCH_MS / 1000 + 0.1))
        feed.stop()
        counts[changing] = fake.calls
    # At most one a frame while it changes; 16, 32, 64, 128 ms apart while it does not.
    assert counts[True] <= (WATCH_MS + 100) // 16 + 2
    assert counts[False] <= 6
    assert counts[False] < counts[True]


def test_a_terminal_gone_stops_the_fetches(qrun: QRun, make: Make) -> None:
    fake, seen = FakeScreens(changing=True), Seen()
    fake.gone = True
    feed = make(fake, seen)
    feed.follow(7)
    feed.poke()
    qrun(asyncio.sleep(0.1))
    assert fake.calls == 1 and len(seen.gone) == 1 and feed.proc_id == -1
    feed.poke()  # following nobody now
    qrun(asyncio.sleep(0.05))
    assert fake.calls == 1
