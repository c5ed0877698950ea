"""The output pane's terminal view under load, run by hand. Nothing is asserted;
each mode prints medians and p95s, and ratios against a baseline measured in
the same run.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_terminal.py redraw [--seconds 8] [--size 1400x900] [--fps N] [--no-clear]
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_terminal.py echo   [--keys 100] [--program cat|python]
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_terminal.py all

``redraw``: a PTY child redraws its whole screen as fast as it can (``ESC [ H
ESC [ 2 J``, then every row in a colour, a frame counter in each row) while a ProcWindow
(``open_proc_window`` on a real Supervisor, qasync on a QApplication) shows it
in the terminal view. Per frame drawn: the fetch's work (the screen model
catching up with the output, ``TerminalScreen.catch_up``, and making the
styled rows, ``TerminalScreen.text``; both synchronous on the GUI thread) plus
the view's ``paint``. Also: the fetch's wall time (start to screen, the loop
running other work between the 4 ms pieces), frames drawn per second and the
child's frames per second, and how late a 5 ms timer on the loop comes (p99).
The frame against 16 ms, and against the baseline: the same child on pipes
shown in the lines view of the same window, where a frame is the output
model's read and show (``FrameLoop.read`` + ``FrameLoop.show``).
``--fps N`` paces the child to N frames a second. ``--no-clear`` leaves out the
``ESC [ 2 J``: the frames then overwrite each other in place, as curses
programs draw; the screen model (pyte, ~0.4 MB/s) drops only output that comes
before a clear or a switch of screens, and when no fetch catches up with the
child, nothing is drawn (the run says so).

``echo``: a key typed into the terminal view (``QTest.keyClick`` on the
window, the view having the keyboard) until a paint of the view draws its
echo (the cursor moved past it), for ``--keys`` keys 40–90 ms apart on an
idle machine, with ``cat`` on the terminal (the kernel's line discipline
echoes) or a Python REPL (readline echoes). The baseline is the raw pty echo
round trip of the same program without supervisor or window: a byte written
to the master, ``select`` until its echo is read back.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")

import qasync
from PySide6.QtCore import QPoint, Qt
from PySide6.QtQuick import QQuickItem, QQuickWindow
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from procwindow.app import ensure_style, open_proc_window
from procwindow.core import Proc, ScreenText, Supervisor
from procwindow.core import _screen as core_screen
from procwindow.qt import TerminalModel, TerminalView
from procwindow.qt.window import window_model

FRAME_MS = 16.0
SESSION = "bench"
WARMUP = 1.0
PROBE_INTERVAL = 0.005

#: Redraws the whole screen as fast as it can (or FPS times a second): a frame
#: counter and a colour per row, after a clear unless NO_CLEAR.
REDRAW = r"""
import os, sys, time
out = sys.stdout.buffer
home = b"\x1b[H" if os.environ.get("NO_CLEAR") else b"\x1b[H\x1b[2J"
period = 1 / float(os.environ["FPS"]) if os.environ.get("FPS") else 0.0
colours = [31, 32, 33, 34, 35, 36, 37, 91, 92, 93, 94, 95, 96]
filler = "the quick brown fox jumps over the lazy dog " * 30
n = 0
due = time.monotonic()
while True:
    try:
        cols, rows = os.get_terminal_size(1)
    except OSError:  # on pipes: the size of the window's terminal in the other run
        cols, rows = int(os.environ["COLS"]), int(os.environ["ROWS"])
    parts = [home]
    for r in range(rows):
        text = f"{n:08d} {r:3d} {filler[(n + r) % 40:]}"[: cols - 1]
        parts.append(f"\x1b[{colours[(n + r) % len(colours)]}m{text}\x1b[0m".encode())
        if r < rows - 1:
            parts.append(b"\r\n")
    out.write(b"".join(parts))
    out.flush()
    n += 1
    if period:
        due += period
        time.sleep(max(0.0, due - time.monotonic()))
