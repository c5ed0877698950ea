"""Events: the hub that publishes them by topic, and subscriptions, bounded
queues of the events whose topic matches a pattern."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from ._topics import Pattern, topic_for
from ._types import (
    Event,
    EventKind,
    ExitEvent,
    OutputEvent,
    PartialEvent,
    PhaseEvent,
    StartEvent,
)

__all__ = ["DEFAULT_QUEUE_SIZE", "MISSED_TOPIC", "EventHub", "Subscription"]

#: Default bound of a subscriber's queue; past it, events are counted as missed.
DEFAULT_QUEUE_SIZE = 4096

#: The topic of the event that reports lost events once the queue has drained.
MISSED_TOPIC = "missed"

#: The class of the events of each kind (the rest are plain Events).
_EVENT_CLASS: dict[EventKind, type[Event]] = {
    EventKind.START: StartEvent,
    EventKind.OUTPUT: OutputEvent,
    EventKind.PARTIAL: PartialEvent,
    EventKind.EXIT: ExitEvent,
    EventKind.PHASE: PhaseEvent,
}


class _Subject(Protocol):
    """What an event is about: a Proc, or a workspace command (proc 0 before it starts)."""

    @property
    def id(self) -> int: ...
    @property
    def session(self) -> str: ...
    @property
    def agent(self) -> str: ...


class _Unsubscribe(Protocol):
    def __call__(self, sub: Subscription, /) -> None: ...


class Subscription:
    """An async iterator of the events whose topic matches a pattern.

    Its queue is bounded: when it is full, new events are dropped and counted.
    The loss is reported as soon as the subscriber can see it: the next event
    queued after the drop carries the count in ``Event.missed``; and if nothing
    more arrives, a ``missed`` event (kind ``EventKind.MISSED``, topic
    ``missed``) follows the last queued one, so a subscriber never waits for
    news of a gap. ``missed`` is the running total. Close it (or leave
    ``async with``) to stop.
    """

    def __init__(
        self, pattern: Pattern, maxsize: int, on_close: _Unsubscribe, proc: int | None = None
    ) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be positive, got {maxsize}")
        self.pattern = pattern
        #: Only this proc's events (None: every proc's).
        self.proc = proc
        self.missed = 0
        self._maxsize = maxsize
        self._queue: deque[Event] = deque()
        self._pending_missed = 0
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._on_close = on_close

    def _push(self, ev: Event) -> None:
        if self._closed:
            return
        if len(self._queue) >= self._maxsize:
            self.missed += 1
            self._pending_missed += 1
            return
        if self._pending_missed:
            ev = replace(ev, missed=self._pending_missed)
            self._pending_missed = 0
        self._queue.append(ev)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _next(self) -> Event | None:
        if self._queue:
            return self._queue.popleft()
        if self._pending_missed:
            count, self._pending_missed = self._pending_missed, 0
            return Event(
                topic=MISSED_TOPIC,
                kind=EventKind.MISSED,
                proc_id=0,
                session="",
                agent="",
                time=time.time(),
                missed=count,
            )
        return None

    def get_nowait(self) -> Event | None:
        """The next queued event (or the report of lost ones), or None."""
        return self._next()

    def close(self) -> None:
        """Stop receiving; iteration ends after the queued events."""
        if not self._closed:
            self._closed = True
            self._on_close(self)
            self._wake()

    @property
    def closed(self) -> bool:
        """True once closed (by the caller or by the supervisor's close)."""
        return self._closed

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        while True:
            ev = self._next()
            if ev is not None:
                return ev
            if self._closed:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Subscription {self.pattern.text!r} queued={len(self._queue)}>"


class EventHub:
    """Publishes events about procs to the subscriptions whose pattern matches."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._subs: list[Subscription] = []
        self._closed = False

    def subscribe(
        self, pattern: str, maxsize: int = DEFAULT_QUEUE_SIZE, proc: int | None = None
    ) -> Subscription:
        """A new subscription; already closed if the hub is. InvalidPattern if malformed."""
        sub = Subscription(Pattern(pattern), maxsize, self._unsubscribe, proc)
        if self._closed:
            sub.close()
        else:
            self._subs.append(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with contextlib.suppress(ValueError):
            self._subs.remove(sub)

    @property
    def listening(self) -> bool:
        """True while anyone is subscribed."""
        return bool(self._subs)

    def publish(
        self, p: _Subject, kind: EventKind, *, at: float | None = None, **fields: object
    ) -> None:
        """An event of ``kind`` about ``p`` (``at``: its time, else now)."""
        if not self._subs:
            return
        topic = topic_for(p.session, p.agent, kind.value)
        ev: Event | None = None
        for sub in list(self._subs):
            if (sub.proc is None or sub.proc == p.id) and sub.pattern.matches(topic):
                if ev is None:
                    ev = _EVENT_CLASS.get(kind, Event)(
                        topic=topic,
                        kind=kind,
                        proc_id=p.id,
                        session=p.session,
                        agent=p.agent,
                        time=self._now() if at is None else at,
                        **fields,  # type: ignore[arg-type]
                    )
                sub._push(ev)

    def close(self) -> None:
        """End every subscription (iteration ends after what is queued)."""
        self._closed = True
        for sub in list(self._subs):
            sub.close()
