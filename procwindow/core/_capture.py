"""Capture: drains every child's pipes into its log files and its ring of lines."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from collections.abc import Callable

from ._child import Child
from ._output import ReadBuffers
from ._types import Line, Stream

__all__ = ["BIG_PIPE", "OUTPUT_EVENT_INTERVAL", "PARTIAL_DELAY", "Capture"]

log = logging.getLogger("procwindow")

#: A pipe that fills is enlarged to this size (F_SETPIPE_SZ): fewer, bigger reads.
BIG_PIPE = 1024 * 1024
#: Output events of a proc's stream come at most about this often (seconds): lines
#: after a quiet spell are announced at once, those that follow within the
#: interval together at its end.
OUTPUT_EVENT_INTERVAL = 0.05
#: An unterminated line is shown (as a partial line) this many seconds after it
#: appears, and then at most this often while it changes (a progress bar).
PARTIAL_DELAY = 0.2

_STREAMS = (Stream.STDOUT, Stream.STDERR)

#: Told ``(child, stream, first seq, last seq)`` of lines not yet announced.
Announce = Callable[[Child, Stream, int, int], None]
#: Told of a child whose pipes are both closed (its output is complete).
Closed = Callable[[Child], None]
#: Told of an unterminated line newly shown (or changed) for a child.
Partial = Callable[[Child, Line], None]


class Capture:
    """Reads both pipes of every child as soon as they are readable.

    Both pipes are always drained, whether anyone listens or not, so a child
    never blocks on a full pipe. New lines are announced through ``announce``,
    only while ``listening()`` says someone wants them: at once if their stream
    was quiet lately, else at the end of the current OUTPUT_EVENT_INTERVAL
    window, together with what else came meanwhile (see ``_note``).

    An unterminated line (a prompt, a ``\r`` progress bar) that has been there
    for PARTIAL_DELAY is shown as a partial line (``child.partials``), and
    updated at most every PARTIAL_DELAY while it changes; it goes once the line
    completes. Readers waiting on the child are woken by each of these.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        announce: Announce,
        listening: Callable[[], bool],
        clock: Callable[[], float],
        closed: Closed,
        over_budget: Callable[[], bool],
        reclaim: Callable[[], None],
        partial: Partial,
        buffers: ReadBuffers,
    ) -> None:
        self._loop = loop
        self._announce = announce
        self._listening = listening
        self._clock = clock
        self._closed = closed
        self._over_budget = over_budget
        self._reclaim = reclaim
        self._partial = partial
        # One read buffer at a time, shared by every child. A full one is handed
        # to the child's ring as it is (the copy would cost more than counting
        # the lines), and the next read goes to a spare one; a shorter read is
        # copied out, so a ring never holds a big buffer for a few lines.
        self._buffers = buffers
        self._buf = buffers.take()
        self._view = memoryview(self._buf)
        # Children with spans waiting for the end of the window (their out_pending).
        self._dirty: set[Child] = set()
        # The streams announced in the current window: their next lines wait for its end.
        self._announced: set[tuple[Child, Stream]] = set()
        # The end of the current window; None while no window is open.
        self._flush_handle: asyncio.TimerHandle | None = None

    def watch(self, child: Child) -> None:
        """Start draining a new child's pipes."""
        for stream, fd in child.stream_fds.items():
            os.set_blocking(fd, False)
            self._loop.add_reader(fd, self._on_readable, child, stream)

    def _on_readable(self, child: Child, stream: Stream) -> None:
        fd = child.stream_fds[stream]
        size = min(child.read_size[stream], child.max_read)
        try:
            n = os.readv(fd, [self._view[:size]])
        except BlockingIOError:
            return
        except OSError:
            n = 0
        if not n:
            self._end_stream(child, stream)
            return
        if child.screen is not None:
            n = self._read_on(fd, n, size)
        self._ingest(child, stream, n)
        if n == size and child.read_size[stream] < BIG_PIPE:
            # The pipe was full: the child writes faster than we wake up.
            # A bigger pipe means fewer, larger reads (DESIGN.md: ~3× throughput).
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, BIG_PIPE)
                child.read_size[stream] = BIG_PIPE

    def _read_on(self, fd: int, n: int, size: int) -> int:
        """A terminal hands over a few KiB a read (its buffer's chunks), however
        much waits: read on into the buffer while more is there, so that one
        wake-up takes it all (half the cost of a flood). Returns the bytes now
        in the buffer; an error is left for the next read to meet."""
        while n < size:
            try:
                got = os.readv(fd, [self._view[n:size]])
            except OSError:  # BlockingIOError: all taken; EIO: the next read ends it
                break
            if not got:
                break
            n += got
        return n

    def _ingest(self, child: Child, stream: Stream, n: int) -> None:
        now = self._clock()
        store = child.store
        seqs = None
        handed = n == len(self._buf)
        pieces = store.pieces
        try:
            seqs = store.feed(stream, self._buf, n, now, handed=handed)
        except Exception:
            pieces = -1  # what it made of the read is unknown
            # A failure of ours must not stop the draining (the child would block
            # on a full pipe): log it once per proc, lose these lines, go on.
            if not child.capture_failed:
                child.capture_failed = True
                log.exception("proc %d: capture failed; its %s lines are lost", child.id, stream)
        if child.screen is not None:
            child.screen.add(self._view[:n])
        pending = store.pending_size(stream)
        split = store.pieces != pieces
        child.disk.write(stream, self._view[:n], now, store.last_seq, pending, split=split)
        if handed:  # the ring has it now: it is never written again
            self._buf = self._buffers.take()
            self._view = memoryview(self._buf)
        if seqs is not None:
            self._note(child, stream, seqs)
            child.partials.pop(stream, None)  # its line is complete now
        if pending and stream not in child.partial_timers:
            child.partial_timers[stream] = self._loop.call_later(
                PARTIAL_DELAY, self._show_partial, child, stream
            )
        if child.waiters:
            child.wake()
        if self._over_budget():
            self._reclaim()

    def _show_partial(self, child: Child, stream: Stream) -> None:
        """The unterminated line of a stream has stood PARTIAL_DELAY: show its state."""
        child.partial_timers.pop(stream, None)
        text = child.store.partial_text(stream)
        if text is None:
            return
        seq = child.store.last_seq + 1
        old = child.partials.get(stream)
        if old is not None and old.text == text and old.seq == seq:
            return
        line = Line(seq, stream, self._clock(), text, False, True)
        child.partials[stream] = line
        self.flush_child(child)  # the lines before it are announced first
        self._partial(child, line)
        child.wake()

    def drain(self, child: Child) -> None:
        """Read what is in both pipes now, without waiting (at the child's exit)."""
        for stream in _STREAMS:  # stdout's rest first, as it always was
            fd = child.stream_fds.get(stream)
            while fd is not None and stream in child.open_streams:
                try:
                    n = os.readv(fd, [self._view])
                except BlockingIOError:
                    break
                except OSError:
                    n = 0
                if not n:
                    self._end_stream(child, stream)
                    break
                self._ingest(child, stream, n)

    def _end_stream(self, child: Child, stream: Stream) -> None:
        if not child.close_stream(stream, self._loop):
            return
        now = self._clock()
        seqs = child.store.flush(stream, now)
        if seqs is not None:
            self._note(child, stream, seqs)
        child.partials.pop(stream, None)
        timer = child.partial_timers.pop(stream, None)
        if timer is not None:
            timer.cancel()
        child.disk.end(stream, now, child.store.last_seq)
        if not child.open_streams:
            self._closed(child)
        child.wake()

    def close(self, child: Child) -> None:
        """Stop reading a child's pipes (what is unread is lost) and close its logs."""
        for stream in list(child.open_streams):
            self._end_stream(child, stream)
        child.close_logs()

    def forget(self, child: Child) -> None:
        """Announce nothing more of a child (dismissed)."""
        self._dirty.discard(child)
        child.out_pending.clear()
        for stream in _STREAMS:
            self._announced.discard((child, stream))
        child.cancel_timers()

    # -- announcing ------------------------------------------------------------------

    def _note(self, child: Child, stream: Stream, seqs: tuple[int, int]) -> None:
        """New lines ``seqs`` of a stream: announce them at once, or at the window's end.

        A window is OUTPUT_EVENT_INTERVAL long; it opens with an announcement made
        at once, and the next one opens at its end if that end announced anything.
        A stream not announced in the current window is announced at once (a
        line printed by an idle child is heard within the read that took it);
        its later lines wait for the end of the window, so a flood costs one
        event per stream and window, as before. A stream announced at a window's
        end counts as announced in the next window. The streams of one child
        share their seqs: a span goes at once only if no earlier span of that
        child waits, so a child's spans are announced in seq order.

        Per stream, not globally: a child that floods does not delay the lines of
        an idle one. Per stream, not per proc: a line on stderr just after one on
        stdout (``echo a; echo b >&2``) is not held back a whole window.
        """
        if not self._listening():
            return
        if child not in self._dirty and (child, stream) not in self._announced:
            self._announced.add((child, stream))
            if self._flush_handle is None:
                self._flush_handle = self._loop.call_later(OUTPUT_EVENT_INTERVAL, self._window_end)
            self._announce(child, stream, seqs[0], seqs[1])
            return
        span = child.out_pending.get(stream)
        if span is None:
            child.out_pending[stream] = [seqs[0], seqs[1]]
        else:
            span[1] = seqs[1]
        self._dirty.add(child)

    def _window_end(self) -> None:
        """Announce what waited in the window; a new one opens if anything did."""
        self._flush_handle = None
        dirty, self._dirty = self._dirty, set()
        self._announced = {(child, stream) for child in dirty for stream in child.out_pending}
        for child in sorted(dirty, key=lambda c: c.id):
            self._announce_pending(child)
        if self._announced:
            self._flush_handle = self._loop.call_later(OUTPUT_EVENT_INTERVAL, self._window_end)

    def flush_child(self, child: Child) -> None:
        """Announce a child's pending spans now (before its exit or a partial line)."""
        if child in self._dirty:
            self._dirty.discard(child)
            self._announce_pending(child)

    def flush(self) -> None:
        """Announce every pending span now (and close the window)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        dirty, self._dirty = self._dirty, set()
        self._announced.clear()
        for child in sorted(dirty, key=lambda c: c.id):
            self._announce_pending(child)

    def _announce_pending(self, child: Child) -> None:
        pending, child.out_pending = child.out_pending, {}
        for stream, (first, last) in sorted(pending.items(), key=lambda kv: kv[1][0]):
            self._announce(child, stream, first, last)
