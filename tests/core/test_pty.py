"""Programs that need a terminal: ``spawn(pty=True)`` with real programs.

Each test runs a real child on a real pseudo-terminal: ``isatty`` and the
terminal's size (and SIGWINCH after ``resize``), a REPL driven through
``write``, a password read from ``/dev/tty``, a curses program's screen on the
alternate screen, and a tree that ignores SIGHUP stopped by term and kill.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from procwindow import InvalidField, NoTerminal, Supervisor
from procwindow.core import spec

from .helpers import alive, py

#: Prints whether each of its fds is a terminal, the size, TERM, and its
#: controlling terminal; then the size again at each SIGWINCH until stdin ends.
TTY_REPORT = """
    import os, signal, sys
    def report(*_):
        rows, cols = os.get_terminal_size(0).lines, os.get_terminal_size(0).columns
        print(f"size {rows}x{cols}", flush=True)
    print("tty", [os.isatty(fd) for fd in (0, 1, 2)], os.environ.get("TERM"), flush=True)
    print("env", os.environ.get("LINES"), os.environ.get("COLUMNS"), flush=True)
    print("ctty", os.open("/dev/tty", os.O_RDWR) >= 0, "sid", os.getsid(0) == os.getpid(), flush=True)
    report()
    signal.signal(signal.SIGWINCH, report)
    sys.stdout.write("waiting\\n"); sys.stdout.flush()
    for line in sys.stdin:
        pass
    print("eof", flush=True)
"""


def _signal_state(pid: int | None) -> str:
    """What the kernel says of a child's state and signals, for a failure's message."""
    try:
        with open(f"/proc/{pid}/status") as f:
            keep = ("State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")
            return "; ".join(line.strip() for line in f if line.startswith(keep))
    except OSError as exc:
        return f"no /proc/{pid}/status ({exc.strerror})"


@pytest.mark.promise("Commands that need a terminal")
def test_a_pty_child_has_a_terminal_on_every_fd_and_a_size_that_follows_resize(
    run, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's own terminal's size must not pass for the child's (curses reads these).
    monkeypatch.setenv("LINES", "7")
    monkeypatch.setenv("COLUMNS", "9")

    async def main() -> None:
        async with Supervisor(history=False) as sup:
            p = await sup.spawn(py(TTY_REPORT), session="s", agent="a", pty=True)
            await sup.wait_for(p.id, "^waiting$", timeout=10)
            text = sup.read(p.id).text
            assert "tty [True, True, True] xterm-256color" in text
            assert "ctty True sid True" in text
            assert "env None None" in text
            assert "size 24x80" in text
            assert p.options.pty == (24, 80) and p.options.stdin and p.options.merge_stderr
            await sup.resize(p.id, 40, 132)
            try:
                await sup.wait_for(p.id, "^size 40x132$", timeout=10)
            except TimeoutError:
                raise AssertionError(
                    f"no SIGWINCH report; output: {sup.read(p.id).text!r}; "
                    f"child: {_signal_state(sup.get(p.id).os_pid)}"
                ) from None
            assert (await sup.screen(p.id))[:2] == (40, 132)
            assert await sup.close_stdin(p.id)  # Ctrl-D: its reader reads end-of-file
            await sup.wait_for(p.id, "^eof$", timeout=10)
            info = await sup.wait(p.id, timeout=10)
            assert info.code == 0
            # The log holds the terminal's bytes exactly: its \r\n included.
            with open(sup.log_path(p.id), "rb") as f:
                assert b"size 24x80\r\n" in f.read()
            with pytest.raises(NoTerminal, match="its terminal is closed"):
                await sup.resize(p.id, 10, 10)

    run(main())


def test_size_and_term_can_be_given_and_pipes_refuse_a_terminal_s_calls(run) -> None:
    async def main() -> None:
        async with Supervisor(history=False) as sup:
            p = await sup.spawn(
                py(TTY_REPORT),
                session="s",
                agent="a",
                pty=True,
                rows=10,
                cols=33,
                env={"TERM": "vt100"},
            )
            await sup.wait_for(p.id, "^waiting$", timeout=10)
            assert "size 10x33" in sup.read(p.id).text
            assert "vt100" in sup.read(p.id).text
            await sup.kill(p.id)
            q = await sup.spawn(["true"], session="s", agent="a")
            with pytest.raises(NoTerminal, match="spawn it with pty=True"):
                await sup.resize(q.id, 10, 10)
            with pytest.raises(NoTerminal):
                await sup.screen(q.id)
            with pytest.raises(InvalidField, match="rows needs pty"):
                await sup.spawn(["true"], session="s", agent="a", rows=10)
            with pytest.raises(InvalidField, match="cols must be an integer of at most 1000"):
                await sup.spawn(["true"], session="s", agent="a", pty=True, cols=1001)
            with pytest.raises(InvalidField, match="rows must be an integer of at least 1"):
                await sup.resize(p.id, 0, 10)
        # The same refusal at every surface: the spec is the one rule.
        with pytest.raises(InvalidField, match="rows needs pty"):
            spec.check("run", argv=["true"], session="s", agent="a", rows=10)

    run(main())


@pytest.mark.promise("Commands that need a terminal")
def test_a_python_repl_is_driven_through_write(run) -> None:
    async def main() -> None:
        async with Supervisor(history=False) as sup:
            p = await sup.spawn([sys.executable, "-i", "-q"], session="s", agent="a", pty=True)
            await sup.wait_for(p.id, ">>> ", regex=False, timeout=10)  # a partial line: the prompt
            await sup.write(p.id, "print(6*7)\n")
            line = await sup.wait_for(p.id, "^42$", timeout=10)
            assert line.text == "42"
            # Ctrl-C as a person types it: the terminal tells the REPL, which goes on.
            await sup.write(p.id, "import time; time.sleep(30)\n")
            await asyncio.sleep(0.3)
            await sup.write(p.id, "\x03")
            await sup.wait_for(p.id, "KeyboardInterrupt", since=line.seq, timeout=10)
            await sup.write(p.id, "print('still', 'here')\n")
            await sup.wait_for(p.id, "^still here$", timeout=10)
            await sup.write(p.id, "\x04")  # Ctrl-D at the prompt: the REPL ends
            assert (await sup.wait(p.id, timeout=10)).code == 0

    run(main())


PASSWORD = """
    import getpass
    secret = getpass.getpass("Password: ")  # read from /dev/tty, echo off
    print("got", len(secret), "characters", flush=True)