"""

PROGRAMS = {
    "cat": ["cat"],
    "python": [sys.executable, "-i", "-q"],
}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


class LagProbe:
    """How late a timer re-armed every PROBE_INTERVAL fires (the loop's responsiveness)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lateness: list[float] = []
        self._due = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self.lateness.clear()
        self._arm()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        self._due = time.perf_counter() + PROBE_INTERVAL
        self._handle = self.loop.call_later(PROBE_INTERVAL, self._fire)

    def _fire(self) -> None:
        self.lateness.append(time.perf_counter() - self._due)
        if self._handle is not None:
            self._arm()


# == instrumenting the terminal view =====================================================


class Meter:
    """Times the screen model's work per fetch and the view's paints (class-level
    patches, for this process only)."""

    def __init__(self) -> None:
        self.work = 0.0  # the current fetch's synchronous work so far
        self.fetch_work: dict[int, float] = {}  # id(screen) -> the fetch's work
        self.fetch_wall: list[float] = []
        self.fetch_span: dict[int, tuple[float, float]] = {}  # id(screen) -> (start, end)
        self.paints: list[tuple[float, float, ScreenText | None]] = []  # (end, seconds, screen)
        self.on_paint: Callable[[ScreenText | None, float], None] | None = None
        self.measuring = False
        self._undo: list[Callable[[], None]] = []

    def install(self, sup: Supervisor) -> None:
        for name in ("catch_up", "text"):
            self._patch(core_screen.TerminalScreen, name, self._timed_work)
        self._patch(TerminalView, "paint", self._timed_paint)
        screen = sup.screen

        async def timed_screen(proc_id: int, *, styled: bool = False) -> ScreenText:
            self.work = 0.0
            t0 = time.perf_counter()
            shot = await screen(proc_id, styled=styled)
            if self.measuring:
                t1 = time.perf_counter()
                self.fetch_wall.append(t1 - t0)
                self.fetch_work[id(shot)] = self.work
                self.fetch_span[id(shot)] = (t0, t1)
            return shot

        sup.screen = timed_screen  # type: ignore[method-assign]

    def uninstall(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    def _patch(self, cls: type, name: str, wrap: Callable[[Any], Any]) -> None:
        original = getattr(cls, name)
        setattr(cls, name, wrap(original))
        self._undo.append(lambda: setattr(cls, name, original))

    def _timed_work(self, original: Callable[..., Any]) -> Callable[..., Any]:
        meter = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                meter.work += time.perf_counter() - t0

        return timed

    def _timed_paint(self, original: Callable[..., Any]) -> Callable[..., Any]:
        meter = self

        def paint(view: TerminalView, painter: Any) -> None:
            t0 = time.perf_counter()
            original(view, painter)
            t1 = time.perf_counter()
            terminal = view.property("terminal")
            shot = terminal.screen() if isinstance(terminal, TerminalModel) else None
            if meter.measuring:
                meter.paints.append((t1, t1 - t0, shot))
            if meter.on_paint is not None:
                meter.on_paint(shot, t1)

        return paint


def find(window: QQuickWindow, name: str) -> QQuickItem:
    todo = [window.contentItem()]
    while todo:
        item = todo.pop()
        if item.objectName() == name and item.isVisible():
            return item
        todo.extend(item.childItems())
    raise LookupError(name)


async def until(cond: Callable[[], object], timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("the benchmark's window never got there")
        await asyncio.sleep(0.01)


async def outside_task(action: Callable[[], None]) -> None:
    """Run ``action`` from a plain loop callback (QTest processes events: not in a task)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def call() -> None:
        try:
            action()
        finally:
            done.set_result(None)

    loop.call_soon(call)
    await done


async def stop(sup: Supervisor, p: Proc) -> None:
    if sup.get(p.id).running:
        await sup.kill(p.id)


# == redraw ==============================================================================


def frame_number(shot: ScreenText | None) -> int:
    """The newest frame the child had drawn on ``shot`` (rows start with it); -1: none."""
    numbers = [int(line[:8]) for line in shot.lines if line[:8].isdigit()] if shot else []
    return max(numbers, default=-1)


def _visible(window: QQuickWindow, name: str) -> bool:
    try:
        find(window, name)
    except LookupError:
        return False
    return True


async def redraw_terminal(
    sup: Supervisor, meter: Meter, args: argparse.Namespace, env: dict[str, str]
) -> dict[str, Any]:
    probe = LagProbe(asyncio.get_running_loop())
    argv = [sys.executable, "-c", REDRAW]
    p = await sup.spawn(argv, session=SESSION, agent="tty", pty=True, env=env)
    window = open_proc_window(sup, SESSION, "tty")
    window.resize(*args.window)
    await until(lambda: _visible(window, "terminalView"))
    view = find(window, "terminalView")
    terminal = window_model(window).pane.terminal
    await asyncio.sleep(0.3)  # laid out at the window's size

    def fitted() -> bool:
        fit = (view.property("fitRows"), view.property("fitCols"))
        return terminal.screen() is not None and (terminal.rows, terminal.cols) == fit

    try:  # the first screen at the view's size (a child too fast for the model: none)
        await until(fitted, timeout=10)
    except TimeoutError:
        pass
    fit = (view.property("fitRows"), view.property("fitCols"))
    await asyncio.sleep(WARMUP)
    meter.paints.clear()
    meter.fetch_wall.clear()
    meter.fetch_work.clear()
    fetches0 = terminal.feed.fetches
    first = frame_number(terminal.screen())
    meter.measuring = True
    probe.start()
    t0 = time.perf_counter()
    await asyncio.sleep(args.seconds)
    elapsed = time.perf_counter() - t0
    probe.stop()
    meter.measuring = False
    last = frame_number(terminal.screen())
    await stop(sup, p)
    window.close()
    await asyncio.sleep(0.2)
    work = meter.fetch_work
    return {
        "rows": fit[0],
        "cols": fit[1],
        "frames": [work.get(id(shot), 0.0) + took for _, took, shot in meter.paints if shot],
        "paint": [took for _, took, _ in meter.paints],
        "work": list(work.values()),
        "wall": list(meter.fetch_wall),
        "drawn_per_s": len(meter.paints) / elapsed,
        "fetches_per_s": (terminal.feed.fetches - fetches0) / elapsed,
        "child_per_s": (last - first) / elapsed if first >= 0 and last >= 0 else float("nan"),
        "lag_p99": pct(probe.lateness, 0.99),
    }


async def redraw_lines(
    sup: Supervisor, args: argparse.Namespace, rows: int, cols: int, env: dict[str, str]
) -> dict[str, Any]:
    """The baseline: the same child on pipes, in the lines view: the output model's frames."""
    env = {**env, "ROWS": str(rows), "COLS": str(cols)}
    p = await sup.spawn([sys.executable, "-c", REDRAW], session=SESSION, agent="pipes", env=env)
    window = open_proc_window(sup, SESSION, "pipes")
    window.resize(*args.window)
    await until(lambda: _visible(window, "outputView"))
    frames = window_model(window).outputModel._frames
    steps: list[float] = []
    current = [0.0]
    read, show = frames.read, frames.show

    def timed_read(limit: int | None) -> int:
        t0 = time.perf_counter()
        try:
            return read(limit)
        finally:
            current[0] += time.perf_counter() - t0

    def timed_show() -> None:
        t0 = time.perf_counter()
        show()
        steps.append(current[0] + time.perf_counter() - t0)
        current[0] = 0.0

    frames.read, frames.show = timed_read, timed_show
    await asyncio.sleep(WARMUP)
    steps.clear()
    t0 = time.perf_counter()
    await asyncio.sleep(args.seconds)
    elapsed = time.perf_counter() - t0
    measured = list(steps)
    frames.read, frames.show = read, show
    await stop(sup, p)
    window.close()
    await asyncio.sleep(0.2)
    return {"frames": measured, "per_s": len(measured) / elapsed}


def _spread(values: list[float]) -> str:
    return f"median {ms(statistics.median(values))}, p95 {ms(pct(values, 0.95))}"


async def run_redraw(args: argparse.Namespace, log_dir: str) -> None:
    env = {"NO_CLEAR": "1"} if args.no_clear else {}
    if args.fps:
        env["FPS"] = str(args.fps)
    meter = Meter()
    async with Supervisor(log_dir=log_dir, history=False) as sup:
        meter.install(sup)
        try:
            tty = await redraw_terminal(sup, meter, args, env)
        finally:
            meter.uninstall()
        lines = await redraw_lines(sup, args, tty["rows"], tty["cols"], env)
    frames, base = tty["frames"], lines["frames"]
    how = "in place (ESC [ H)" if args.no_clear else "each after a clear (ESC [ H ESC [ 2 J)"
    rate = f"{args.fps:g} times a second" if args.fps else "as fast as the child can"
    print(f"\n== redraw: {tty['cols']} x {tty['rows']} redrawn {rate}, {how};")
    print(f"   {args.seconds:.0f} s measured, window {args.size}")
    if not frames:
        print(
            "terminal view: no frame drawn: no fetch of the screen returned (the screen model"
            f" never caught up with the child; {len(tty['wall'])} fetches ended), loop lag p99"
            f" {ms(tty['lag_p99'])}"
        )
    else:
        med, p95 = statistics.median(frames), pct(frames, 0.95)
        frame = FRAME_MS / 1000
        print(f"terminal view, per frame drawn (fetch work + paint): {_spread(frames)}")
        print(f"  = {med / frame:.2f} (median) and {p95 / frame:.2f} (p95) of a 16 ms frame")
        print(f"  fetch work (the emulator catching up + the styled rows): {_spread(tty['work'])}")
        print(f"  paint: {_spread(tty['paint'])}")
        print(
            f"  fetch wall time (the loop's other work between its pieces): {_spread(tty['wall'])}"
        )
        print(
            f"  {tty['drawn_per_s']:.1f} frames drawn/s, {tty['fetches_per_s']:.1f} fetches/s;"
            f" the child drew {tty['child_per_s']:.0f} frames/s (the view shows the newest)"
        )
        print(f"  loop lag p99 {ms(tty['lag_p99'])}")
    print(
        f"baseline: the same child on pipes in the lines view, per output-model frame"
        f" (read + show): {_spread(base)}, {lines['per_s']:.1f} frames/s"
    )
    if frames:
        print(
            f"ratio terminal / lines: median {statistics.median(frames) / statistics.median(base):.2f}x,"
            f" p95 {pct(frames, 0.95) / pct(base, 0.95):.2f}x"
        )


# == echo ================================================================================


def raw_echo(argv: list[str], keys: int) -> list[float]:
    """The baseline: the program on a bare pty; a byte written, its echo read back."""
    master, slave = os.openpty()
    child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    try:
        _drain(master, 1.0)
        times: list[float] = []
        for i in range(keys):
            byte = b"abcdefghij"[i % 10 : i % 10 + 1]
            t0 = time.perf_counter()
            os.write(master, byte)
            got = b""
            while byte not in got:
                ready, _, _ = select.select([master], [], [], 5)
                if not ready:
                    raise TimeoutError("no echo on the bare pty")
                got += os.read(master, 1024)
            times.append(time.perf_counter() - t0)
            if i % 50 == 49:
                os.write(master, b"\x15")  # Ctrl-U: an empty line again
                _drain(master, 0.05)
            time.sleep(random.uniform(0.04, 0.09))
        return times
    finally:
        child.kill()
        child.wait()
        os.close(master)


def _drain(fd: int, seconds: float) -> None:
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                os.read(fd, 65536)
            except OSError:
                return


async def window_echo(
    sup: Supervisor, meter: Meter, argv: list[str], keys: int
) -> tuple[list[float], list[tuple[float, float, float]]]:
    """The times from each key to the paint of its echo, and their parts: to the
    start of the fetch that found it, the fetch, from its end to the paint."""
    p = await sup.spawn(argv, session=SESSION, agent="echo", pty=True)
    window = open_proc_window(sup, SESSION, "echo")
    await until(lambda: _visible(window, "terminalView"))
    view = find(window, "terminalView")
    terminal = window_model(window).pane.terminal
    fit = lambda: (view.property("fitRows"), view.property("fitCols"))  # noqa: E731
    await until(lambda: terminal.screen() is not None and (terminal.rows, terminal.cols) == fit())
    await asyncio.sleep(1.0)  # the REPL's prompt
    centre = view.mapToScene(view.boundingRect().center()).toPoint()
    await outside_task(
        lambda: QTest.mouseClick(
            window, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(centre)
        )
    )
    await until(lambda: view.hasActiveFocus())
    times: list[float] = []
    parts: list[tuple[float, float, float]] = []
    state: dict[str, Any] = {}

    def on_paint(shot: ScreenText | None, end: float) -> None:
        want = state.get("want")
        if (
            want is not None
            and shot is not None
            and shot.cursor[0] == want[0]
            and shot.cursor[1] >= want[1]
        ):
            t0 = state.pop("t0")
            times.append(end - t0)
            start, done = meter.fetch_span.get(id(shot), (t0, t0))
            parts.append((start - t0, done - start, end - done))
            state.pop("want")
            state["seen"].set_result(None)

    meter.on_paint = on_paint
    meter.measuring = True
    try:
        for i in range(keys):
            shot = terminal.screen()
            assert shot is not None
            row, col = shot.cursor
            if col >= shot.cols - 4:  # a new line first (not measured)
                await outside_task(
                    lambda: QTest.keyClick(
                        window, Qt.Key.Key_U, Qt.KeyboardModifier.ControlModifier
                    )
                )
                await until(
                    lambda: terminal.screen() is not None and terminal.screen().cursor[1] < 8
                )  # type: ignore[union-attr]
                await asyncio.sleep(0.05)
                shot = terminal.screen()
                assert shot is not None
                row, col = shot.cursor
            char = "abcdefghij"[i % 10]
            state["seen"] = asyncio.get_running_loop().create_future()

            def press(char: str = char, row: int = row, col: int = col) -> None:
                state["want"] = (row, col + 1)
                state["t0"] = time.perf_counter()
                QTest.keyClick(window, char)

            await outside_task(press)
            try:
                await asyncio.wait_for(state["seen"], 5)
            except TimeoutError:
                raise TimeoutError(
                    f"key {i}: no echo drawn; screen {terminal.screen()!r}"
                ) from None
            await asyncio.sleep(random.uniform(0.04, 0.09))
    finally:
        meter.on_paint = None
        meter.measuring = False
        await stop(sup, p)
        window.close()
        await asyncio.sleep(0.2)
    return times, parts


async def run_echo(args: argparse.Namespace, log_dir: str) -> None:
    argv = PROGRAMS[args.program]
    meter = Meter()
    async with Supervisor(log_dir=log_dir, history=False) as sup:
        meter.install(sup)
        try:
            seen, parts = await window_echo(sup, meter, argv, args.keys)
        finally:
            meter.uninstall()
    raw = raw_echo(argv, args.keys)
    p50, p95 = statistics.median(seen), pct(seen, 0.95)
    r50, r95 = statistics.median(raw), pct(raw, 0.95)
    print(
        f"\n== echo: {args.keys} keys typed into the terminal view, {args.program} echoing, 40–90 ms apart"
    )
    print(
        f"key -> its echo drawn: p50 {ms(p50)}, p95 {ms(p95)}, max {ms(max(seen))}  ->  p95 {p95 / (FRAME_MS / 1000):.2f} of a 16 ms frame"
    )
    to_fetch, fetch, to_paint = (statistics.median(part) for part in zip(*parts, strict=True))
    print(
        f"  of which (medians): key -> the fetch that finds it {ms(to_fetch)}, the fetch"
        f" {ms(fetch)}, its end -> the paint {ms(to_paint)}"
    )
    print(
        f"baseline: raw pty echo round trip of {args.program}, no supervisor, no window: p50 {ms(r50)}, p95 {ms(r95)}"
    )
    print(
        f"ratio window / raw: p50 {p50 / r50:.1f}x, p95 {p95 / r95:.1f}x (the window's share: p50 {ms(p50 - r50)})"
    )


# == main ================================================================================


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("mode", choices=["redraw", "echo", "all"])
    ap.add_argument("--seconds", type=float, default=8.0, help="redraw: seconds measured")
    ap.add_argument("--size", default="1400x900", help="redraw: the window's size")
    ap.add_argument("--no-clear", action="store_true", help="redraw: frames in place, no clear")
    ap.add_argument("--fps", type=float, default=0, help="redraw: frames a second (0: all it can)")
    ap.add_argument("--keys", type=int, default=100, help="echo: keys typed")
    ap.add_argument("--program", choices=sorted(PROGRAMS), default="cat", help="echo: what echoes")
    args = ap.parse_args()
    args.window = tuple(int(v) for v in args.size.split("x"))

    app = QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)
    ensure_style()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)

    async def run() -> None:
        with tempfile.TemporaryDirectory(prefix="bench-terminal-") as log_dir:
            if args.mode in ("redraw", "all"):
                await run_redraw(args, log_dir)
            if args.mode in ("echo", "all"):
                await run_echo(args, log_dir)

    with loop:
        loop.run_until_complete(run())


if __name__ == "__main__":
    main()
