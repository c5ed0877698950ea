"""Commands on a terminal through every surface but the library: ``ctl run --pty``,
``ctl resize``, ``ctl screen``, the MCP tools (``run`` with ``pty``, ``screen``,
``resize``, and ``read``/``excerpt`` of a full-screen program giving its
screen), and an attached ``RemoteSupervisor`` — each against a real ``serve``."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import pytest

from procwindow import NoTerminal
from procwindow.control.remote import RemoteSupervisor

from .conftest import Server

#: A curses program: a line at row 3, its size at the bottom; q leaves.
CURSES = (
    "import curses\n"
    "def main(win):\n"
    "    win.addstr(3, 4, 'FULL SCREEN HERE')\n"
    "    rows, cols = win.getmaxyx()\n"
    "    win.addstr(rows - 1, 0, f'{rows}x{cols}')\n"
    "    win.refresh()\n"
    "    while True:\n"
    "        key = win.getch()\n"
    "        if key == curses.KEY_RESIZE:\n"
    "            rows, cols = win.getmaxyx()\n"
    "            win.clear(); win.addstr(0, 0, f'now {rows}x{cols}'); win.refresh()\n"
    "        elif key == ord('q'):\n"
    "            return\n"
    "curses.wrapper(main)\n"
)


def _until(cond: Any, what: str, timeout: float = 10.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_ctl_runs_on_a_terminal_resizes_it_and_shows_its_screen(server: Server) -> None:
    run = ("run", "--session", "s", "--agent", "a", "--pty", "--rows", "12", "--cols", "50")
    proc = server.ctl(*run, "--", sys.executable, "-c", CURSES).stdout.strip()
    _until(lambda: "FULL SCREEN HERE" in server.ctl("screen", proc).stdout, "the screen")
    screen = server.ctl("screen", proc).stdout.splitlines()
    assert screen[3] == "    FULL SCREEN HERE"
    assert screen[-1] == "12x50"
    shot = json.loads(server.ctl("--json", "screen", proc).stdout)
    assert shot["alternate"] and (shot["rows"], shot["cols"]) == (12, 50)
    assert json.loads(server.ctl("--json", "show", proc).stdout)["pty"] == [12, 50]
    server.ctl("resize", proc, "20", "70")
    _until(lambda: "now 20x70" in server.ctl("screen", proc).stdout, "the redraw")
    server.ctl("write", "-n", proc, "q")
    assert server.ctl("wait", proc, "--timeout", "10").returncode == 0
    # Refused the same way as the library refuses them.
    bad = server.ctl(
        "run", "--session", "s", "--agent", "a", "--rows", "5", "--", "true", check=False
    )
    assert bad.returncode != 0 and bad.stderr.strip().endswith("rows needs pty")
    plain = server.ctl("run", "--session", "s", "--agent", "a", "--", "sleep", "30").stdout
    none = server.ctl("screen", plain.strip(), check=False)
    assert none.returncode != 0
    assert "it has no terminal (spawn it with pty=True)" in none.stderr
    assert len(none.stderr.strip().splitlines()) == 1


def test_an_attached_client_drives_a_terminal(server: Server) -> None:
    async def main() -> None:
        sup = await RemoteSupervisor.connect(server.path)
        try:
            p = await sup.spawn([sys.executable, "-i", "-q"], session="s", agent="a", pty=True)
            assert p.options.pty == (24, 80)
            await sup.write(p.id, "print(6*7)\n")
            deadline = time.monotonic() + 10
            while "42" not in (await sup.screen(p.id)).lines:
                assert time.monotonic() < deadline, (await sup.screen(p.id)).text
                await asyncio.sleep(0.05)
            shot = await sup.screen(p.id, styled=True)
            assert shot.styled is not None and len(shot.styled) == 24
            row = shot.lines.index("42")
            assert "".join(run.text for run in shot.styled[row]).rstrip() == "42"
            await sup.resize(p.id, 30, 100)
            assert (await sup.screen(p.id))[:2] == (30, 100)
            await sup.kill(p.id)
            with pytest.raises(NoTerminal):
                await sup.resize(p.id, 10, 10)
        finally:
            await sup.close()

    asyncio.run(main())


def test_mcp_tools_run_on_a_terminal_and_read_a_full_screen_program(server: Server) -> None:
    pytest.importorskip("mcp")
    from .test_mcp_tools import session, tool

    async def scenario() -> None:
        async with session(server) as c:
            started = await tool(
                c, "run", command=[sys.executable, "-c", CURSES], pty=True, rows=10, cols=40
            )
            proc = started["id"]
            deadline = time.monotonic() + 10
            while "FULL SCREEN HERE" not in (shot := await tool(c, "screen", id=proc))["text"]:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            assert shot["alternate"] and (shot["rows"], shot["cols"]) == (10, 40)
            assert shot["text"].splitlines()[-1] == "10x40"
            # A full-screen program's output is escape codes: read and excerpt give its screen.
            page = await tool(c, "read", id=proc)
            assert page["screen"] == shot["text"] == page["text"]
            assert "full-screen" in page["note"]
            ex = await tool(c, "excerpt", id=proc)
            assert ex["text"] == shot["text"]
            resized = await tool(c, "resize", id=proc, rows=16, cols=60)
            assert (resized["rows"], resized["cols"]) == (16, 60)
            while "now 16x60" not in (await tool(c, "screen", id=proc))["text"]:
                assert time.monotonic() < deadline + 10
                await asyncio.sleep(0.05)
            await tool(c, "write", id=proc, data="q")
            await tool(c, "wait", id=proc, timeout=10)
            # After it left the alternate screen, read is lines again.
            assert "screen" not in await tool(c, "read", id=proc)

    asyncio.run(scenario())


@pytest.mark.promise("Workspaces: pty")
def test_a_workspace_command_runs_on_a_terminal_of_its_size(server: Server, tmp_path) -> None:
    path = tmp_path / "ws.toml"
    path.write_text(
        'name = "tty"\n[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\n'
        "[[session.agent.command]]\n"
        'name = "probe"\n'
        f'argv = [{json.dumps(sys.executable)}, "-c",'
        ' "import os; print(os.isatty(0), os.isatty(1), os.get_terminal_size())"]\n'
        "pty = true\nrows = 33\ncols = 77\n"
    )
    up = json.loads(server.ctl("--json", "up", str(path)).stdout)
    proc = str(
        _until(
            lambda: json.loads(server.ctl("--json", "workspaces").stdout)[0]["commands"][0]["proc"],
            "its process",
        )
    )
    assert up["workspace"] == "tty"
    assert server.ctl("wait", proc, "--timeout", "10").returncode == 0
    assert server.ctl("out", proc).stdout == ("True True os.terminal_size(columns=77, lines=33)\n")
    assert json.loads(server.ctl("--json", "show", proc).stdout)["pty"] == [33, 77]