"""


@pytest.mark.promise("Commands that need a terminal")
def test_a_password_prompt_on_dev_tty_is_answered_through_write(run) -> None:
    async def main() -> None:
        async with Supervisor(history=False) as sup:
            p = await sup.spawn(py(PASSWORD), session="s", agent="a", pty=True)
            prompt = await sup.wait_for(p.id, "^Password: $", timeout=10)
            assert prompt.partial
            await sup.write(p.id, "hunter22\n")
            await sup.wait_for(p.id, "got 8 characters", timeout=10)
            assert (await sup.wait(p.id, timeout=10)).code == 0
            with open(sup.log_path(p.id), "rb") as f:
                assert b"hunter22" not in f.read()  # the terminal did not echo it

    run(main())


CURSES = """
    import curses, sys
    def main(win):
        curses.curs_set(0)
        win.addstr(5, 10, "HELLO SCREEN")
        rows, cols = win.getmaxyx()
        win.addstr(rows - 1, 0, f"size {rows}x{cols} press q")
        win.refresh()
        while True:
            key = win.getch()
            if key == curses.KEY_RESIZE:
                win.clear()
                rows, cols = win.getmaxyx()
                win.addstr(0, 0, f"resized {rows}x{cols}")
                win.refresh()
            elif key == ord("q"):
                return
    curses.wrapper(main)
    print("left the screen", flush=True)
"""


@pytest.mark.promise("Commands that need a terminal")
def test_a_full_screen_program_s_screen_is_read_back_as_text(run) -> None:
    async def main() -> None:
        async with Supervisor(history=False) as sup:
            p = await sup.spawn(py(CURSES), session="s", agent="a", pty=True, rows=20, cols=60)
            await _until_screen(sup, p.id, lambda s: "press q" in s.text)
            shot = await sup.screen(p.id)
            assert shot.alternate
            assert shot.lines[5] == " " * 10 + "HELLO SCREEN"
            assert shot.lines[19] == "size 20x60 press q"
            assert not shot.cursor_visible
            await sup.resize(p.id, 12, 40)
            await _until_screen(sup, p.id, lambda s: "resized 12x40" in s.text)
            await sup.write(p.id, "q")
            await sup.wait(p.id, timeout=10)
            after = await sup.screen(p.id)
            assert not after.alternate  # back on the main screen, as it was
            assert "HELLO SCREEN" not in after.text
            assert "left the screen" in after.text

    run(main())


@pytest.mark.promise("Commands that need a terminal")
def test_wait_for_matches_a_row_of_a_full_screen_program_s_screen(run) -> None:
    async def main() -> None:
        async with Supervisor(history=False) as sup:
            p = await sup.spawn(py(CURSES), session="s", agent="a", pty=True, rows=20, cols=60)
            # Drawn with cursor moves: no output line holds it; the screen's row does.
            hit = await sup.wait_for(p.id, r"^ {10}HELLO SCREEN$", timeout=10)
            assert hit.partial and hit.text == " " * 10 + "HELLO SCREEN"
            assert hit.seq == p.last_seq + 1
            assert not any(line.text == hit.text for line in sup.read(p.id).lines)
            await sup.write(p.id, "q")
            await sup.wait(p.id, timeout=10)

    run(main())


async def _until_screen(sup: Supervisor, proc_id: int, cond, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while True:
        shot = await sup.screen(proc_id)
        if cond(shot):
            return
        if time.monotonic() > end:
            raise AssertionError("the screen never showed it:\n" + shot.text)
        await asyncio.sleep(0.05)


#: A shell that ignores SIGHUP (and SIGTERM), forks a grandchild that ignores
#: them too, and prints both pids.
STUBBORN_TREE = """
    trap '' HUP TERM
    sh -c 'trap "" HUP TERM; echo grandchild $$; exec sleep 600' &
    echo child $$
    wait
"""


def _pids(text: str) -> list[int]:
    return [
        int(line.split()[1])
        for line in text.splitlines()
        if line.split()[:1] in (["child"], ["grandchild"])
    ]


@pytest.mark.promise("Commands that need a terminal")
@pytest.mark.parametrize("how", ["term", "kill"])
def test_a_tree_that_ignores_sighup_is_stopped_with_nothing_left(run, how: str) -> None:
    async def main() -> None:
        async with Supervisor(history=False, graceful_timeout=0.5) as sup:
            p = await sup.spawn(
                ["sh", "-c", textwrap.dedent(STUBBORN_TREE)], session="s", agent="a", pty=True
            )
            await sup.wait_for(p.id, "^grandchild", timeout=10)
            await sup.wait_for(p.id, "^child", timeout=10)
            pids = _pids(sup.read(p.id).text)
            assert len(pids) == 2 and all(alive(pid) for pid in pids)
            info = await (sup.term(p.id) if how == "term" else sup.kill(p.id))
            assert info.signal == signal.SIGKILL
            assert not any(alive(pid) for pid in pids)

    run(main())


HOST = textwrap.dedent(
    """
    import asyncio, sys
    from procwindow import Supervisor

    async def main():
        sup = Supervisor(history=False)
        await sup.__aenter__()
        p = await sup.spawn(["sh", "-c", sys.argv[1]], session="s", agent="a", pty=True)
        await sup.wait_for(p.id, "^child", timeout=10)
        await sup.wait_for(p.id, "^grandchild", timeout=10)
        print(sup.read(p.id).text, flush=True)
        print("up", flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
    """
)


def test_a_pty_tree_goes_when_its_host_is_killed() -> None:
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, textwrap.dedent(STUBBORN_TREE)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        assert host.stdout is not None
        text = ""
        for line in host.stdout:
            if line.strip() == "up":
                break
            text += line
        pids = _pids(text)
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
        host.kill()  # no close, no hang-up of ours: the watchdog must stop them
        host.wait()
        end = time.monotonic() + 10
        while any(alive(pid) for pid in pids) and time.monotonic() < end:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in pids)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        if host.stdout is not None:
            host.stdout.close()


#: Redraws a full screen in place (cursor home, no clear) as fast as it can.
IN_PLACE = """
    import sys
    n = 0
    while True:
        n += 1
        sys.stdout.write("\\x1b[H" + "".join(f"frame {n:>9} row {r:>2}\\r\\n" for r in range(23)))
"""


def test_the_screen_comes_back_while_a_program_redraws_faster_than_it_is_read(run) -> None:
    async def main() -> None:
        async with Supervisor(history=False) as sup:
            p = await sup.spawn(py(IN_PLACE), session="s", agent="a", pty=True)
            await sup.wait_for(p.id, "frame", timeout=10)
            for _ in range(3):  # each look ends, at what was written when it began
                shot = await asyncio.wait_for(sup.screen(p.id), 10)
                assert shot.lines[0].startswith("frame") and shot.lines[0].endswith("row  0")
            await sup.kill(p.id)

    run(main())


def test_modes_versions_and_a_shrink_that_keeps_the_top(run) -> None:
    code = """
        import sys
        print("first line")
        print("second line")
        sys.stdout.write("\\x1b[?1h\\x1b[?2004h")  # application cursor keys, bracketed paste
        sys.stdout.flush()
        import os; print("acs", os.environ.get("NCURSES_NO_UTF8_ACS"), flush=True)
        sys.stdin.read()
    """

    async def main() -> None:
        async with Supervisor(history=False) as sup:
            p = await sup.spawn(py(code), session="s", agent="a", pty=True)
            await sup.wait_for(p.id, "acs 1$", timeout=10)
            shot = await sup.screen(p.id)
            assert shot.app_cursor and shot.bracketed_paste
            assert (await sup.screen(p.id)).version == shot.version  # nothing new: the same
            # Fewer rows: those below the cursor go first, as in xterm.
            await sup.resize(p.id, 6, 80)
            small = await sup.screen(p.id)
            assert small.lines[:3] == ("first line", "second line", "acs 1")
            assert small.version != shot.version
            await sup.kill(p.id)

    run(main())
